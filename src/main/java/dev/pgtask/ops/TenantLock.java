package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A tenant lock held right now: a row of {@code pgtask.tenant_locks}.
 *
 * @param tenant the tenant's name
 * @param holderPid the backend pid of the transaction holding it
 * @param applicationName that backend's application_name ({@code pgtask task <id> <worker>} for a
 *     pgtask task), or null
 * @param xactStart when the holding transaction started, or null
 * @param heldFor how long it has been held, or null
 * @param waitingPids the backends waiting for the same lock (pgtask's workers never wait for one:
 *     only other sessions' {@code pg_advisory_xact_lock} calls show here)
 */
public record TenantLock(String tenant, int holderPid, String applicationName, Instant xactStart, Duration heldFor,
    List<Integer> waitingPids) {}
