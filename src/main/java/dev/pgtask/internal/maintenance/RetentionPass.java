package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.MaintenanceQueries.Unhandled;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * Retention: finished tasks past their retention are deleted in batches of {@link Config#batch},
 * each batch its own short transaction under the retention lock, until a batch comes back short (or
 * {@link Config#maxBatches} batches). The first batch's transaction also deletes the stale worker
 * rows ({@link StaleWorkerPass}) and, on the leader when due, reads the unhandled kinds
 * ({@link UnhandledKindsPass}). The leader runs it every {@link Config#interval}, each batch's
 * transaction renewing the lease first (or it stops); {@link #runOnce()} runs it on any worker.
 */
public final class RetentionPass implements MaintenancePass<Integer>, PassStatements<Integer> {

  /**
   * {@code completed} and {@code failed}: how long completed, and cancelled or discarded, tasks are
   * kept; {@code interval}: the leader's period; {@code batch}: the rows one transaction deletes at
   * most; {@code maxBatches}: the batches of one pass at most.
   */
  public record Config(Duration completed, Duration failed, Duration interval, int batch, int maxBatches) {
    /** The longest period. */
    public static final Duration MAX_INTERVAL = Duration.ofSeconds(30);
    /** The shortest period. */
    public static final Duration MIN_INTERVAL = Duration.ofSeconds(1);
    /** Rows per batch. */
    public static final int BATCH = 5_000;
    /** Batches per pass at most. */
    public static final int MAX_BATCHES = 100;

    /** Validates: positive retentions, interval, batch and batches. */
    public Config {
      for (Duration d : new Duration[] {completed, failed, interval}) {
        if (d == null || d.isNegative() || d.isZero()) {
          throw new IllegalArgumentException("retention pass: positive durations needed: " + completed + ", "
              + failed + ", " + interval);
        }
      }
      if (batch < 1 || maxBatches < 1) {
        throw new IllegalArgumentException("retention pass: batch and batches must be positive: " + batch + ", " + maxBatches);
      }
    }

    /** A worker's retention pass. */
    public static Config of(WorkerConfig config) {
      return new Config(config.completedRetention(), config.failedRetention(), interval(config), BATCH, MAX_BATCHES);
    }

    /**
     * Every 30 s, or every half of the shorter retention when that is less (at least every second):
     * a finished task then stays at most one and a half times its retention, and a table under a
     * short retention reaches its steady size within a few retentions.
     */
    static Duration interval(WorkerConfig config) {
      Duration half = (config.completedRetention().compareTo(config.failedRetention()) < 0
          ? config.completedRetention() : config.failedRetention()).dividedBy(2);
      if (half.compareTo(MIN_INTERVAL) < 0) {
        return MIN_INTERVAL;
      }
      return half.compareTo(MAX_INTERVAL) < 0 ? half : MAX_INTERVAL;
    }
  }

  private final Config config;
  private final PassTransaction tx;
  private final StaleWorkerPass staleWorkers;
  private final UnhandledKindsPass unhandled;

  RetentionPass(Config config, PassTransaction tx, StaleWorkerPass staleWorkers, UnhandledKindsPass unhandled) {
    this.config = config;
    this.tx = tx;
    this.staleWorkers = staleWorkers;
    this.unhandled = unhandled;
  }

  @Override
  public String name() {
    return "retention";
  }

  @Override
  public Duration interval() {
    return config.interval();
  }

  @Override
  public PassLock lock() {
    return PassLock.RETENTION;
  }

  /** One batch: returns the tasks it deleted. */
  @Override
  public Integer run(DSLContext t) {
    return MaintenanceQueries.pruneFinished(t, config.completed(), config.failed(), config.batch());
  }

  /** The leader's pass: each batch fenced by the lease; the unhandled kinds when due. Returns the tasks deleted. */
  int runAsLeader() {
    long now = System.nanoTime();
    return run(PassTransaction.Fence.LEADER, unhandled.dueIn(now, config.interval()), now);
  }

  /** Returns the tasks deleted (none when another worker's retention pass held the lock). */
  @Override
  public Integer runOnce() {
    return run(PassTransaction.Fence.ANY, false, 0);
  }

  /** {@code withUnhandled}: the check of the unhandled kinds rides in the first batch; the pass started {@code at}. */
  private int run(PassTransaction.Fence fence, boolean withUnhandled, long at) {
    int total = 0;
    for (int i = 0; i < config.maxBatches(); i++) {
      Integer n = tx.onPool(fence, i == 0 ? new FirstBatch(withUnhandled, at) : this);
      if (n == null) {
        break; // not the leader any more, or another worker's pass holds the lock
      }
      total += n;
      if (n < config.batch()) {
        break;
      }
    }
    return total;
  }

  /** The first batch: the stale worker rows and, {@code withUnhandled}, the unhandled kinds with it. */
  private final class FirstBatch implements PassStatements<Integer> {
    private final boolean withUnhandled;
    private final long at;
    private List<Unhandled> found = List.of();

    FirstBatch(boolean withUnhandled, long at) {
      this.withUnhandled = withUnhandled;
      this.at = at;
    }

    @Override
    public PassLock lock() {
      return PassLock.RETENTION;
    }

    @Override
    public Integer run(DSLContext t) {
      staleWorkers.run(t);
      if (withUnhandled) {
        found = unhandled.run(t);
      }
      return RetentionPass.this.run(t);
    }

    @Override
    public void committed(Integer deleted, Executor onPool) {
      if (withUnhandled) {
        unhandled.checked(at, found);
      }
    }
  }
}
