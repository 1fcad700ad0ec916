package dev.pgtask.ops;

import java.time.Instant;
import java.util.List;

/**
 * Everything an operator reads about one task ({@code pgtask.task_detail(id)}): its fields, its
 * payload, its recorded attempts with their full errors, and why it is or is not running.
 *
 * @param id the task's id
 * @param kind its kind
 * @param queue its queue
 * @param tenant its tenant, or null
 * @param state its state as operators name it ({@link TaskSummary#state()})
 * @param priority its priority (lower runs first)
 * @param attempt the attempts made so far
 * @param maxAttempts the attempts it may make
 * @param runAt when it is (or was) due
 * @param createdAt when it was enqueued
 * @param finishedAt when it finished, or null
 * @param worker the worker that holds it or last held it, or null
 * @param lastError the last entry of its error history (none for a completed task), or null
 * @param payload its payload, as JSON text
 * @param attempts its recorded attempts, oldest first ({@link TaskAttempt})
 * @param explanation why it is or is not running, in one sentence ({@code pgtask.explain_task})
 * @param json the whole of {@code pgtask.task_detail(id)} as JSON text: the fields above, the
 *     error history of the task's row ({@code errors}) and the explanation's fields
 */
public record TaskDetail(long id, String kind, String queue, String tenant, String state, int priority, int attempt,
    int maxAttempts, Instant runAt, Instant createdAt, Instant finishedAt, String worker, String lastError,
    String payload, List<TaskAttempt> attempts, String explanation, String json) {

  public TaskDetail {
    attempts = List.copyOf(attempts);
  }
}
