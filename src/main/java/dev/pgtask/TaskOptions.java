package dev.pgtask;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How and when a task runs: queue, tenant, run time, priority, attempts, dedupe key, debounce, and
 * the parent tasks it waits for.
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
      new TaskOptions(DEFAULT_QUEUE, null, null, null, DEFAULT_PRIORITY, DEFAULT_MAX_ATTEMPTS, null, null,
          List.of(), List.of(), ParentFailure.CANCEL);

  private final String queue;
  private final String tenant;
  private final Instant runAt;
  private final Duration delay;
  private final int priority;
  private final int maxAttempts;
  private final String dedupeKey;
  private final Duration debounce;
  private final List<Long> dependsOn;
  private final List<NewTask> dependsOnTasks;
  private final ParentFailure onParentFailure;

  private TaskOptions(String queue, String tenant, Instant runAt, Duration delay, int priority,
      int maxAttempts, String dedupeKey, Duration debounce, List<Long> dependsOn,
      List<NewTask> dependsOnTasks, ParentFailure onParentFailure) {
    this.queue = queue;
    this.tenant = tenant;
    this.runAt = runAt;
    this.delay = delay;
    this.priority = priority;
    this.maxAttempts = maxAttempts;
    this.dedupeKey = dedupeKey;
    this.debounce = debounce;
    this.dependsOn = dependsOn;
    this.dependsOnTasks = dependsOnTasks;
    this.onParentFailure = onParentFailure;
  }

  /** Queue {@value #DEFAULT_QUEUE}, no tenant, run now, priority 0, 25 attempts, no dedupe key, no debounce. */
  public static TaskOptions defaults() {
    return DEFAULTS;
  }

  /** The queue: letters, digits and {@code _ . : -}, 1 to 128 characters. */
  public TaskOptions withQueue(String queue) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /**
   * The tenant (any string of 1 to 255 characters): tasks of one tenant never run at the same time
   * anywhere in the cluster. {@code null} for none.
   */
  public TaskOptions withTenant(String tenant) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /** Runs the task no earlier than {@code runAt}. Clears any delay and any debounce. */
  public TaskOptions withRunAt(Instant runAt) {
    return new TaskOptions(queue, tenant, runAt, null, priority, maxAttempts, dedupeKey, null,
        dependsOn, dependsOnTasks, onParentFailure);
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
    return new TaskOptions(queue, tenant, null, delay, priority, maxAttempts, dedupeKey, null,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /** The priority; lower runs first. */
  public TaskOptions withPriority(int priority) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /** Attempts before the task is discarded; at least 1. */
  public TaskOptions withMaxAttempts(int maxAttempts) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /**
   * While an unfinished task (scheduled, available, running or retryable) holds this key, enqueueing
   * another task with the same key returns the existing task's id instead. The key is global: it is
   * not scoped by kind or queue, so prefix it yourself if needed.
   */
  public TaskOptions withDedupeKey(String dedupeKey) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
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
    return new TaskOptions(queue, tenant, null, null, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, onParentFailure);
  }

  /**
   * Makes the task wait for these tasks (its parents): it is stored {@code pending} and becomes
   * queued in the transaction that completes its last parent. A parent that does not exist is
   * refused at enqueue ({@link InvalidTaskException} {@code task_parent_missing}); an enqueue
   * naming a parent that a worker runs right now waits for that attempt's transaction to end. Not
   * with a dedupe key or debounce ({@code task_depends_on_dedupe}). Adds to the parents given before.
   */
  public TaskOptions withDependsOn(long... taskIds) {
    List<Long> ids = new ArrayList<>(dependsOn);
    for (long id : taskIds) {
      ids.add(id);
    }
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        List.copyOf(ids), dependsOnTasks, onParentFailure);
  }

  /**
   * Makes the task wait for earlier tasks of the same batch ({@link PgTask#enqueueAll}), named by
   * reference (the same {@link NewTask} objects, before their ids exist). A task that is not an
   * earlier element of the batch, or any reference in a single enqueue, is refused
   * ({@code task_parent_missing}). Adds to the parents given before.
   */
  public TaskOptions withDependsOn(NewTask... batchTasks) {
    List<NewTask> refs = new ArrayList<>(dependsOnTasks);
    for (NewTask t : batchTasks) {
      refs.add(Objects.requireNonNull(t, "batch task"));
    }
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, List.copyOf(refs), onParentFailure);
  }

  /** What a failed parent does to this task; {@link ParentFailure#CANCEL} unless told otherwise. */
  public TaskOptions withOnParentFailure(ParentFailure policy) {
    return new TaskOptions(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce,
        dependsOn, dependsOnTasks, Objects.requireNonNull(policy, "policy"));
  }

  /** The parents' task ids; empty for none. */
  public List<Long> dependsOn() {
    return dependsOn;
  }

  /** The parents named by reference in the same batch; empty for none. */
  public List<NewTask> dependsOnTasks() {
    return dependsOnTasks;
  }

  /** What a failed parent does to this task. */
  public ParentFailure onParentFailure() {
    return onParentFailure;
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
        && Objects.equals(debounce, other.debounce)
        && dependsOn.equals(other.dependsOn)
        && dependsOnTasks.equals(other.dependsOnTasks)
        && onParentFailure == other.onParentFailure;
  }

  @Override
  public int hashCode() {
    return Objects.hash(queue, tenant, runAt, delay, priority, maxAttempts, dedupeKey, debounce, dependsOn,
        dependsOnTasks.size(), onParentFailure);
  }

  @Override
  public String toString() {
    return "TaskOptions[queue=" + queue + ", tenant=" + tenant + ", runAt=" + runAt + ", delay="
        + delay + ", priority=" + priority + ", maxAttempts=" + maxAttempts + ", dedupeKey="
        + dedupeKey + ", debounce=" + debounce
        + (dependsOn.isEmpty() && dependsOnTasks.isEmpty() ? ""
           : ", dependsOn=" + dependsOn + ", dependsOnTasks=" + dependsOnTasks.size() + ", onParentFailure=" + onParentFailure)
        + "]";
  }
}
