package dev.pgtask.internal.lease;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.LeaseQueries;
import dev.pgtask.internal.sql.Sql;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one writer of the leases of the tasks this worker holds (the claim sets the first): the only
 * caller of {@link LeaseQueries#extendLeases}. It picks the renewal's duration (the worker's lease)
 * and interval ({@link #intervalNanos}), fences each renewal by owner and attempt, sends it, and
 * applies the answer: a renewed task's lease instant ({@link LocalTask#leaseRenewed}, as of the
 * send) and a stop request for a cancel request found. A task the renewal did not find is left
 * alone here (no longer ours, or its row was locked for a moment): the held-task check, or the
 * start fence's read, tells which.
 *
 * <p>One method per reason, each on its caller's thread (no thread of its own):
 * <ul>
 *   <li>{@link #renewIn}: the periodic renewal of the tasks held without a transaction, in the
 *   round's transaction of the listener's session (bounded by the round's {@code TxBounds}); the
 *   answer is applied once the round has committed ({@link LeaseKeeper#sessionRenewal}).</li>
 *   <li>{@link #renewThroughPool}: the same renewal through the pool, in a transaction bounded by
 *   {@code TxBounds}, on the lease keeper's thread while the listener's session does not renew.</li>
 *   <li>{@link #renewAfterTransaction}: tasks taken out of a task transaction that ended (their rows
 *   unlocked now), on the executor thread, before they wait again ({@code BatchCommit},
 *   {@code Executor}).</li>
 *   <li>{@link #fenceStart}: a plain task's start fence, together with other waiting plain tasks
 *   that need the same check, on the executor thread ({@code PlainRun}); returns the answer.</li>
 * </ul>
 *
 * <p>Threads: stateless apart from its final fields; the lease instant it writes is
 * {@link LocalTask#leaseFromNanos} (volatile), the stop requests go through
 * {@link LocalTask#requestStop}.
 */
public final class Leases {

  private static final Logger log = LoggerFactory.getLogger(Leases.class);

  private final WorkerConfig config;

  public Leases(WorkerConfig config) {
    this.config = config;
  }

  /** How often a task held without a transaction has its lease renewed: a third of the lease, at least 50 ms. */
  public long intervalNanos() {
    return Math.max(TimeUnit.MILLISECONDS.toNanos(50), config.leaseDuration().toNanos() / 3);
  }

  /**
   * Renews the leases of {@code tasks} in {@code tx} (the listener's round, which bounds and commits
   * it); returns the application of the answer, to run once the round has committed.
   */
  public Runnable renewIn(DSLContext tx, List<LocalTask> tasks) {
    long sent = System.nanoTime();
    Map<Long, Boolean> found = send(tx, tasks);
    return () -> apply(tasks, found, sent);
  }

  /** Renews the leases of {@code tasks} through the pool, in a transaction bounded by {@code TxBounds}; a failure is logged. */
  public void renewThroughPool(List<LocalTask> tasks) {
    long sent = System.nanoTime();
    try {
      apply(tasks, config.transactionBounds().inTransaction(config.dataSource(), tx -> send(tx, tasks)), sent);
    } catch (RuntimeException e) {
      log.warn("pgtask: renewing the leases of {} task(s) failed: {}", tasks.size(), e.getMessage());
    }
  }

  /**
   * Tasks taken out of a transaction that ended: their rows are unlocked now, so their leases must
   * not run out while they wait. One autocommit statement; a failure is logged (the lease keeper
   * renews them at its next turn).
   */
  public void renewAfterTransaction(List<LocalTask> tasks) {
    if (tasks.isEmpty()) {
      return;
    }
    long sent = System.nanoTime();
    try {
      apply(tasks, send(Sql.using(config.dataSource()), tasks), sent);
    } catch (RuntimeException e) {
      log.warn("pgtask: renewing the leases of {} task(s) failed: {}", tasks.size(), e.getMessage());
    }
  }

  /**
   * A plain task's start fence: renews the leases of {@code batch} (the task to start first) in
   * one autocommit statement and applies the answer. Returns the tasks renewed, each with whether a
   * cancel request stands for its attempt; a task missing is no longer ours or was locked for a
   * moment. A failure is thrown to the caller.
   */
  public Map<Long, Boolean> fenceStart(List<LocalTask> batch) {
    long sent = System.nanoTime();
    Map<Long, Boolean> found = send(Sql.using(config.dataSource()), batch);
    apply(batch, found, sent);
    return found;
  }

  private Map<Long, Boolean> send(DSLContext dsl, List<LocalTask> tasks) {
    List<Fence> fences = new ArrayList<>(tasks.size());
    tasks.forEach(t -> fences.add(t.fence()));
    return LeaseQueries.extendLeases(dsl, fences, config.leaseDuration());
  }

  /**
   * Applies a renewal sent at {@code sent}: the renewed tasks are known to be this worker's as of
   * then; a cancel request found stops its task.
   */
  private static void apply(List<LocalTask> tasks, Map<Long, Boolean> renewed, long sent) {
    for (LocalTask t : tasks) {
      Boolean cancel = renewed.get(t.id());
      if (cancel == null) {
        continue;
      }
      t.leaseRenewed(sent);
      if (cancel) {
        t.requestStop(LocalTask.Stop.CANCELLED);
      }
    }
  }
}
