package dev.pgtask;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A change to a queued task, for {@link PgTask#update(long, TaskUpdate)}: a new payload, run time
 * and/or priority. Immutable; each {@code withX} returns a copy. A field not given stays as it is;
 * there is no empty change (every way to make one sets a field), and no {@code null} stands for
 * "unchanged".
 *
 * <pre>{@code
 * pgtask.update(taskId, TaskUpdate.payload(new SendInvoice(42)).withRunAt(Instant.now().plusSeconds(60)));
 * pgtask.update(taskId, TaskUpdate.priority(-5));
 * }</pre>
 */
public final class TaskUpdate {

  private final Object payload;
  private final Instant runAt;
  private final Integer priority;

  private TaskUpdate(Object payload, Instant runAt, Integer priority) {
    this.payload = payload;
    this.runAt = runAt;
    this.priority = priority;
  }

  /**
   * A new payload (a record or other Jackson-serializable object, a {@code JsonNode} or a JSON object
   * string), checked by the enqueue rules.
   */
  public static TaskUpdate payload(Object payload) {
    return new TaskUpdate(Objects.requireNonNull(payload, "payload"), null, null);
  }

  /** A new run time: the task is due then. */
  public static TaskUpdate runAt(Instant runAt) {
    return new TaskUpdate(null, Objects.requireNonNull(runAt, "runAt"), null);
  }

  /** A new priority (lower runs first). */
  public static TaskUpdate priority(int priority) {
    return new TaskUpdate(null, null, priority);
  }

  /** This change, with a new payload too. */
  public TaskUpdate withPayload(Object payload) {
    return new TaskUpdate(Objects.requireNonNull(payload, "payload"), runAt, priority);
  }

  /** This change, with a new run time too. */
  public TaskUpdate withRunAt(Instant runAt) {
    return new TaskUpdate(payload, Objects.requireNonNull(runAt, "runAt"), priority);
  }

  /** This change, with a new priority too. */
  public TaskUpdate withPriority(int priority) {
    return new TaskUpdate(payload, runAt, priority);
  }

  /** The new payload, if this change sets one. */
  public Optional<Object> payload() {
    return Optional.ofNullable(payload);
  }

  /** The new run time, if this change sets one. */
  public Optional<Instant> runAt() {
    return Optional.ofNullable(runAt);
  }

  /** The new priority, if this change sets one. */
  public Optional<Integer> priority() {
    return Optional.ofNullable(priority);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TaskUpdate u && Objects.equals(payload, u.payload) && Objects.equals(runAt, u.runAt)
        && Objects.equals(priority, u.priority);
  }

  @Override
  public int hashCode() {
    return Objects.hash(payload, runAt, priority);
  }

  @Override
  public String toString() {
    return "TaskUpdate[" + (payload != null ? "payload " : "") + (runAt != null ? "runAt=" + runAt + " " : "")
        + (priority != null ? "priority=" + priority : "") + "]";
  }
}
