package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.WorkerQueries;
import java.time.Duration;
import org.jooq.DSLContext;

/**
 * Deletes the rows of workers not seen for {@link #AGE} ({@code pgtask.worker}): a worker that
 * comes back registers again at its next tick. The leader runs it in the first batch of its
 * retention pass ({@link RetentionPass}), under the retention lock.
 */
public final class StaleWorkerPass implements MaintenancePass<Integer>, PassStatements<Integer> {

  /** How long a worker's row outlives its last heartbeat. */
  public static final Duration AGE = Duration.ofHours(1);

  private final Duration interval;
  private final PassTransaction tx;

  /** {@code interval}: the retention pass's, which carries this one. */
  StaleWorkerPass(Duration interval, PassTransaction tx) {
    this.interval = interval;
    this.tx = tx;
  }

  @Override
  public String name() {
    return "stale workers";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public PassLock lock() {
    return PassLock.RETENTION;
  }

  /** Returns the worker rows deleted. */
  @Override
  public Integer run(DSLContext t) {
    return WorkerQueries.pruneStale(t, AGE);
  }

  /** Returns the worker rows deleted (0 when another worker's retention pass held the lock). */
  @Override
  public Integer runOnce() {
    return tx.countOnPool(this);
  }
}
