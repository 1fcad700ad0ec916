package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.TxBounds;
import java.util.concurrent.Executor;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * The one transaction every maintenance pass runs in, on a pool connection or in a round of the
 * listener's session: bounded on the server from its first statement ({@link TxBounds}, so a worker
 * frozen in the middle of a pass loses its session, its pass lock and the lease row instead of
 * stopping maintenance cluster-wide), then the pass's lock ({@link PassLock}, with the plan
 * settings of {@link MaintenanceQueries#tryPassLock}), then, for the leader's passes, the lease's
 * turn ({@link LeaderLease}), then the pass's statements when the lock was taken and the turn
 * returned the lease; commit; then the turn's answer and the pass's after-commit step.
 */
final class PassTransaction {

  /** Whom a transaction's pass is for, and so which turn it starts with. */
  enum Fence {
    /** Any worker (a pass run on demand, a worker's own pass): no turn. */
    ANY,
    /** The leader: the turn renews the lease (no heartbeat); the pass runs only when it returned it. */
    LEADER,
    /** The tick: the turn also refreshes the heartbeat; the pass runs only when it returned the lease. */
    BEAT
  }

  /**
   * What a transaction did: the turn's answer (null without one) and whether the pass ran, with its
   * result.
   */
  record Done<R>(PassStatements<R> pass, MaintenanceQueries.Turn turn, boolean ran, R result) {}

  private final DataSource dataSource;
  private final TxBounds bounds;
  private final int namespace;
  private final LeaderLease lease;

  PassTransaction(WorkerConfig config, LeaderLease lease) {
    this.dataSource = config.dataSource();
    this.bounds = config.transactionBounds();
    this.namespace = config.tenantLockNamespace();
    this.lease = lease;
  }

  /**
   * Runs {@code pass} (null: the turn only) in a bounded transaction on a pool connection, on the
   * caller's thread, and its after-commit step on the same thread. Returns the pass's result, or
   * null when it did not run (its lock was held elsewhere, or it is the leader's and this worker
   * does not hold the lease).
   */
  <R> R onPool(Fence fence, PassStatements<R> pass) {
    Done<R> done = bounds.inTransaction(dataSource, tx -> statements(tx, fence, pass));
    return committed(done, Runnable::run);
  }

  /**
   * Runs a counting pass (the tasks or rows it changed) on demand on any worker ({@link Fence#ANY});
   * returns its count, 0 when another worker's pass held the lock.
   */
  int countOnPool(PassStatements<Integer> pass) {
    Integer n = onPool(Fence.ANY, pass);
    return n == null ? 0 : n;
  }

  /**
   * Runs {@code pass} in the listener's round {@code tx} (already bounded; the listener commits it)
   * and returns its after-commit step, which hands what needs the pool to {@code handOff} (the
   * maintenance thread).
   */
  <R> Runnable onSession(DSLContext tx, Fence fence, PassStatements<R> pass, Executor handOff) {
    Done<R> done = statements(tx, fence, pass);
    return () -> committed(done, handOff);
  }

  private <R> Done<R> statements(DSLContext tx, Fence fence, PassStatements<R> pass) {
    PassLock lock = pass == null ? null : pass.lock();
    boolean locked = lock == null || MaintenanceQueries.tryPassLock(tx, namespace, lock.key);
    MaintenanceQueries.Turn turn = fence == Fence.ANY ? null : lease.turn(tx, fence == Fence.BEAT);
    if (pass == null || !locked || (turn != null && turn.term() == null)) {
      return new Done<>(pass, turn, false, null);
    }
    return new Done<>(pass, turn, true, pass.run(tx));
  }

  private <R> R committed(Done<R> done, Executor onPool) {
    if (done.turn() != null) {
      lease.answered(done.turn(), onPool);
    }
    if (!done.ran()) {
      return null;
    }
    done.pass().committed(done.result(), onPool);
    return done.result();
  }
}
