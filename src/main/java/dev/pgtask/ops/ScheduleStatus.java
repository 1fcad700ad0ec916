package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;

/**
 * A schedule and how it has fired: a row of {@code pgtask.schedules}.
 *
 * @param name the schedule's name
 * @param cron its cron expression
 * @param kind the kind of the tasks it enqueues
 * @param queue their queue
 * @param tenant their tenant, or null
 * @param timeZone the time zone its cron expression is read in
 * @param paused whether the schedule itself is paused
 * @param nextFireAt when it fires next, or null
 * @param lastFireAt when it last fired, or null
 * @param lastTaskId the task it enqueued last, or null
 * @param lastTaskState that task's state as {@code pgtask.tasks} names it, or null
 * @param payload the payload of its tasks, as JSON text
 * @param catchUp how many fires missed while nothing fired it are made up
 * @param allowOverlap whether it fires while its last task has not finished
 * @param jitter the random delay added to each fire, or null
 * @param priority its tasks' priority
 * @param maxAttempts its tasks' attempts
 * @param fired how many times it fired
 * @param overlapped how many fires were skipped because its last task had not finished
 * @param lastMissedAt the last fire time it missed, or null
 * @param missedPending fires missed and not yet made up
 * @param queuePaused whether its tasks' queue is paused
 * @param createdAt when it was declared
 * @param updatedAt when it was last changed
 */
public record ScheduleStatus(String name, String cron, String kind, String queue, String tenant, String timeZone,
    boolean paused, Instant nextFireAt, Instant lastFireAt, Long lastTaskId, String lastTaskState, String payload,
    int catchUp, boolean allowOverlap, Duration jitter, int priority, int maxAttempts, long fired, long overlapped,
    Instant lastMissedAt, int missedPending, boolean queuePaused, Instant createdAt, Instant updatedAt) {}
