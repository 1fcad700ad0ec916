package dev.pgtask;

import java.time.Duration;
import java.util.List;

/**
 * What a worker runs with, as resolved by {@link PgTaskWorker.Builder#build()}: an immutable view
 * for logs, health checks and tests. Each value is the builder's, or its default when it was not
 * set (see the {@code DEFAULT_*} constants of {@link PgTaskWorker}).
 *
 * @param workerId this worker's id, as recorded in the tasks it claims and in {@code application_name}
 * @param queues the queues it claims from
 * @param kinds the kinds it has handlers for (the only kinds it claims)
 * @param concurrency tasks executed at once
 * @param batchSize most tasks claimed by one statement
 * @param prefetch claimed tasks that may wait locally for a free executor ({@link PgTaskWorker#PREFETCH_AUTO}: adaptive)
 * @param commitBatchSize most tasks committed together (1: one transaction per task)
 * @param commitBatchTime longest time a transaction carrying several tasks stays open
 * @param pollInterval polling interval when no notification arrives
 * @param taskTimeout the default task timeout (a kind's {@link HandlerOptions#withTimeout} overrides it)
 * @param shutdownTimeout how long running tasks get to finish on {@link PgTaskWorker#close()}
 * @param leaseDuration the claim lease
 * @param rescueInterval interval of the maintenance passes
 * @param tenantDeferDelay delay before a task whose tenant lock was busy is tried again
 * @param retryBackoffBase first retry delay (doubles per attempt)
 * @param retryBackoffCap longest retry delay
 * @param listenerPingInterval health-check interval of the LISTEN connection
 * @param completedRetention how long completed tasks stay in the table
 * @param failedRetention how long cancelled and discarded tasks stay in the table
 * @param tenantLockNamespace the first key of the tenant locks, or {@code null} until the worker
 *     has started and read it from {@code pgtask.settings} (when none was configured)
 */
public record WorkerSettings(
    String workerId,
    List<String> queues,
    List<String> kinds,
    int concurrency,
    int batchSize,
    int prefetch,
    int commitBatchSize,
    Duration commitBatchTime,
    Duration pollInterval,
    Duration taskTimeout,
    Duration shutdownTimeout,
    Duration leaseDuration,
    Duration rescueInterval,
    Duration tenantDeferDelay,
    Duration retryBackoffBase,
    Duration retryBackoffCap,
    Duration listenerPingInterval,
    Duration completedRetention,
    Duration failedRetention,
    Integer tenantLockNamespace) {

  /** Copies the lists: a settings view never changes. */
  public WorkerSettings {
    queues = List.copyOf(queues);
    kinds = List.copyOf(kinds);
  }
}
