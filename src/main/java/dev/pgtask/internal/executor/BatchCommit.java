package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.lease.Leases;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.HeldQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.wakeup.HandOffWake;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.core.TransactionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a task transaction ends: its COMMIT (with the hand-off wake-up of this worker's producer when
 * the completions handed a tenant's next task on in this worker's queues: {@link HandOffWake}), the
 * report of its tasks, a COMMIT whose answer was lost checked against durable state, and recovery
 * when the transaction is lost: the culprit fails, every other task it carried runs again alone, in
 * the same attempt.
 *
 * <p>Runs on the executor thread that owns the transaction ({@link ExecutorThread#tx},
 * {@link ExecutorThread#alone}). {@link #selfWake} is written once by the worker's wiring before the
 * threads start, read by the executor threads.
 */
final class BatchCommit {

  private static final Logger log = LoggerFactory.getLogger(BatchCommit.class);

  private final WorkerConfig config;
  private final Outcomes outcomes;
  private final OutcomeWriter writer;
  private final HeldTasks held;
  private final Leases leases;
  private final Intake intake;
  private final TransactionalRun run;
  private final Stopping stop;
  private volatile HandOffWake selfWake;

  BatchCommit(WorkerConfig config, Outcomes outcomes, OutcomeWriter writer, HeldTasks held, Leases leases,
      Intake intake, TransactionalRun run, Stopping stop) {
    this.config = config;
    this.outcomes = outcomes;
    this.writer = writer;
    this.held = held;
    this.leases = leases;
    this.intake = intake;
    this.run = run;
    this.stop = stop;
  }

  /**
   * Sets what claims for this worker after a commit whose completions handed tasks on in its
   * queues without a notification (the producer's wake-up). Without it (a direct run, no
   * producer), every hand-off notifies.
   */
  void selfWake(HandOffWake wake) {
    this.selfWake = wake;
  }

  /** Commits the thread's open transaction, if any, and reports its tasks. */
  void commit(ExecutorThread w) {
    TaskTransaction tx = w.tx;
    if (tx == null) {
      return;
    }
    w.tx = null;
    int done;
    HandOffWake wake = selfWake;
    String own = wake == null ? "" : wake.ownQueues(stop.stopping);
    try {
      done = tx.commit(tx.capacity == 1, own);
    } catch (SQLException e) {
      if (tx.capacity == 1 && tx.completed.size() == 1 && tx.transactionState() == TransactionState.FAILED) {
        // the check of the task's deferred constraints (or its savepoint's release) failed before
        // the COMMIT: the savepoint is still there, with the row and tenant locks above it
        LocalTask t = tx.completed.get(0).task();
        long startNanos = tx.completed.get(0).startNanos();
        tx.completed.clear();
        try {
          tx.rollbackToSavepoint();
          run.record(tx, t, outcomes.ofFailure(t, e), startNanos);
          w.tx = tx;
          commit(w);
          return;
        } catch (SQLException | TransactionLost again) {
          tx.completed.add(new TaskTransaction.Run(t, new Outcome.Completed(), null, startNanos));
          boolean ended = again instanceof SQLException s && "3B001".equals(s.getSQLState());
          transactionLost(w, tx, null, new TransactionLost(e, ended ? t : null, ended));
          return;
        }
      }
      if (!(TransactionalRun.sessionLost(tx, e) && committedDespite(w, tx, e))) {
        transactionLost(w, tx, null, new TransactionLost(e, null, false));
      }
      if (wake != null) {
        wake.commitAnswerLost(own);
      }
      return;
    }
    if (wake != null) {
      // before the slots are freed, so the claim those free takes the hand-off's spill check with it
      wake.committed(own, handsOn(tx.completed));
    }
    int i = 0;
    for (TaskTransaction.Run r : tx.completed) {
      writer.count(r.task(), r.outcome(), i++ < done ? TaskState.completed : null, r.startNanos());
      held.finished(r.task());
    }
    for (TaskTransaction.Run r : tx.recorded) {
      writer.count(r.task(), r.outcome(), r.result(), r.startNanos());
      held.finished(r.task());
    }
    tx.close();
    runAgainAlone(w, tx.again);
  }

  /** Tasks taken out of a transaction that ended, to run again, each in a transaction of its own. */
  private void runAgainAlone(ExecutorThread w, List<LocalTask> tasks) {
    if (tasks.isEmpty()) {
      return;
    }
    leases.renewAfterTransaction(tasks);
    for (LocalTask t : tasks) {
      t.requeued();
      w.alone.add(t);
    }
  }

  /**
   * A COMMIT whose answer was lost with its session may still have committed: durable state says
   * (one task suffices: the COMMIT is atomic). If it did, its tasks are reported and counted as what
   * they are, not as failed or abandoned; the tasks it locked ahead and did not run go back to the
   * queue, and those to run again alone do so. Returns false when it did not commit, or the check
   * could not be made (then the transaction is handled as lost: fenced, nothing runs twice).
   */
  private boolean committedDespite(ExecutorThread w, TaskTransaction tx, SQLException e) {
    TaskTransaction.Run probe = !tx.completed.isEmpty() ? tx.completed.get(0)
        : !tx.recorded.isEmpty() ? tx.recorded.get(0) : null;
    try {
      if (probe == null || config.transactionBounds().inTransaction(config.dataSource(),
          dsl -> HeldQueries.stillRunningAs(dsl, probe.task().fence()))) {
        return false;
      }
    } catch (RuntimeException checkFailed) {
      log.warn("pgtask: the answer to a COMMIT was lost ({}) and whether it committed could not be read ({})",
          e.getMessage(), checkFailed.getMessage());
      return false;
    }
    tx.abandon();
    log.warn("pgtask: the answer to the COMMIT of {} task(s) was lost ({}); the database shows it committed, so "
        + "their outcomes stand", tx.completed.size() + tx.recorded.size(), e.getMessage());
    for (TaskTransaction.Run r : tx.completed) {
      writer.count(r.task(), r.outcome(), TaskState.completed, r.startNanos());
      held.finished(r.task());
    }
    for (TaskTransaction.Run r : tx.recorded) {
      writer.count(r.task(), r.outcome(), r.result(), r.startNanos());
      held.finished(r.task());
    }
    List<LocalTask> notRun = new ArrayList<>(tx.pending);
    leases.renewAfterTransaction(notRun);
    for (int i = notRun.size() - 1; i >= 0; i--) {
      notRun.get(i).requeued();
      intake.ready.offerFirst(notRun.get(i));
    }
    runAgainAlone(w, tx.again);
    return true;
  }

  /** Whether completing these may have made a task claimable: a tenant's task stopped running. */
  private static boolean handsOn(List<TaskTransaction.Run> completed) {
    for (TaskTransaction.Run r : completed) {
      if (r.task().claimed.tenantId() != null) {
        return true;
      }
    }
    return false;
  }

  void transactionLost(ExecutorThread w, LocalTask current, TransactionLost lost) {
    TaskTransaction tx = w.tx;
    w.tx = null;
    transactionLost(w, tx, current, lost);
  }

  /**
   * The transaction ended without committing (its connection, the server, its COMMIT, or a handler
   * that ended it): everything in it is gone. A transaction of one task: that task's attempt fails,
   * recorded in a new transaction. A commit batch: the culprit, when known, fails; every other task
   * it carried runs again alone, in the same attempt.
   */
  private void transactionLost(ExecutorThread w, TaskTransaction tx, LocalTask current, TransactionLost lost) {
    tx.abandon();
    List<LocalTask> carried = new ArrayList<>();
    tx.completed.forEach(r -> carried.add(r.task()));
    tx.recorded.forEach(r -> carried.add(r.task()));
    carried.addAll(tx.pending);
    carried.addAll(tx.again);
    if (current != null && !carried.contains(current)) {
      carried.add(current);
    }
    Throwable cause = lost.getCause();
    LocalTask culprit = lost.culprit != null ? lost.culprit : carried.size() == 1 ? carried.get(0) : null;
    if (carried.size() > 1) {
      log.warn("pgtask: a task transaction carrying {} tasks failed ({}); {}", carried.size(), Outcomes.describe(cause),
          culprit == null ? "each runs again in a transaction of its own" : "task " + culprit.id()
              + " caused it; the others run again in transactions of their own");
    }
    List<LocalTask> again = new ArrayList<>();
    for (LocalTask t : carried) {
      if (t == culprit) {
        Outcome o = lost.endedByHandler ? outcomes.endedByHandler(t)
            : t.stopReason() == LocalTask.Stop.NONE ? outcomes.transactionFailed(t, cause) : outcomes.ofStop(t, t.stopReason());
        log.warn("pgtask: task {} attempt {}: {}", t.id(), t.claimed.attempt(),
            o instanceof Outcome.Failed f ? f.error() : o.name());
        held.writeAlone(t, o, System.nanoTime());
      } else {
        again.add(t);
      }
    }
    runAgainAlone(w, again);
  }

  /** pgtask's own code failed around the thread's transaction: it is rolled back, its tasks let go. */
  void abandon(ExecutorThread w) {
    TaskTransaction tx = w.tx;
    w.tx = null;
    if (tx == null) {
      return;
    }
    tx.abandon();
    tx.completed.forEach(r -> held.finished(r.task()));
    tx.recorded.forEach(r -> held.finished(r.task()));
    tx.pending.forEach(held::finished);
  }
}
