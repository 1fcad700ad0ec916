package dev.pgtask.testing;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.TaskState;
import java.time.Instant;

/** A stored task as {@link EnqueuedTasks} found it. */
public final class EnqueuedTask {

  private final long id;
  private final String kind;
  private final String queue;
  private final String tenant;
  private final TaskState state;
  private final JsonNode payload;
  private final int priority;
  private final int attempt;
  private final int maxAttempts;
  private final Instant runAt;
  private final Instant createdAt;
  private final String dedupeKey;
  private final String lastError;
  private final ObjectMapper mapper;

  EnqueuedTask(long id, String kind, String queue, String tenant, TaskState state, JsonNode payload, int priority,
      int attempt, int maxAttempts, Instant runAt, Instant createdAt, String dedupeKey, String lastError,
      ObjectMapper mapper) {
    this.id = id;
    this.kind = kind;
    this.queue = queue;
    this.tenant = tenant;
    this.state = state;
    this.payload = payload;
    this.priority = priority;
    this.attempt = attempt;
    this.maxAttempts = maxAttempts;
    this.runAt = runAt;
    this.createdAt = createdAt;
    this.dedupeKey = dedupeKey;
    this.lastError = lastError;
    this.mapper = mapper;
  }

  /** The task's id. */
  public long id() {
    return id;
  }

  /** The task's kind. */
  public String kind() {
    return kind;
  }

  /** The task's queue. */
  public String queue() {
    return queue;
  }

  /** The task's tenant, or {@code null}. */
  public String tenant() {
    return tenant;
  }

  /** The task's state as {@code pgtask.tasks} shows it (scheduled and waiting included). */
  public TaskState state() {
    return state;
  }

  /** The payload as stored. */
  public JsonNode payload() {
    return payload;
  }

  /**
   * The payload as {@code type}, read with the mapper of the {@link EnqueuedTasks} that found it
   * (the worker's for {@link PgTaskTester#enqueued()}).
   *
   * @throws IllegalArgumentException when the payload does not fit {@code type}
   */
  public <T> T payload(Class<T> type) {
    try {
      return mapper.treeToValue(payload, type);
    } catch (JsonProcessingException | IllegalArgumentException e) {
      throw new IllegalArgumentException("the payload of task " + id + " (" + kind + ") does not fit "
          + type.getName() + ": " + e.getMessage(), e);
    }
  }

  /** The task's priority (lower runs first). */
  public int priority() {
    return priority;
  }

  /** Attempts made so far. */
  public int attempt() {
    return attempt;
  }

  /** The task's maximum number of attempts. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** When the task is due (database clock). */
  public Instant runAt() {
    return runAt;
  }

  /** When the task was enqueued (database clock: the enqueuing transaction's start). */
  public Instant createdAt() {
    return createdAt;
  }

  /** The task's dedupe key, or {@code null}. */
  public String dedupeKey() {
    return dedupeKey;
  }

  /** The last attempt's error, or {@code null} (always null once completed). */
  public String lastError() {
    return lastError;
  }

  @Override
  public String toString() {
    return "#" + id + " " + kind + " queue=" + queue + (tenant != null ? " tenant=" + tenant : "") + " "
        + state.sqlName() + " run_at=" + runAt + " payload=" + payload;
  }
}
