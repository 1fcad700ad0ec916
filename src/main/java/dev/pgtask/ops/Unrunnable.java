package dev.pgtask.ops;

import java.time.Duration;

/**
 * Due tasks that no live worker can run, for one queue, kind and reason: a row of
 * {@code pgtask.unrunnable}.
 *
 * @param queue the tasks' queue
 * @param kind the tasks' kind
 * @param reason why no live worker runs them: {@code paused_queue} (the queue is paused),
 *     {@code unserved_queue} (no live worker serves the queue) or {@code unhandled_kind} (the
 *     queue's live workers have no handler for the kind)
 * @param tasks how many due tasks (each the head of its tenant, or without a tenant)
 * @param oldestDueFor how long the oldest of them has been due
 * @param tenants the tenants whose heads they are
 * @param waitingBehind how many of those tenants' tasks wait behind them
 */
public record Unrunnable(String queue, String kind, String reason, long tasks, Duration oldestDueFor, long tenants,
    long waitingBehind) {}
