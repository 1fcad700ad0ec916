package dev.pgtask;

import java.time.Instant;

/**
 * A paused queue: no worker claims from it until it is resumed; tasks already running finish, and
 * enqueueing into it still works.
 *
 * @param queue the queue's name
 * @param pausedAt when it was paused (the database clock)
 * @param pausedBy the database role that paused it
 * @param due its tasks that are due now and would be claimed but for the pause
 * @param queued its unfinished tasks that are not running (due, scheduled, retrying or waiting)
 */
public record PausedQueue(String queue, Instant pausedAt, String pausedBy, long due, long queued) {}
