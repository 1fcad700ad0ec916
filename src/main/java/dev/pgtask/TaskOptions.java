package dev.pgtask;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * How and when a task runs: queue, tenant, run time, priority, attempts, dedupe key and debounce.
 * Immutable; each {@code withX} returns a copy.
 *
 * <pre>{@code
 * TaskOptions.defaults().withQueue("mail").withTenant("acme").withDelay(Duration.ofMinutes(5))
 * }</pre>
 *
 * <p>Validation happens in the database at enqueue (one rule set for Java and SQL callers) and
 * fails with {@link InvalidTaskException}.
 */
public final class TaskOptions {

  /** The queue a task goes to unless told otherwise. */
  public static final String DEFAULT_QUEUE = "default";

  /** The priority of a task unless told otherwise; lower runs first. */
  public static final int DEFAULT_PRIORITY = 0;

  /** Attempts before a failing task is discarded, unless told otherwise. */
  public static final int DEFAULT_MAX_ATTEMPTS = 25;

  private static final TaskOptions DEFAULTS =
      new TaskOptions(DEFAULT_QUEUE, null, null, null, DEFAULT_PRIORITY, DEFAULT_MAX_ATTEMPTS, null, null);

  private final String queue;
  private final String tenant;
  private final Instant runAt;
  private final Duration delay;
  private final int priority;
  private final int maxAttempts;
  private final String dedupeKey;
  private final Duration debounce;

  private TaskOptions(String queue, String tenant, Instant runAt, Duration delay, int priority,
      int maxAttempts, String dedupeKey, Duration debounce) {
    this.queue = queue;
    this.tenant = tenant;
    this.runAt = runAt;
    this.delay = delay;
    this.priority = priority;
    this.maxAttempts = maxAttempts;
    this.dedupeKey = dedupeKey;
    this.debounce = debounce;
  }

  /** Queue {@value #DEFAULT_QUEUE}, no tenant, run now, priority 0, 25 attempts, no dedupe key, no debounce. */
  public static TaskOptions defaults() {
    return DEFAULTS;
  }

  /** The queue: letters, digits and {@code _ . : -}, 1 to 128 characters. */
  public TaskOptions withQueue(String queue) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  /**
   * The tenant (any string of 1 to 255 characters): tasks of one tenant never run at the same time
   * anywhere in the cluster. {@code null} for none.
   */
  public TaskOptions withTenant(String tenant) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  /** Runs the task no earlier than {@code runAt}. Clears any delay and any debounce. */
  public TaskOptions withRunAt(Instant runAt) {
    return new TaskOptions(queue, tenant, runAt, null, priority, maxAttempts, dedupeKey, null);
  }

  /**
   * Runs the task no earlier than {@code delay} after the enqueue, measured by the database clock.
   * Clears any run-at instant and any debounce.
   */
  public TaskOptions withDelay(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay must not be negative: " + delay);
    }
    return new TaskOptions(queue, tenant, null, delay, priority, maxAttempts, dedupeKey, null);
  }

  /** The priority; lower runs first. */
  public TaskOptions withPriority(int priority) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  /** Attempts before the task is discarded; at least 1. */
  public TaskOptions withMaxAttempts(int maxAttempts) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  /**
   * While an unfinished task (scheduled, available, running or retryable) holds this key, enqueueing
   * another task with the same key returns the existing task's id instead. The key is global: it is
   * not scoped by kind or queue, so prefix it yourself if needed.
   */
  public TaskOptions withDedupeKey(String dedupeKey) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  /**
   * Debounces the task on its dedupe key: while a task enqueued with this key and a debounce has not
   * started (it is queued and was never claimed), enqueueing again replaces that task's payload
   * (the last one wins), moves its start to {@code debounce} after this enqueue (database clock)
   * and returns its id. A task that has started is never rewritten: an enqueue while it runs, or
   * while its retry waits, creates the next pending task. The key is a debounce key, a key space
   * apart from plain dedupe keys; the pending task's kind, queue and tenant must be this task's.
   * Requires {@link #withDedupeKey}; {@code debounce} above zero and at most one day; refused at
   * enqueue otherwise ({@link InvalidTaskException} {@code task_debounce}), and in a batch
   * ({@link PgTask#enqueueAll}). Clears any run-at instant and any delay; {@code null} for none.
   */
  public TaskOptions withDebounce(Duration debounce) {
    return new TaskOptions(queue, tenant, null, null, priority, maxAttempts, dedupeKey, debounce);
  }

  public String queue() {
    return queue;
  }

  /** The tenant, or {@code null}. */
  public String tenant() {
    return tenant;
  }

  /** The run-at instant, or {@code null} (now, or after {@link #delay()}). */
  public Instant runAt() {
    return runAt;
  }

  /** The delay after enqueue, or {@code null}. */
  public Duration delay() {
    return delay;
  }

  public int priority() {
    return priority;
  }

  public int maxAttempts() {
    return maxAttempts;
  }

  /** The dedupe key, or {@code null}. */
  public String dedupeKey() {
    return dedupeKey;
  }

  /** The debounce, or {@code null}. */
  public Duration debounce() {
    return debounce;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TaskOptions other
        && priority == other.priority
        && maxAttempts == other.maxAttempts
        && Objects.equals(queue, other.queue)
        && Objects.equals(tenant, other.tenant)
        && Objects.equals(runAt, other.runAt)
        && Objects.equals(delay, other.delay)
        && Objects.equals(dedupeKey, other.dedupeKey)
        && Objects.equals(debounce, other.debounce);
  }

  @Override
  public int hashCode() {
    return Objects.hash(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce);
  }

  @Override
  public String toString() {
    return "TaskOptions[queue=" + queue + ", tenant=" + tenant + ", runAt=" + runAt + ", delay="
        + delay + ", priority=" + priority + ", maxAttempts=" + maxAttempts + ", dedupeKey="
        + dedupeKey + ", debounce=" + debounce + "]";
  }
}
