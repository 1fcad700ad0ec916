package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Completer;
import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.lease.LeaseKeeper;
import dev.pgtask.internal.lease.Leases;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs claimed tasks on {@code concurrency} executor threads: the threads, their loop, and the choice
 * of where each task runs. The parts that do the work are built and wired by {@link ExecutorParts}. Each claimed task is one
 * {@link LocalTask}, registered in {@link HeldTasks} from its claim until its outcome is durable;
 * outcomes are decided by {@link Outcomes} and written by {@link OutcomeWriter}.
 *
 * <p>Where a task is...
 * <ul>
 *   <li>claimed and handed over: {@link Intake} (the producer's side), counted against {@link Capacity};
 *   <li>started in a transaction: {@link TransactionalRun} (lock ahead, handler in its savepoint,
 *       outcome recorded under its locks); started in plain mode: {@link PlainRun} (its start fence);
 *       the handler itself: {@link HandlerCall} (watchdog, payload, MDC);
 *   <li>committed, and recovered when its transaction is lost: {@link BatchCommit}; which tasks may
 *       share a transaction: {@link BatchPlan};
 *   <li>cancelled: {@link HeldTasks} (hints, the held-task checks' answers), {@link LeaseKeeper}
 *       (the checks, the periodic lease renewals) and {@link Leases} (the one lease writer);
 *   <li>shut down: {@link ExecutorShutdown}.
 * </ul>
 *
 * <p>Transactional tasks (the default) run in a {@link TaskTransaction}: the re-lock (fenced row
 * lock, tenant lock, transaction-local settings, cancel request) and the task's savepoint in one
 * round trip; the handler inside the savepoint; on success, the deferred-constraint check, the
 * savepoint's release, the completion and COMMIT in one round trip; on failure, back to the
 * savepoint and the outcome written in the same transaction, under the task's row and tenant
 * locks. With commit batching ({@code commitBatch(n, t)}) a transaction carries up to n tasks,
 * each in its own savepoint, locked ahead in one statement; if its COMMIT fails, each of its tasks
 * runs again in a transaction of its own, with no attempt charged, so only the culprit fails.
 * Plain-mode kinds run outside any transaction; their completions are written in batches by the
 * {@link Completer}.
 *
 * <p>An executor thread never dies while the worker runs: whatever a handler throws is an outcome,
 * and a failure of pgtask's own code around a task is logged and the thread goes on.
 *
 * <p>Threads: each executor thread owns one {@link ExecutorThread} (its transaction, its tasks to
 * run alone), in {@link #workers} (a concurrent set, read by the shutdown). The public methods are
 * called by the producer's thread (capacity, hand-over), the listener's thread (hints,
 * {@link #checkHeldNow}), the worker's wiring before start, and the thread that stops the worker.
 */
public final class Executor extends Service {

  private static final Logger log = LoggerFactory.getLogger(Executor.class);

  /** See {@link ExecutorShutdown#STOP_ALLOWANCE}. */
  public static final Duration STOP_ALLOWANCE = ExecutorShutdown.STOP_ALLOWANCE;

  private final WorkerConfig config;
  private final Stopping stop;
  private final OutcomeWriter writer;
  private final Capacity capacity;
  private final KindSettings kinds;
  private final HeldTasks held;
  private final Intake intake;
  private final BatchPlan plan;
  private final TransactionalRun transactional;
  private final BatchCommit batch;
  private final PlainRun plain;
  private final Completer completer;
  private final Leases leases;
  private final LeaseKeeper keeper;
  private final ExecutorShutdown shutdown;
  /** The executor threads' state, for the shutdown's last resort (aborting their transactions). */
  private final Set<ExecutorThread> workers = ConcurrentHashMap.newKeySet();

  /** An executor over parts built for this worker ({@link ExecutorParts}). */
  public Executor(WorkerConfig config, WorkerStats stats) {
    this(new ExecutorParts(config, stats));
  }

  /** An executor that runs {@code parts} (a {@link DirectRun} runs the same parts without its threads). */
  Executor(ExecutorParts parts) {
    super("pgtask-exec", parts.config.concurrency());
    this.config = parts.config;
    this.stop = parts.stop;
    this.writer = parts.writer;
    this.capacity = parts.capacity;
    this.kinds = parts.kinds;
    this.held = parts.held;
    this.intake = parts.intake;
    this.plan = parts.plan;
    this.transactional = parts.transactional;
    this.batch = parts.batch;
    this.plain = parts.plain;
    this.completer = parts.completer;
    this.leases = parts.leases;
    this.keeper = parts.keeper;
    this.shutdown = parts.shutdown(workers, new ExecutorShutdown.Threads() {
      @Override
      public boolean awaitUntil(long deadline) {
        return awaitThreads(deadline);
      }

      @Override
      public void stopNow() {
        stop(Duration.ZERO);
      }
    });
  }

  /** Starts the executor threads, the completer and the lease keeper. */
  public void startAll() {
    start();
    completer.start();
    keeper.start();
  }

  // ---- wiring (before start) ----

  /**
   * Where the listener tells since when it listens without a break (System.nanoTime(), 0 while it
   * does not): a plain task claimed after that may start without a check of its own.
   */
  public void listeningSince(LongSupplier since) {
    plain.listeningSince(since);
  }

  /** Where to say that a task this worker put back is due again after a delay (the producer's timer). */
  public void onDueIn(java.util.function.Consumer<Duration> dueIn) {
    writer.onDueIn(dueIn);
  }

  /**
   * Sets what claims for this worker after a commit whose completions handed tasks on in its
   * queues without a notification (the producer's wake-up). Without it (a direct run, no
   * producer), every hand-off notifies.
   */
  public void selfWake(dev.pgtask.internal.wakeup.HandOffWake wake) {
    batch.selfWake(wake);
  }

  /** The lease renewal, as work of the listener's session ({@link LeaseKeeper#sessionRenewal}). */
  public dev.pgtask.internal.notifier.SessionWork sessionRenewal() {
    return keeper.sessionRenewal();
  }

  // ---- the producer's side ----

  /**
   * Blocks until fewer than concurrency + prefetch claimed tasks are held; returns how many more
   * may be claimed (at most {@code max}).
   */
  public int awaitCapacity(int max) throws InterruptedException {
    return capacity.awaitCapacity(max);
  }

  /**
   * Executor threads with no claimed task: how many tasks under a limit a claim may take (claimed
   * ahead, they would hold the limit's room while they wait here).
   */
  public int idleExecutors() {
    return capacity.idle();
  }

  /** Waits until an executor thread is idle, at most {@code millis} (see {@link Capacity#awaitIdle}). */
  public void awaitIdleExecutor(long millis) throws InterruptedException {
    capacity.awaitIdle(millis);
  }

  /** Waits until {@code n} executor threads are idle, at most {@code millis}. */
  public void awaitIdleExecutors(int n, long millis) throws InterruptedException {
    capacity.awaitIdle(n, millis);
  }

  /** The rate limits whose tokens tasks put back without starting give back at the next claim. */
  public Integer[] takeRefunds() {
    return writer.takeRefunds();
  }

  /** Whether no claimed task is waiting or running here: a task handed over now starts at once. */
  public boolean isIdle() {
    return capacity.isIdle();
  }

  /** A claim is about to be sent; returns the instant to hand to {@link #submitAll}. */
  public long claimStarting() {
    return intake.claimStarting();
  }

  /** See {@link Intake#claimFailed}. */
  public void claimFailed() {
    intake.claimFailed();
  }

  /** Hands claimed tasks to the executor threads. */
  public void submitAll(List<Claimed> tasks, long claimNanos) {
    intake.submitAll(tasks, claimNanos);
  }

  /** See {@link Intake#submitStarted}. */
  public void submitStarted(List<Claimed> tasks, Connection transaction, long headId, LockResult headLock,
      long claimNanos) {
    intake.submitStarted(tasks, transaction, headId, headLock, claimNanos);
  }

  /** See {@link KindSettings#plainKinds}. */
  public List<String> plainKinds() {
    return kinds.plainKinds();
  }

  /** See {@link KindSettings#serverTimeouts}. */
  public org.postgresql.util.PGobject serverTimeouts() {
    return kinds.serverTimeouts();
  }

  /** Claimed tasks not finished yet (waiting or running). */
  public int inFlight() {
    return held.inFlight();
  }

  /** The ids of the tasks whose handler is running here. */
  public List<Long> runningTaskIds() {
    return held.runningTaskIds();
  }

  // ---- cancellations ----

  /**
   * A cancellation hint from the control channel naming {@code taskId}. It changes nothing by
   * itself: a task held here is checked before it starts, and the held tasks are read from the
   * database soon ({@link LeaseKeeper}); a hint naming a task not held here (nor possibly on its way
   * from a claim) is dropped without a read.
   */
  public void hint(long taskId) {
    if (held.hint(taskId)) {
      keeper.requestCheck();
    }
  }

  /**
   * Asks for a check of the held tasks (cancel requests, claims no longer ours) soon, on the lease
   * keeper's thread: at each poll, so that a cancellation reaches a running task within a poll
   * interval even when its notification never arrives.
   */
  public void requestCheck() {
    keeper.requestCheck();
  }

  /** The listener is listening again: what it could not hear meanwhile is read from the database. */
  public void checkHeldNow() {
    keeper.check();
  }

  // ---- shutdown ----

  /** See {@link ExecutorShutdown#shutdown}. */
  public void shutdown(Duration grace) {
    shutdown.shutdown(grace);
  }

  // ---- executor threads ----

  @Override
  protected void run(int index) {
    ExecutorThread w = new ExecutorThread();
    workers.add(w);
    try {
      loop(w);
    } finally {
      workers.remove(w);
    }
  }

  private void loop(ExecutorThread w) {
    while (true) {
      LocalTask t;
      boolean runAlone = false;
      try {
        if (w.tx != null && !w.tx.pending.isEmpty()) {
          t = w.tx.pending.poll(); // locked in the open transaction: they run in it before it commits
        } else if (!w.alone.isEmpty()) {
          batch.commit(w);
          t = w.alone.poll();
          runAlone = true;
        } else if (w.tx != null) {
          t = intake.ready.poll();
          if (t == null) {
            batch.commit(w);
            continue;
          }
        } else if (stop.stopping) {
          t = intake.ready.poll();
          if (t == null) {
            return;
          }
        } else {
          t = intake.ready.poll(200, TimeUnit.MILLISECONDS);
          if (t == null) {
            continue;
          }
        }
      } catch (InterruptedException e) {
        continue; // only stop requests interrupt: the loop checks the flags
      } catch (Throwable e) {
        log.error("pgtask: unexpected failure committing a task transaction", e);
        batch.abandon(w);
        continue;
      }
      LocalTask task = t;
      boolean alone = runAlone;
      HandlerCall.withMdc(task, () -> runOne(w, task, alone));
      Thread.interrupted(); // an interrupt meant for a handler must not hit the next task
    }
  }

  /**
   * Runs one task taken by {@code w}'s thread: in plain mode, in the thread's open transaction
   * (locked ahead, or joining it), or in a new one; commits when the transaction is full or old.
   */
  void runOne(ExecutorThread w, LocalTask t, boolean alone) {
    try {
      Intake.Adopted a = intake.takeAdopted(t);
      if (a != null) {
        // a claim's head, whose transaction the claim opened: this thread's transaction ends first
        // (its next task must not wait for a row lock that a transaction without a thread holds)
        batch.commit(w);
        w.tx = TaskTransaction.adopt(a.conn(), plan.batchable(t) ? plan.batchCapacity : 1, t.id(), a.lock());
      }
      if (stop.stopping && (w.tx == null || !w.tx.hasLocked(t))) {
        held.writeAlone(t, new Outcome.Released(), System.nanoTime());
        return;
      }
      HandlerEntry<?> handler = config.handlers().get(t.claimed.kind());
      if (t.plain) {
        batch.commit(w);
        plain.runPlain(t, handler);
        return;
      }
      if (alone || (w.tx != null && !w.tx.hasLocked(t) && !plan.joins(w.tx, t, 0))) {
        batch.commit(w);
      }
      if (w.tx == null) {
        try {
          w.tx = TaskTransaction.open(config.dataSource(), alone || !plan.batchable(t) ? 1 : plan.batchCapacity);
        } catch (SQLException e) {
          log.warn("pgtask: no connection to run task {} ({}); putting it back", t.id(), e.getMessage());
          held.writeAlone(t, new Outcome.Released(), System.nanoTime());
          return;
        }
      }
      TaskTransaction tx = w.tx;
      try {
        if (!tx.hasLocked(t)) {
          transactional.lockAhead(tx, t);
        }
        transactional.runInTransaction(tx, t, handler);
      } catch (TransactionLost lost) {
        batch.transactionLost(w, t, lost);
        return;
      }
      if (tx.settingsChanged && w.tx == tx) {
        // a setting the handler made outlives its savepoint: no later task may run in this transaction
        List<LocalTask> later = new ArrayList<>(tx.pending);
        tx.pending.clear();
        batch.commit(w);
        leases.renewAfterTransaction(later);
        for (int i = later.size() - 1; i >= 0; i--) {
          later.get(i).requeued();
          intake.ready.offerFirst(later.get(i)); // next, in claim order, in a new transaction
        }
        return;
      }
      if (tx.pending.isEmpty() && (tx.size() >= tx.capacity || System.nanoTime() - tx.startNanos >= plan.batchTimeNanos)) {
        batch.commit(w);
      }
    } catch (Throwable e) {
      // pgtask's own code failed around the task (a handler's throwable is an outcome, never here)
      log.error("pgtask: unexpected failure around task {}; its transaction is rolled back and it runs again "
          + "after its lease", t.id(), e);
      batch.abandon(w);
      held.finished(t);
    }
  }
}
