package dev.pgtask.internal.sql;

import dev.pgtask.internal.sql.gen.Routines;
import java.time.Instant;
import org.jooq.DSLContext;
import org.jooq.JSONB;

/**
 * Operations on one task through the database functions of V2 (pgtask.cancel_task, ...). Each
 * takes the task's row lock with NOWAIT: a running task is never waited on.
 */
public final class OperationQueries {

  private OperationQueries() {}

  /** Cancels; returns "cancelled" or "cancel_requested". Locks: the task row (NOWAIT). */
  public static String cancelTask(DSLContext dsl, long id) {
    return Routines.cancelTask(dsl.configuration(), id);
  }

  /** Makes a failed task available now. Locks: the task row (NOWAIT). */
  public static void retryTask(DSLContext dsl, long id) {
    Routines.retryTask(dsl.configuration(), id);
  }

  /** Deletes a task that is not running. Locks: the task row (NOWAIT). */
  public static void deleteTask(DSLContext dsl, long id) {
    Routines.deleteTask(dsl.configuration(), id);
  }

  /** Changes a queued task; null leaves a field unchanged. Locks: the task row (NOWAIT). */
  public static void updateTask(DSLContext dsl, long id, String payloadJson, Instant runAt, Integer priority) {
    Routines.updateTask(dsl.configuration(), id, payloadJson == null ? null : JSONB.valueOf(payloadJson),
        runAt, priority);
  }
}
