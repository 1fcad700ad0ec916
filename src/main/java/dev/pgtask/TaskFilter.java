package dev.pgtask;

import java.time.Duration;

/**
 * Which tasks a bulk operation ({@link PgTask#retryTasks}, {@link PgTask#cancelTasks},
 * {@link PgTask#deleteTasks}) applies to: every task that matches all the filters set. Immutable;
 * start from {@link #matching()} and set at least one filter (an operation refuses a filter that
 * matches every task).
 *
 * <pre>{@code
 * BulkResult r = pgtask.retryTasks(TaskFilter.matching().withKind("mail.send")
 *     .withState(TaskState.DISCARDED).withSince(Duration.ofHours(1)), false);
 * }</pre>
 *
 * @param kind only tasks of this kind, or null
 * @param queue only tasks of this queue, or null
 * @param state only tasks in this state (as {@code pgtask.tasks} names it), or null
 * @param tenant only tasks of this tenant, or null
 * @param errorLike only tasks whose last error matches this SQL {@code LIKE} pattern (e.g.
 *     {@code "%timeout%"}), or null
 * @param since only tasks whose last activity (when they finished, else when their last attempt
 *     started, else when they were enqueued) lies within this positive duration before now, on the
 *     database clock, or null
 */
public record TaskFilter(String kind, String queue, TaskState state, String tenant, String errorLike, Duration since) {

  /** Validates: {@code since}, when given, is positive. */
  public TaskFilter {
    if (since != null && (since.isNegative() || since.isZero())) {
      throw new IllegalArgumentException("TaskFilter.since must be positive: " + since);
    }
  }

  /** The filter with nothing set yet: set at least one with the {@code with} methods. */
  public static TaskFilter matching() {
    return new TaskFilter(null, null, null, null, null, null);
  }

  /** Whether no filter is set (an operation refuses it: it would match every task). */
  public boolean isEmpty() {
    return kind == null && queue == null && state == null && tenant == null && errorLike == null && since == null;
  }

  /** This filter, only tasks of {@code kind}. */
  public TaskFilter withKind(String kind) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }

  /** This filter, only tasks of {@code queue}. */
  public TaskFilter withQueue(String queue) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }

  /** This filter, only tasks in {@code state}. */
  public TaskFilter withState(TaskState state) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }

  /** This filter, only tasks of {@code tenant}. */
  public TaskFilter withTenant(String tenant) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }

  /** This filter, only tasks whose last error matches the SQL {@code LIKE} pattern {@code errorLike}. */
  public TaskFilter withErrorLike(String errorLike) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }

  /** This filter, only tasks active within {@code since} before now (positive). */
  public TaskFilter withSince(Duration since) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since);
  }
}
