package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.PAUSED_QUEUES;
import static dev.pgtask.internal.sql.gen.Tables.TENANT_LOAD;

import dev.pgtask.internal.sql.gen.Routines;
import dev.pgtask.internal.sql.gen.tables.records.PausedQueuesRecord;
import dev.pgtask.internal.sql.gen.tables.records.TenantLoadRecord;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.Result;

/**
 * Queue control and diagnosis through the database functions and views of
 * {@code R__05b_queue_control.sql}: pausing and resuming a queue, explaining one task, and each
 * tenant's load.
 */
public final class QueueControlQueries {

  private QueueControlQueries() {}

  /** {@code pgtask.pause_queue}: "paused" or "already_paused". Locks: the queue's paused_queue row. */
  public static String pauseQueue(DSLContext dsl, String queue) {
    return Routines.pauseQueue(dsl.configuration(), queue);
  }

  /** {@code pgtask.resume_queue}: "resumed" (and the queue's workers woken) or "not_paused". Locks: that row. */
  public static String resumeQueue(DSLContext dsl, String queue) {
    return Routines.resumeQueue(dsl.configuration(), queue);
  }

  /** Every paused queue ({@code pgtask.paused_queues}), by name. Locks: none. */
  public static Result<PausedQueuesRecord> selectPausedQueues(DSLContext dsl) {
    return dsl.selectFrom(PAUSED_QUEUES).orderBy(PAUSED_QUEUES.QUEUE).fetch();
  }

  /** {@code pgtask.explain_task_json}: why the task is or is not running. Locks: none. */
  public static JSONB explainTask(DSLContext dsl, long id) {
    return Routines.explainTaskJson(dsl.configuration(), id);
  }

  /**
   * The first {@code limit} rows of {@code pgtask.tenant_load}, in its order (the tenants nearest to
   * or over a utilisation of 1 first). Locks: none.
   */
  public static Result<TenantLoadRecord> selectTenantLoad(DSLContext dsl, int limit) {
    return dsl.selectFrom(TENANT_LOAD).limit(limit).fetch();
  }
}
