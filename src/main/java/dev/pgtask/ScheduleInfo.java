package dev.pgtask;

import java.time.Duration;
import java.time.Instant;

/**
 * A declared schedule as the view {@code pgtask.schedules} shows it.
 *
 * @param nextFireAt the next fire instant (null: it never fires again)
 * @param lastFireAt the fire instant of the last task it enqueued (null: none yet)
 * @param lastTaskId that task's id
 * @param lastTaskState that task's state as {@code pgtask.tasks} names it (null: none, or deleted by retention)
 * @param fired tasks it has enqueued
 * @param overlapped fires skipped because the previous task was unfinished
 * @param lastMissedAt the latest fire instant skipped as missed (null: none)
 * @param missedPending missed fires waiting for their queue to be resumed, to be caught up
 * @param queuePaused whether its queue is paused
 */
public record ScheduleInfo(String name, String cron, String kind, String queue, String tenant, String timeZone,
    boolean paused, Instant nextFireAt, Instant lastFireAt, Long lastTaskId, String lastTaskState, String payloadJson,
    int catchUp, boolean allowOverlap, Duration jitter, int priority, int maxAttempts, long fired, long overlapped,
    Instant lastMissedAt, int missedPending, boolean queuePaused) {
}
