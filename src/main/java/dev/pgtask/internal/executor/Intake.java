package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import dev.pgtask.internal.sql.OrphanQueries;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where claimed tasks come in: registered in {@link HeldTasks}, queued in {@link #ready} for the
 * executor threads, a claim's head with the transaction the claim opened for it ({@link #adopted});
 * and where what a claim left without a holder is put back.
 *
 * <p>Threads: the producer's thread hands claims over ({@link #submitAll}, {@link #submitStarted});
 * {@link #ready} (a concurrent deque) is taken from and put back to by the executor threads (a task
 * whose transaction ended, a plain task whose start check failed) and drained by the shutdown;
 * {@link #adopted} (a concurrent map) is written by the producer's thread and taken from by the
 * executor thread that takes the head (or by the shutdown).
 */
final class Intake {

  private static final Logger log = LoggerFactory.getLogger(Intake.class);

  private final WorkerConfig config;
  private final HeldTasks held;
  private final Stopping stop;
  /** Claimed tasks waiting for a thread, in claim order. */
  final LinkedBlockingDeque<LocalTask> ready = new LinkedBlockingDeque<>();
  /** Claim heads whose transaction the claim opened, by task id: taken by the thread that takes the head. */
  private final Map<Long, Adopted> adopted = new ConcurrentHashMap<>();

  record Adopted(Connection conn, LockResult lock) {}

  Intake(WorkerConfig config, HeldTasks held, Stopping stop) {
    this.config = config;
    this.held = held;
    this.stop = stop;
  }

  /** A claim is about to be sent; returns the instant to hand to {@link #submitAll}. */
  long claimStarting() {
    held.claimStarting();
    return System.nanoTime();
  }

  /**
   * The claim sent at {@code claimNanos} failed: its answer (and the tasks it may have claimed) is
   * lost. Puts back what this worker's claims left behind, at once instead of after the lease.
   */
  void claimFailed() {
    held.claimFailed();
    releaseOrphans();
  }

  /** Hands claimed tasks to the executor threads. */
  void submitAll(List<Claimed> tasks, long claimNanos) {
    List<LocalTask> local = held.register(tasks, claimNanos);
    if (stop.closed) {
      local.forEach(t -> held.writeAlone(t, new Outcome.Released(), System.nanoTime()));
      return;
    }
    ready.addAll(local);
  }

  /**
   * Hands claimed tasks to the executor threads, the claim's head first, with the transaction the
   * claim opened for it (its row and tenant locks taken as {@code headLock} says, its savepoint open).
   */
  void submitStarted(List<Claimed> tasks, Connection transaction, long headId, LockResult headLock,
      long claimNanos) {
    List<LocalTask> local = held.register(tasks, claimNanos);
    LocalTask head = null;
    for (LocalTask t : local) {
      if (t.id() == headId) {
        head = t;
      }
    }
    if (head == null || stop.closed) {
      closeUnused(transaction);
      if (stop.closed) {
        local.forEach(t -> held.writeAlone(t, new Outcome.Released(), System.nanoTime()));
      } else {
        ready.addAll(local);
      }
      return;
    }
    adopted.put(headId, new Adopted(transaction, headLock));
    ready.offerFirst(head);
    for (LocalTask t : local) {
      if (t != head) {
        ready.add(t);
      }
    }
  }

  /** The transaction a claim opened for {@code t}, if it is such a head; the caller now owns it. */
  Adopted takeAdopted(LocalTask t) {
    return adopted.remove(t.id());
  }

  /** Whether {@code t} is a claim's head whose transaction no thread has taken yet. */
  boolean isAdopted(LocalTask t) {
    return adopted.containsKey(t.id());
  }

  /**
   * At shutdown: puts back the claimed tasks that wait for a thread (and ends the transaction a
   * claim opened for one of them, which holds its row).
   */
  void releaseWaiting() {
    for (LocalTask t = ready.poll(); t != null; t = ready.poll()) {
      Adopted a = adopted.remove(t.id());
      if (a != null) {
        closeUnused(a.conn());
      }
      held.writeAlone(t, new Outcome.Released(), System.nanoTime());
    }
  }

  /** Rolls back and returns to the pool a transaction a claim opened that no task will use. */
  private static void closeUnused(Connection transaction) {
    try {
      transaction.rollback();
      transaction.setAutoCommit(true);
    } catch (SQLException ignored) {
      // the pool validates it
    }
    try {
      transaction.close();
    } catch (SQLException ignored) {
      // nothing to do
    }
  }

  /** Puts back the tasks claimed by this worker that it does not hold (a lost claim's answer, shutdown). */
  void releaseOrphans() {
    List<Long> ids = held.ids();
    try (Connection c = config.dataSource().getConnection()) {
      int n = OrphanQueries.releaseOrphans(c, config.workerId(), ids);
      if (n > 0) {
        log.info("pgtask: put back {} task(s) claimed by this worker that it no longer held", n);
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("pgtask: could not put back the tasks this worker's claims left behind ({}); they are rescued "
          + "after their lease", e.getMessage());
    }
  }
}
