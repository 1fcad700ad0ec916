package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A worker seen in the last minute: a row of {@code pgtask.workers}.
 *
 * @param id the worker's id
 * @param host the host it runs on
 * @param pid its process id
 * @param version the pgtask version it runs
 * @param queues the queues it serves
 * @param kinds the kinds it has handlers for
 * @param concurrency how many tasks it runs at once
 * @param startedAt when it started
 * @param lastSeen its last heartbeat
 * @param lastSeenAgo how long ago that was
 * @param listening whether its LISTEN session is connected to this database (false: it polls, its
 *     listener lost or reconnecting), or null when its id is too long for the session to name it
 */
public record LiveWorker(String id, String host, long pid, String version, List<String> queues, List<String> kinds,
    int concurrency, Instant startedAt, Instant lastSeen, Duration lastSeenAgo, Boolean listening) {}
