package dev.pgtask.internal.sql;

import dev.pgtask.internal.sql.gen.Routines;
import java.time.Instant;
import org.jooq.DSLContext;
import org.jooq.JSONB;

/**
 * Operations on one task through the database functions of V2 (pgtask.cancel_task, ...). Each
 * takes the task's row lock with NOWAIT: a running task is never waited on. And the bulk operations
 * (pgtask.retry_tasks, ...), which skip the rows another transaction holds.
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

  /** The filters of a bulk operation, as {@code pgtask.retry_tasks} and its siblings take them. */
  public record Filter(String kind, String queue, String state, String tenant, String errorLike,
      java.time.Duration since, Instant activeFrom, Instant activeUntil) {
    org.jooq.types.YearToSecond interval() {
      return since == null ? null : org.jooq.types.YearToSecond.valueOf(since);
    }
  }

  /** One state's counts of a bulk operation. */
  public record Counted(String state, long changed, long skipped) {}

  /** {@code pgtask.retry_tasks}. Locks: the matched rows it retries (SKIP LOCKED). */
  public static java.util.List<Counted> retryTasks(DSLContext dsl, Filter f, boolean dryRun) {
    var t = dev.pgtask.internal.sql.gen.Tables.RETRY_TASKS(f.kind(), f.queue(), f.state(), f.tenant(), f.errorLike(),
        f.interval(), dryRun, f.activeFrom(), f.activeUntil());
    return dsl.selectFrom(t).fetch(r -> new Counted(r.getTaskState(), r.getChanged(), r.getSkipped()));
  }

  /**
   * {@code pgtask.cancel_tasks}. Locks: the matched queued and unlocked running rows it cancels
   * (SKIP LOCKED), the cancel requests it writes.
   */
  public static java.util.List<Counted> cancelTasks(DSLContext dsl, Filter f, boolean dryRun) {
    var t = dev.pgtask.internal.sql.gen.Tables.CANCEL_TASKS(f.kind(), f.queue(), f.state(), f.tenant(), f.errorLike(),
        f.interval(), dryRun, f.activeFrom(), f.activeUntil());
    return dsl.selectFrom(t).fetch(r -> new Counted(r.getTaskState(), r.getChanged(), r.getSkipped()));
  }

  /** {@code pgtask.delete_tasks}. Locks: the matched rows it deletes (SKIP LOCKED). */
  public static java.util.List<Counted> deleteTasks(DSLContext dsl, Filter f, boolean dryRun) {
    var t = dev.pgtask.internal.sql.gen.Tables.DELETE_TASKS(f.kind(), f.queue(), f.state(), f.tenant(), f.errorLike(),
        f.interval(), dryRun, f.activeFrom(), f.activeUntil());
    return dsl.selectFrom(t).fetch(r -> new Counted(r.getTaskState(), r.getChanged(), r.getSkipped()));
  }
}
