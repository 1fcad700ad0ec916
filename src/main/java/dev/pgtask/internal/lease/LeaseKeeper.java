package dev.pgtask.internal.lease;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.notifier.SessionWork;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.HeldQueries;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.Sql;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps what this worker holds true to the database: every third of the lease
 * ({@link Leases#intervalNanos}) it has the lease of each task held without a transaction (waiting
 * to start, plain-mode running, completion not written yet) renewed by {@link Leases}, the one
 * lease writer (on the listener's session, {@link #sessionRenewal}, or through the pool while the
 * session does not renew), and it reads what happened to the held tasks from durable state
 * ({@link HeldQueries#checkHeld}: cancel requests, and claims no longer ours) on every renewal, at every poll of the producer,
 * whenever the listener (re)connects, and when a cancellation hint arrives (at most one check per
 * {@value #MIN_CHECK_SPACING_MILLIS} ms, however many hints: a flood costs a bounded number of
 * reads, and a hint changes nothing by itself).
 *
 * <p>Threads: {@link #checkRequested} is guarded by {@link #signal}, written by whoever asks for a
 * check (the producer's thread at each poll, the listener's thread for a hint or a reconnect) and
 * cleared by the keeper's thread. {@link #sessionRenewalDue} and {@link #sessionRenewedAt} are
 * written by the listener's thread (the renewal on its session) and read by the keeper's thread,
 * which renews through the pool only while the session does not. Check answers are applied through
 * {@link HeldRegistry#apply} (stop requests), renewal answers by {@link Leases} (lease instants, stop
 * requests), on the thread that read them.
 */
public final class LeaseKeeper extends Service {

  private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);
  static final long MIN_CHECK_SPACING_MILLIS = 20;

  private final WorkerConfig config;
  private final HeldRegistry heldTasks;
  private final Leases leases;
  private final Object signal = new Object();
  private boolean checkRequested; // guarded by signal

  public LeaseKeeper(WorkerConfig config, HeldRegistry heldTasks, Leases leases) {
    super("pgtask-leases-" + config.workerId(), 1);
    this.config = config;
    this.heldTasks = heldTasks;
    this.leases = leases;
  }

  /** Asks for a check of the held tasks soon (a hint arrived, or the listener reconnected). */
  public void requestCheck() {
    synchronized (signal) {
      checkRequested = true;
      signal.notifyAll();
    }
  }

  @Override
  protected void onStop() {
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  @Override
  protected void run(int index) {
    long every = every();
    long nextRenewal = System.nanoTime() + every;
    long lastCheck = 0;
    while (isRunning()) {
      boolean check;
      synchronized (signal) {
        long wait = nextRenewal - System.nanoTime();
        if (!checkRequested && wait > 0) {
          try {
            TimeUnit.NANOSECONDS.timedWait(signal, wait);
          } catch (InterruptedException e) {
            // the flag decides
          }
        }
        check = checkRequested;
        checkRequested = false;
      }
      if (!isRunning()) {
        return;
      }
      if (System.nanoTime() - nextRenewal >= 0) {
        renew();
        nextRenewal = System.nanoTime() + every;
        check = true;
      }
      if (check) {
        long spacing = TimeUnit.MILLISECONDS.toNanos(MIN_CHECK_SPACING_MILLIS) - (System.nanoTime() - lastCheck);
        if (spacing > 0) {
          try {
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(spacing) + 1);
          } catch (InterruptedException e) {
            // check anyway
          }
        }
        lastCheck = System.nanoTime();
        check();
      }
    }
  }

  // System.nanoTime() of the next renewal on the listener's session (sessionRenewal()); when the
  // session renews, the keeper's own renewal through the pool stands aside
  private volatile long sessionRenewalDue = System.nanoTime();
  private volatile long sessionRenewedAt;

  private long every() {
    return leases.intervalNanos();
  }

  /**
   * The lease renewal as work of the listener's session (a direct connection of the worker's own,
   * never borrowed from the pool): a claimed task that waits for a connection the pool cannot give
   * (a session pooler out of server sessions, a pool exhausted by the application) keeps its lease
   * while the worker lives, so no rescue takes it from a live worker. The keeper renews through the
   * pool only while the session does not (the listener is down).
   */
  public SessionWork sessionRenewal() {
    return new SessionWork() {
      // nothing held without a transaction: nothing to renew, no round of its own
      @Override
      public long dueAt() {
        return heldTasks.heldWithoutTransaction().isEmpty() ? System.nanoTime() + every() : sessionRenewalDue;
      }

      @Override
      public boolean runsInRoundAt(long now) {
        return sessionRenewalDue - now <= every() / 3 && !heldTasks.heldWithoutTransaction().isEmpty();
      }

      @Override
      public Runnable run(DSLContext tx, long now) {
        sessionRenewalDue = now + every();
        List<LocalTask> held = heldTasks.heldWithoutTransaction();
        long sent = System.nanoTime();
        if (held.isEmpty()) {
          return null;
        }
        Runnable applyAnswer = leases.renewIn(tx, held);
        return () -> {
          sessionRenewedAt = sent;
          applyAnswer.run();
        };
      }
    };
  }

  /** Has the leases of the tasks held without a transaction renewed through the pool, unless the session renewed them lately. */
  private void renew() {
    long onSession = sessionRenewedAt;
    if (onSession != 0 && System.nanoTime() - onSession < every() + every() / 2) {
      return;
    }
    List<LocalTask> held = heldTasks.heldWithoutTransaction();
    if (held.isEmpty()) {
      return;
    }
    leases.renewThroughPool(held);
  }

  /** Reads what happened to the held tasks, and tells the heldTasks. */
  public void check() {
    List<LocalTask> held = heldTasks.held();
    if (held.isEmpty() && !heldTasks.claimInFlight()) {
      heldTasks.apply(Map.of(), heldTasks.checkStarting()); // nothing held, nothing on its way: nothing to read
      return;
    }
    long started = heldTasks.checkStarting();
    List<Fence> fences = new ArrayList<>(held.size());
    held.forEach(t -> fences.add(t.fence()));
    try {
      Map<Long, HeldQueries.Held> found = HeldQueries.checkHeld(Sql.using(config.dataSource()), config.workerId(), fences);
      heldTasks.apply(found, started);
    } catch (Exception e) {
      log.warn("pgtask: reading the cancel requests of this worker's tasks failed ({}); trying again at the next check",
          e.getMessage());
    }
  }
}
