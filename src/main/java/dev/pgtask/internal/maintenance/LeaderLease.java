package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.MaintenanceQueries;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This worker's side of the maintenance lease ({@code pgtask.maintenance_lease}, its expiry on the
 * database's clock, never a session lock): the turn statement ({@code pgtask.maintenance_turn}),
 * which renews or takes the lease and, in a tick, refreshes the heartbeat; the term this worker
 * holds, as the last turn answered it; the log of a change of leadership; registering again when
 * the turn found the worker's row pruned; and giving the lease up at stop.
 *
 * <p>The holder renews the lease for three beats ({@link #duration}) at each tick, and every pass of
 * the leader renews it first in its own transaction: a leader that was frozen past its lease finds
 * out before it runs a pass, and the lease row stays locked by that transaction until it ends.
 */
final class LeaderLease {

  private static final Logger log = LoggerFactory.getLogger(LeaderLease.class);

  private final String workerId;
  private final Duration duration;
  private final Runnable register;
  // the term of the lease this worker holds, or null. Written by whichever thread runs a turn's
  // after-commit step (the maintenance thread, the listener's for a tick on its session, a caller of
  // runOnce); read by all of them
  private volatile Long term;

  /**
   * {@code register}: registers the worker again (its row was pruned while it was away); called
   * on the pool (see {@link #answered}).
   */
  LeaderLease(WorkerConfig config, Runnable register) {
    this.workerId = config.workerId();
    this.duration = duration(config);
    this.register = register;
  }

  /**
   * How long the leader holds the lease after each renewal: three beats (a tick or two late under
   * load is not a loss of the lease).
   */
  static Duration duration(WorkerConfig config) {
    return Maintenance.beatInterval(config).multipliedBy(3);
  }

  /** Whether this worker held the lease at its last turn. */
  boolean leads() {
    return term != null;
  }

  /**
   * The turn, in the caller's transaction: renews or takes the lease, and with {@code heartbeat}
   * refreshes this worker's heartbeat in the same statement.
   */
  MaintenanceQueries.Turn turn(DSLContext tx, boolean heartbeat) {
    return MaintenanceQueries.maintenanceTurn(tx, workerId, duration, heartbeat);
  }

  /**
   * A turn's answer, once its transaction committed: registers again (on the pool) when the
   * worker's row was gone, and records the term held (logs a change of leadership).
   */
  void answered(MaintenanceQueries.Turn t, Executor onPool) {
    if (Boolean.FALSE.equals(t.registered())) {
      onPool.execute(this::registerAgain);
    }
    termIs(t.term());
  }

  private void registerAgain() {
    try {
      register.run();
    } catch (dev.pgtask.WorkerIdInUseException e) {
      // pruned while away, and another live process took the id meanwhile: say so loudly
      log.error("pgtask worker {}: could not register again: {}", workerId, e.getMessage());
    }
  }

  private void termIs(Long now) {
    Long before = term;
    term = now;
    if (now != null && !now.equals(before)) {
      log.info("pgtask worker {} leads maintenance (term {}, lease {} ms)", workerId, now, duration.toMillis());
    } else if (now == null && before != null) {
      log.info("pgtask worker {} no longer leads maintenance (its term {} ended: its lease expired and "
          + "another worker took it); it runs no maintenance pass", workerId, before);
    }
  }

  /** At stop: a leader gives the lease up, so that another worker takes it at its next tick. */
  void release(PassTransaction tx) {
    Long held = term;
    if (held == null) {
      return;
    }
    try {
      tx.onPool(PassTransaction.Fence.ANY, t -> MaintenanceQueries.releaseMaintenanceLease(t, workerId));
      log.info("pgtask worker {} released the maintenance lease (term {})", workerId, held);
    } catch (RuntimeException e) {
      log.warn("pgtask worker {}: could not release the maintenance lease ({}); it expires within {} ms",
          workerId, e.getMessage(), duration.toMillis());
    }
    term = null;
  }
}
