package dev.pgtask.internal.sql;

import dev.pgtask.internal.sql.gen.Routines;
import org.jooq.DSLContext;

/**
 * Queue control through the database functions of {@code R__05b_queue_control.sql}: pausing and
 * resuming a queue (its views, explain and tenant load are read by {@link OperatorViews}).
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
}
