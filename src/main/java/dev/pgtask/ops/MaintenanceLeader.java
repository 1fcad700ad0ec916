package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;

/**
 * The maintenance lease: the row of {@code pgtask.maintenance_leader}, whose holder runs the
 * cluster's maintenance passes.
 *
 * @param worker the worker that holds (or last held) the lease
 * @param host its host
 * @param pid its process id
 * @param term how many times the lease changed hands
 * @param acquiredAt when this holder took it
 * @param renewedAt when it last renewed it
 * @param leaseUntil when the lease runs out unless renewed
 * @param live whether the lease has not run out
 * @param renewedAgo how long since the last renewal
 */
public record MaintenanceLeader(String worker, String host, long pid, long term, Instant acquiredAt, Instant renewedAt,
    Instant leaseUntil, boolean live, Duration renewedAgo) {}
