package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;

/**
 * A running task and the backend executing it: a row of {@code pgtask.running}.
 *
 * @param taskId the task's id
 * @param kind its kind
 * @param queue its queue
 * @param tenant its tenant, or null
 * @param worker the worker that claimed it
 * @param backendPid the backend executing its transaction, or null (plain mode, waiting in its
 *     worker, or its worker is gone)
 * @param startedAt when its current attempt was claimed
 * @param runningFor how long since then
 * @param holdsTenantLock whether its transaction holds its tenant's lock (null without a tenant)
 * @param cancelRequestedAt when a cancellation was requested for this attempt, or null
 * @param claimedAhead no backend executes it and a live worker holds its claim: it waits in that
 *     worker for an executor; no backend and false means its worker is gone (the rescue pass takes it
 *     back after its lease)
 */
public record RunningTask(long taskId, String kind, String queue, String tenant, String worker, Integer backendPid,
    Instant startedAt, Duration runningFor, Boolean holdsTenantLock, Instant cancelRequestedAt,
    boolean claimedAhead) {}
