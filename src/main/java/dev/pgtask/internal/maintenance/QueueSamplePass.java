package dev.pgtask.internal.maintenance;

import dev.pgtask.PgTaskMetrics;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.MaintenanceQueries.QueueSample;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * Samples this worker's queues (ready tasks, and the age of the oldest) into the metrics, every
 * {@link Config#interval}, on every worker whose metrics are not the no-op ones; no lock, no lease.
 */
public final class QueueSamplePass implements MaintenancePass<Map<String, QueueSample>>,
    PassStatements<Map<String, QueueSample>> {

  /** {@code interval}: the period; {@code queues}: the queues sampled. */
  public record Config(Duration interval, List<String> queues) {
    /** Every 15 s. */
    public static final Duration INTERVAL = Duration.ofSeconds(15);

    /** Validates: a positive interval, queues given. */
    public Config {
      if (interval == null || interval.isNegative() || interval.isZero() || queues == null) {
        throw new IllegalArgumentException("queue sample pass: " + interval + ", " + queues);
      }
      queues = List.copyOf(queues);
    }

    /** A worker's sampling of its queues. */
    public static Config of(WorkerConfig config) {
      return new Config(INTERVAL, config.queues());
    }
  }

  private final Config config;
  private final PassTransaction tx;
  private final PgTaskMetrics metrics;

  QueueSamplePass(Config config, PassTransaction tx, PgTaskMetrics metrics) {
    this.config = config;
    this.tx = tx;
    this.metrics = metrics;
  }

  @Override
  public String name() {
    return "queue sample";
  }

  @Override
  public Duration interval() {
    return config.interval();
  }

  @Override
  public Map<String, QueueSample> run(DSLContext t) {
    return MaintenanceQueries.sampleQueues(t, config.queues());
  }

  /** Every queue of the worker is reported, a queue with no ready task as 0 and no lag. */
  @Override
  public void committed(Map<String, QueueSample> samples, Executor onPool) {
    for (String q : config.queues()) {
      QueueSample s = samples.get(q);
      metrics.queueSampled(q, s == null ? 0 : s.available(), s == null ? Duration.ZERO : s.lag());
    }
  }

  /** Returns the samples (queues with no ready task are absent). */
  @Override
  public Map<String, QueueSample> runOnce() {
    return tx.onPool(PassTransaction.Fence.ANY, this);
  }
}
