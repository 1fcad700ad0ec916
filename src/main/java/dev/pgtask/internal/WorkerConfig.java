package dev.pgtask.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskMetrics;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/** Everything a worker runs with, validated and resolved by {@code PgTaskWorker.Builder.build()}. */
public record WorkerConfig(
    String workerId,
    DataSource dataSource,
    Callable<Connection> listenConnectionFactory,
    List<String> queues,
    Map<String, HandlerEntry<?>> handlers,
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
    Integer tenantLockNamespace,
    ObjectMapper objectMapper,
    PgTaskMetrics metrics,
    dev.pgtask.PgTaskTracing tracing) {

  /** This configuration with the lock namespace resolved (e.g. read from pgtask.settings). */
  public WorkerConfig withTenantLockNamespace(int namespace) {
    return new WorkerConfig(workerId, dataSource, listenConnectionFactory, queues, handlers, concurrency,
        batchSize, prefetch, commitBatchSize, commitBatchTime, pollInterval, taskTimeout, shutdownTimeout, leaseDuration, rescueInterval,
        tenantDeferDelay, retryBackoffBase, retryBackoffCap, listenerPingInterval, completedRetention,
        failedRetention, namespace, objectMapper, metrics, tracing);
  }

  /**
   * The server-side bounds of this worker's short transactions (see {@code TxBounds.ofBeat}), from
   * its maintenance beat.
   */
  public dev.pgtask.internal.sql.TxBounds transactionBounds() {
    return dev.pgtask.internal.sql.TxBounds.ofBeat(dev.pgtask.internal.maintenance.Maintenance.beatInterval(this));
  }

  /** The registered kinds, for the claim's kind filter. */
  public List<String> kinds() {
    return List.copyOf(handlers.keySet());
  }
}
