package dev.pgtask.ops;

import java.time.Duration;

/**
 * One queue's unfinished tasks, lag and pause: a row of {@code pgtask.queue_depth()}, read from the
 * indexes of unfinished tasks only, so its cost grows with the backlog and never with the finished
 * tasks retention keeps ({@link QueueSummary} counts those too, reading the whole table). The
 * dashboard's overview reads this.
 *
 * @param queue the queue's name
 * @param scheduled available tasks whose run_at is still in the future
 * @param available tasks due now and claimable
 * @param running claimed tasks: executing now, plus {@code claimedAhead}
 * @param claimedAhead running tasks that wait in a live worker for an executor
 * @param retryable tasks that failed and wait for their retry (due or not)
 * @param waitingForTenant tasks waiting behind their tenant's head in this queue
 * @param pending tasks waiting for their parents to finish (dependencies)
 * @param lag how long the oldest claimable task has been due (zero when none is)
 * @param paused whether the queue is paused
 */
public record QueueDepth(String queue, long scheduled, long available, long running, long claimedAhead,
    long retryable, long waitingForTenant, long pending, Duration lag, boolean paused) {}
