package dev.pgtask.ops;

import java.time.Duration;

/**
 * One queue's counts and lag: a row of {@code pgtask.queue_summary}. States are counted as
 * {@code pgtask.tasks} names them: a task waiting behind its tenant's head counts as
 * {@code waitingForTenant} only.
 *
 * @param queue the queue's name
 * @param scheduled available tasks whose run_at is still in the future
 * @param available tasks due now and claimable
 * @param running claimed tasks: executing now, plus {@code claimedAhead}
 * @param retryable tasks that failed and wait for their retry (due or not)
 * @param completed completed tasks not yet removed by retention
 * @param cancelled cancelled tasks not yet removed by retention
 * @param discarded discarded tasks (attempts exhausted, or discarded by the handler)
 * @param waitingForTenant tasks waiting behind their tenant's head in this queue
 * @param lag how long the oldest claimable task has been due, or null when none is
 * @param paused whether the queue is paused (no worker claims from it)
 * @param claimedAhead running tasks that wait in a live worker for an executor, so
 *     {@code running - claimedAhead} execute now
 * @param pending tasks waiting for their parents to finish (dependencies)
 */
public record QueueSummary(String queue, long scheduled, long available, long running, long retryable,
    long completed, long cancelled, long discarded, long waitingForTenant, Duration lag, boolean paused,
    long claimedAhead, long pending) {

  /** The tasks executing now: {@code running - claimedAhead}. */
  public long executing() {
    return running - claimedAhead;
  }
}
