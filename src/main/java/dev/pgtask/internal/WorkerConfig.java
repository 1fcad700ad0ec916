package dev.pgtask.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskMetrics;
import dev.pgtask.PgTaskTracing;
import dev.pgtask.WorkerSettings;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/**
 * Everything a worker runs with, validated and resolved by {@code PgTaskWorker.Builder.build()}:
 * its {@link WorkerSettings} (the public record is the one place the settings' values live; the
 * accessors below read it) and the parts that are objects rather than values (data source, LISTEN
 * connection factory, handlers, mapper, metrics, tracing).
 */
public record WorkerConfig(
    WorkerSettings settings,
    DataSource dataSource,
    Callable<Connection> listenConnectionFactory,
    Map<String, HandlerEntry<?>> handlers,
    ObjectMapper objectMapper,
    PgTaskMetrics metrics,
    PgTaskTracing tracing) {

  /** This configuration with the lock namespace resolved (e.g. read from pgtask.settings). */
  public WorkerConfig withTenantLockNamespace(int namespace) {
    WorkerSettings s = settings;
    return new WorkerConfig(new WorkerSettings(s.workerId(), s.queues(), s.kinds(), s.concurrency(), s.batchSize(),
        s.prefetch(), s.commitBatchSize(), s.commitBatchTime(), s.pollInterval(), s.taskTimeout(), s.shutdownTimeout(),
        s.leaseDuration(), s.rescueInterval(), s.tenantDeferDelay(), s.retryBackoffBase(), s.retryBackoffCap(),
        s.listenerPingInterval(), s.completedRetention(), s.failedRetention(), namespace),
        dataSource, listenConnectionFactory, handlers, objectMapper, metrics, tracing);
  }

  /**
   * The server-side bounds of this worker's short transactions (see {@code TxBounds.ofBeat}), from
   * its maintenance beat.
   */
  public dev.pgtask.internal.sql.TxBounds transactionBounds() {
    return dev.pgtask.internal.sql.TxBounds.ofBeat(dev.pgtask.internal.maintenance.Maintenance.beatInterval(this));
  }

  // ---- the settings, read from the one record that holds them ----

  public String workerId() {
    return settings.workerId();
  }

  public List<String> queues() {
    return settings.queues();
  }

  /** The registered kinds, for the claim's kind filter. */
  public List<String> kinds() {
    return settings.kinds();
  }

  public int concurrency() {
    return settings.concurrency();
  }

  public int batchSize() {
    return settings.batchSize();
  }

  public int prefetch() {
    return settings.prefetch();
  }

  public int commitBatchSize() {
    return settings.commitBatchSize();
  }

  public Duration commitBatchTime() {
    return settings.commitBatchTime();
  }

  public Duration pollInterval() {
    return settings.pollInterval();
  }

  public Duration taskTimeout() {
    return settings.taskTimeout();
  }

  public Duration shutdownTimeout() {
    return settings.shutdownTimeout();
  }

  public Duration leaseDuration() {
    return settings.leaseDuration();
  }

  public Duration rescueInterval() {
    return settings.rescueInterval();
  }

  public Duration tenantDeferDelay() {
    return settings.tenantDeferDelay();
  }

  public Duration retryBackoffBase() {
    return settings.retryBackoffBase();
  }

  public Duration retryBackoffCap() {
    return settings.retryBackoffCap();
  }

  public Duration listenerPingInterval() {
    return settings.listenerPingInterval();
  }

  public Duration completedRetention() {
    return settings.completedRetention();
  }

  public Duration failedRetention() {
    return settings.failedRetention();
  }

  /** The first key of the tenant locks, or {@code null} until resolved at start. */
  public Integer tenantLockNamespace() {
    return settings.tenantLockNamespace();
  }
}
