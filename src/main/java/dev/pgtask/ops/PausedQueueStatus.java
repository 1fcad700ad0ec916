package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;

/**
 * A paused queue, with or without tasks: a row of {@code pgtask.paused_queues}.
 *
 * @param queue the queue's name
 * @param pausedAt when it was paused
 * @param pausedBy the database role that paused it
 * @param pausedFor how long it has been paused
 * @param due its tasks that are due and held back by the pause
 * @param queued its tasks waiting to run (due or not)
 */
public record PausedQueueStatus(String queue, Instant pausedAt, String pausedBy, Duration pausedFor, long due,
    long queued) {}
