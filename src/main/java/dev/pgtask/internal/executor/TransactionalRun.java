package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.TaskSql;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.core.TransactionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One attempt inside a task transaction ({@link TaskTransaction}): the task locked (with commit
 * batching, the next waiting tasks locked ahead in the same round trip), its handler run inside its
 * savepoint, the savepoint released or rolled back to, and a failure's outcome recorded under the
 * task's row and tenant locks. What ends the transaction early is a {@link TransactionLost}, handled
 * by {@link BatchCommit}.
 *
 * <p>Runs on the executor thread that owns the transaction (or a direct run's caller); it writes
 * the task's state ({@link LocalTask#running}, {@link LocalTask#finishing}) and the transaction's
 * lists, which only that thread touches. It takes tasks from {@link Intake#ready} to lock ahead and
 * puts back those it could not lock.
 */
final class TransactionalRun {

  private static final Logger log = LoggerFactory.getLogger(TransactionalRun.class);

  private final WorkerConfig config;
  private final Outcomes outcomes;
  private final OutcomeWriter writer;
  private final HeldTasks held;
  private final Intake intake;
  private final BatchPlan plan;
  private final KindSettings kinds;
  private final HandlerCall call;
  private final Stopping stop;

  TransactionalRun(WorkerConfig config, Outcomes outcomes, OutcomeWriter writer, HeldTasks held, Intake intake,
      BatchPlan plan, KindSettings kinds, HandlerCall call, Stopping stop) {
    this.config = config;
    this.outcomes = outcomes;
    this.writer = writer;
    this.held = held;
    this.intake = intake;
    this.plan = plan;
    this.kinds = kinds;
    this.call = call;
    this.stop = stop;
  }

  /**
   * Locks {@code first} for execution in the transaction; with commit batching, also up to the
   * transaction's remaining room of waiting transactional tasks, in the same round trip (their rows
   * and tenant locks are held until it commits either way). They run next, in claim order.
   */
  void lockAhead(TaskTransaction tx, LocalTask first) throws TransactionLost {
    List<LocalTask> chunk = new ArrayList<>();
    chunk.add(first);
    int room = tx.capacity - tx.size() - 1;
    long planned = room > 0 ? plan.pace.expectedNanos(first.claimed.kind()) : 0;
    while (room > 0) {
      LocalTask next = intake.ready.poll();
      if (next == null) {
        break;
      }
      // a plain task runs outside; a claim's head is locked by its own transaction already (locking
      // it here would wait for that transaction, which waits for a thread); a stopped one needs no lock
      // nor one whose kind, by its recent runs, might not be done within the batch's time
      if (next.plain || intake.isAdopted(next) || next.stopReason() != LocalTask.Stop.NONE
          || !plan.joins(tx, next, planned)) {
        intake.ready.offerFirst(next);
        break;
      }
      planned += plan.pace.expectedNanos(next.claimed.kind());
      chunk.add(next);
      room--;
    }
    long serverTimeoutMillis = 0;
    for (LocalTask t : chunk) {
      serverTimeoutMillis = Math.max(serverTimeoutMillis, kinds.serverTimeoutMillis(config.handlers().get(t.claimed.kind())));
    }
    try {
      tx.lock(chunk, kinds.applicationName(first), serverTimeoutMillis, config.tenantLockNamespace(), config.transactionBounds());
    } catch (SQLException | RuntimeException e) {
      // the chunk's later tasks were not run: they go back to the front of the queue
      for (int i = chunk.size() - 1; i > 0; i--) {
        tx.pending.remove(chunk.get(i));
        intake.ready.offerFirst(chunk.get(i));
      }
      throw new TransactionLost(e, null, false);
    }
  }

  /** Runs one transactional task, locked by {@link #lockAhead}, inside the open transaction. */
  <T> void runInTransaction(TaskTransaction tx, LocalTask t, HandlerEntry<T> handler) throws TransactionLost {
    long startNanos = System.nanoTime();
    LockResult lock = tx.lockOf(t);
    if (lock == LockResult.FENCED_OUT) {
      log.info("pgtask: task {} attempt {} is no longer ours; abandoned", t.id(), t.claimed.attempt());
      held.finished(t);
      return;
    }
    Outcome outcome;
    if (lock == LockResult.TENANT_BUSY) {
      outcome = new Outcome.Deferred(config.tenantDeferDelay(), false);
    } else if (lock == LockResult.LIMIT_FULL) {
      outcome = new Outcome.Deferred(Outcome.Deferred.SLOT_RETRY, true);
    } else if (lock == LockResult.CANCEL_REQUESTED) {
      outcome = new Outcome.Cancelled(TaskSql.CANCELLED_AS_REQUESTED);
    } else if (t.stopReason() != LocalTask.Stop.NONE) {
      outcome = outcomes.ofStop(t, t.stopReason());
    } else if (stop.stopping) {
      outcome = new Outcome.Released();
    } else {
      HandlerCall.Payload<T> payload;
      try {
        payload = call.parse(t, handler);
      } catch (Exception e) {
        outcome = HandlerCall.payloadMismatch(t, handler, e);
        record(tx, t, outcome, startNanos);
        return;
      }
      Duration timeout = outcomes.timeout(t);
      Connection handlerConnection = TaskConnection.wrap(tx.conn, () -> tx.ensureSavepoint(kinds.applicationName(t)));
      t.running(handlerConnection, Sql.using(handlerConnection), tx.conn, payload.node(),
          t.claimed.claimedAt().plus(timeout));
      outcome = call.supervise(t, handler, payload.value(), timeout);
      t.finishing();
      plan.pace.ran(t.claimed.kind(), System.nanoTime() - startNanos);
      if (TaskConnection.changedSettings(handlerConnection)) {
        tx.settingsChanged = true;
        plan.pace.changesSettings(t.claimed.kind());
      }
      TransactionState state = tx.transactionState();
      if (state == TransactionState.IDLE) {
        throw new TransactionLost(new SQLException("the handler ended the task's transaction"), t, true);
      }
      if (state == TransactionState.FAILED && outcome instanceof Outcome.Completed) {
        outcome = outcomes.abortedByHandler(t);
      }
      if (outcome instanceof Outcome.Completed) {
        if (tx.capacity > 1) {
          savepointStep(tx, t, false); // a transaction of one task releases it with its commit
        }
        tx.completed.add(new TaskTransaction.Run(t, outcome, null, startNanos));
        return;
      }
      savepointStep(tx, t, true);
      if (outcome instanceof Outcome.Failed && carriesOthers(tx)) {
        // the failure may be another task's doing (a lock it holds, a deadlock with another batch, a
        // temporary object or setting it left): it counts only if the task fails alone
        log.info("pgtask: task {} attempt {} failed in a transaction shared with {} other task(s) ({}); it runs again "
            + "alone before its failure counts", t.id(), t.claimed.attempt(), tx.completed.size() + tx.recorded.size(),
            ((Outcome.Failed) outcome).error());
        tx.again.add(t);
        return;
      }
    }
    record(tx, t, outcome, startNanos);
  }

  /** Whether tasks ran in {@code tx} before the current one: what they did is still in it. */
  private static boolean carriesOthers(TaskTransaction tx) {
    return !tx.completed.isEmpty() || !tx.recorded.isEmpty();
  }

  /**
   * Releases or rolls back to the task's savepoint; a missing savepoint means the handler ended the
   * transaction. A lost session is not the handler's doing (its backend was terminated, the server
   * restarted, the network broke): the attempt then fails as a lost transaction.
   */
  private static void savepointStep(TaskTransaction tx, LocalTask t, boolean rollback) throws TransactionLost {
    try {
      if (rollback) {
        tx.rollbackToSavepoint();
      } else {
        tx.releaseSavepointIfOpen();
      }
    } catch (SQLException e) {
      if (sessionLost(tx, e)) {
        throw new TransactionLost(e, null, false); // no task's fault: as a failed COMMIT
      }
      boolean ended = "3B001".equals(e.getSQLState()) || tx.transactionState() == TransactionState.IDLE;
      throw new TransactionLost(e, t, ended || rollback);
    }
  }

  /** Whether {@code e} says the task's session is gone: a connection error, or the server ended it. */
  static boolean sessionLost(TaskTransaction tx, SQLException e) {
    String state = e.getSQLState();
    if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
      return true;
    }
    try {
      return tx.conn.isClosed();
    } catch (SQLException closed) {
      return true;
    }
  }

  /** Writes a task's outcome in the transaction that holds its locks; it is durable with the commit. */
  void record(TaskTransaction tx, LocalTask t, Outcome outcome, long startNanos) throws TransactionLost {
    try {
      tx.releaseSavepointIfOpen(); // the row is written at the top level, never inside a savepoint
      TaskState result = writer.write(tx.dsl, t, outcome);
      tx.recorded.add(new TaskTransaction.Run(t, outcome, result, startNanos));
    } catch (SQLException | RuntimeException e) {
      throw new TransactionLost(e, null, false);
    }
  }
}
