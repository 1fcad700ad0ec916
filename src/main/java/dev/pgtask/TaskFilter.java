package dev.pgtask;

import java.time.Duration;
import java.time.Instant;

/**
 * Which tasks a bulk operation ({@link PgTask#retryTasks}, {@link PgTask#cancelTasks},
 * {@link PgTask#deleteTasks}) or a page of tasks ({@link dev.pgtask.ops.PgTaskOperations#tasks})
 * applies to: every task that matches all the filters set. Immutable; start from {@link #matching()}
 * and set at least one filter (an operation refuses a filter that matches every task).
 *
 * <p>A task's <em>last activity</em>, which {@code since}, {@code from} and {@code until} filter on,
 * is when it finished, else when its last attempt started, else when it was enqueued.
 *
 * <pre>{@code
 * BulkResult r = pgtask.retryTasks(TaskFilter.matching().withKind("mail.send")
 *     .withState(TaskState.DISCARDED).withSince(Duration.ofHours(1)), false);
 * TaskFilter night = TaskFilter.matching().withKind("mail.send")
 *     .withFrom(Instant.parse("2026-12-04T01:00:00Z")).withUntil(Instant.parse("2026-12-04T05:00:00Z"));
 * }</pre>
 *
 * @param kind only tasks of this kind, or null
 * @param queue only tasks of this queue, or null
 * @param state only tasks in this state (as {@code pgtask.tasks} names it), or null
 * @param tenant only tasks of this tenant, or null
 * @param errorLike only tasks whose last error matches this SQL {@code LIKE} pattern (e.g.
 *     {@code "%timeout%"}), or null
 * @param since only tasks whose last activity lies within this positive duration before now, on the
 *     database clock, or null
 * @param from only tasks whose last activity is at or after this instant (inclusive), or null
 * @param until only tasks whose last activity is before this instant (exclusive), or null; when both
 *     are set, {@code from} must be before {@code until}
 */
public record TaskFilter(String kind, String queue, TaskState state, String tenant, String errorLike, Duration since,
    Instant from, Instant until) {

  /**
   * Validates: {@code since}, when given, is positive; {@code from}, when both ends are given, is
   * before {@code until}.
   *
   * @throws IllegalArgumentException naming the filter that is wrong
   */
  public TaskFilter {
    if (since != null && (since.isNegative() || since.isZero())) {
      throw new IllegalArgumentException("TaskFilter.since must be positive: " + since);
    }
    if (from != null && until != null && !from.isBefore(until)) {
      throw new IllegalArgumentException("TaskFilter.from must be before TaskFilter.until (from is inclusive, until "
          + "exclusive): from " + from + ", until " + until);
    }
  }

  /** The filter without a time range ({@code from} and {@code until} null), as before the range existed. */
  public TaskFilter(String kind, String queue, TaskState state, String tenant, String errorLike, Duration since) {
    this(kind, queue, state, tenant, errorLike, since, null, null);
  }

  /** The filter with nothing set yet: set at least one with the {@code with} methods. */
  public static TaskFilter matching() {
    return new TaskFilter(null, null, null, null, null, null, null, null);
  }

  /** Whether no filter is set (an operation refuses it: it would match every task). */
  public boolean isEmpty() {
    return kind == null && queue == null && state == null && tenant == null && errorLike == null && since == null
        && from == null && until == null;
  }

  /** This filter, only tasks of {@code kind}. */
  public TaskFilter withKind(String kind) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /** This filter, only tasks of {@code queue}. */
  public TaskFilter withQueue(String queue) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /** This filter, only tasks in {@code state}. */
  public TaskFilter withState(TaskState state) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /** This filter, only tasks of {@code tenant}. */
  public TaskFilter withTenant(String tenant) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /** This filter, only tasks whose last error matches the SQL {@code LIKE} pattern {@code errorLike}. */
  public TaskFilter withErrorLike(String errorLike) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /** This filter, only tasks active within {@code since} before now (positive). */
  public TaskFilter withSince(Duration since) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /**
   * This filter, only tasks whose last activity is at or after {@code from} (inclusive).
   *
   * @throws IllegalArgumentException {@code until} is set and {@code from} is not before it
   */
  public TaskFilter withFrom(Instant from) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }

  /**
   * This filter, only tasks whose last activity is before {@code until} (exclusive).
   *
   * @throws IllegalArgumentException {@code from} is set and is not before {@code until}
   */
  public TaskFilter withUntil(Instant until) {
    return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
  }
}
