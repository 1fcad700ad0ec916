package dev.pgtask.internal.maintenance;

import dev.pgtask.PgTaskMetrics;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.MaintenanceQueries;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rescue pass: running tasks whose lease expired and whose row no live transaction holds (a
 * slow-but-alive worker holds it, and is never robbed) become retryable at once, or discarded, or
 * cancelled when a cancellation was requested for the lost attempt; then the cancel requests that
 * no longer stand are deleted. The leader runs it in its rescue round ({@link RescueRound}) every
 * rescue interval; {@link #runOnce()} runs it at once on any worker, under the rescue lock.
 */
public final class RescuePass implements MaintenancePass<Integer>, PassStatements<Integer> {

  private static final Logger log = LoggerFactory.getLogger(RescuePass.class);

  /**
   * {@code interval}: how often the leader's rescue round runs (the worker's rescue interval);
   * {@code batch}: the most tasks one pass rescues.
   */
  public record Config(Duration interval, int batch) {
    /** The most tasks one pass rescues (the rest wait for the next round). */
    public static final int DEFAULT_BATCH = 1_000;

    /** Validates: a positive interval and batch. */
    public Config {
      if (interval == null || interval.isNegative() || interval.isZero() || batch < 1) {
        throw new IllegalArgumentException("rescue pass: interval and batch must be positive: " + interval + ", " + batch);
      }
    }

    /** A worker's rescue pass. */
    public static Config of(WorkerConfig config) {
      return new Config(config.rescueInterval(), DEFAULT_BATCH);
    }
  }

  private final Config config;
  private final PassTransaction tx;
  private final WorkerStats stats;
  private final PgTaskMetrics metrics;
  private final Runnable wakeProducer;

  RescuePass(Config config, PassTransaction tx, WorkerStats stats, PgTaskMetrics metrics, Runnable wakeProducer) {
    this.config = config;
    this.tx = tx;
    this.stats = stats;
    this.metrics = metrics;
    this.wakeProducer = wakeProducer;
  }

  Config config() {
    return config;
  }

  @Override
  public String name() {
    return "rescue";
  }

  @Override
  public Duration interval() {
    return config.interval();
  }

  @Override
  public PassLock lock() {
    return PassLock.RESCUE;
  }

  /** Rescues what it finds (up to a batch), then deletes the cancel requests that no longer stand. */
  @Override
  public Integer run(DSLContext t) {
    int rescued = MaintenanceQueries.rescueExpired(t, config.batch());
    MaintenanceQueries.pruneCancelRequests(t);
    return rescued;
  }

  /** Counts and logs the rescued tasks, and wakes the producer: they are claimable at once. */
  @Override
  public void committed(Integer rescued, Executor onPool) {
    if (rescued > 0) {
      stats.rescued.addAndGet(rescued);
      metrics.rescued(rescued);
      log.info("pgtask: rescued {} task(s) of lost workers", rescued);
      wakeProducer.run();
    }
  }

  /** Returns the tasks rescued (0 when another worker's rescue pass held the lock). */
  @Override
  public Integer runOnce() {
    return tx.countOnPool(this);
  }
}
