package dev.pgtask;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Why a task is or is not running, as the database sees it now ({@code pgtask.explain_task_json}).
 *
 * @param taskId the task asked about
 * @param reason one of {@code not_found}, {@code finished}, {@code running}, {@code worker_lost},
 *     {@code waiting_for_tenant}, {@code tenant_lock_held}, {@code retrying}, {@code scheduled},
 *     {@code queue_paused}, {@code unserved_queue}, {@code unhandled_kind}, {@code ready} (see
 *     docs/operations.md)
 * @param sentence the explanation in one sentence, e.g. "task 12 is running on worker w1 (backend
 *     pid 4711) for 3.2 s (attempt 1 of 25)"
 * @param details every field the database returned: the reason, the sentence, the task's kind, queue,
 *     tenant, state, attempt, and the fields the reason names (worker, backend_pid, head, ...)
 */
public record TaskExplanation(long taskId, String reason, String sentence, JsonNode details) {

  /** True when no such task exists (never enqueued, or deleted). */
  public boolean notFound() {
    return "not_found".equals(reason);
  }
}
