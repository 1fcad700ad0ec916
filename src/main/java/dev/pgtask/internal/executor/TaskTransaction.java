package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.sql.CompletionQueries;
import dev.pgtask.internal.sql.TaskSql;
import dev.pgtask.internal.sql.ExecuteQueries;
import dev.pgtask.internal.sql.CompletionQueries.Before;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * One open task transaction on a pooled connection, and the tasks it carries: the transactional
 * tasks run in it, each inside its own savepoint, and it commits their completions.
 *
 * <p>Structure (what makes a failed attempt's outcome safe): the task rows are re-locked and the
 * tenant locks taken by the top-level transaction; a handler runs inside savepoint
 * {@code pgtask_task}; a failure rolls back to the savepoint, so the row and tenant locks stay, and
 * its outcome is written in this same transaction before anything else happens; a success releases
 * the savepoint and the completion is written with the commit. Writes of the task row are always
 * made at the top level: a row locked by the top-level transaction and updated inside a
 * subtransaction would make PostgreSQL create a MultiXact for it.
 *
 * <p>Owned by one executor thread; not thread-safe.
 */
final class TaskTransaction {

  final Connection conn;
  final DSLContext dsl;
  /** How many tasks it may carry: 1 without commit batching. */
  final int capacity;
  final long startNanos = System.nanoTime();
  private final BaseConnection pg;
  private final Map<Long, LockResult> locks = new HashMap<>();
  /** Locked ahead and not started yet, in claim order. */
  final ArrayDeque<LocalTask> pending = new ArrayDeque<>();
  /** Succeeded: completed by the commit. */
  final List<Run> completed = new ArrayList<>();
  /** Ended otherwise, their outcome written in this transaction: durable with the commit. */
  final List<Run> recorded = new ArrayList<>();
  /**
   * Failed while it carried other tasks: rolled back to their savepoint, nothing recorded; each runs
   * again alone after this transaction ends, and only that run's outcome counts.
   */
  final List<LocalTask> again = new ArrayList<>();
  /** Whether a handler changed a setting in it (see {@link TaskConnection}): it carries no further task. */
  boolean settingsChanged;
  /** Whether savepoint pgtask_task is open. */
  private boolean savepointOpen;

  /** A task carried by this transaction, with its outcome and when it started. */
  record Run(LocalTask task, Outcome outcome, dev.pgtask.internal.sql.gen.enums.TaskState result, long startNanos) {}

  private TaskTransaction(Connection conn, int capacity) throws SQLException {
    this.conn = conn;
    this.dsl = Sql.using(conn);
    this.capacity = capacity;
    this.pg = conn.unwrap(BaseConnection.class);
  }

  /** Opens a transaction on a pooled connection. */
  static TaskTransaction open(DataSource dataSource, int capacity) throws SQLException {
    Connection c = dataSource.getConnection();
    try {
      c.setAutoCommit(false);
      return new TaskTransaction(c, capacity);
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /**
   * Adopts the transaction a claim opened for its head ({@code ClaimQueries.claimAndStart}): the
   * head is locked as {@code headLock} says, and its savepoint is open.
   */
  static TaskTransaction adopt(Connection conn, int capacity, long headId, LockResult headLock) throws SQLException {
    TaskTransaction tx = new TaskTransaction(conn, capacity);
    tx.locks.put(headId, headLock);
    tx.savepointOpen = true;
    return tx;
  }

  /**
   * Closes its connection's socket at once, whatever thread is using it (shutdown's last resort):
   * the server rolls the transaction back and drops its locks. Returns false when it was already closed.
   */
  boolean abort() {
    try {
      if (pg.isClosed()) {
        return false;
      }
      pg.abort(Runnable::run);
      return true;
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  /** How many tasks ride on it (run, locked ahead or recorded). */
  int size() {
    return completed.size() + recorded.size() + pending.size();
  }

  boolean hasLocked(LocalTask t) {
    return locks.containsKey(t.id());
  }

  /** The lock result of a task locked in it; a task missing from the answer is fenced out. */
  LockResult lockOf(LocalTask t) {
    return locks.getOrDefault(t.id(), LockResult.FENCED_OUT);
  }

  /**
   * Re-locks {@code tasks} (one statement: fenced row locks, tenant locks, settings) and opens the
   * first one's savepoint in the same round trip. The others wait in {@link #pending}.
   */
  void lock(List<LocalTask> tasks, String applicationName, long serverTimeoutMillis, int namespace,
      dev.pgtask.internal.sql.TxBounds bounds) throws SQLException {
    List<Fence> fences = new ArrayList<>(tasks.size());
    for (LocalTask t : tasks) {
      fences.add(t.fence());
    }
    releaseSavepointIfOpen();
    Map<Long, LockResult> result = ExecuteQueries.lockForExecution(conn, fences, applicationName,
        serverTimeoutMillis, namespace, true, bounds);
    savepointOpen = true;
    for (LocalTask t : tasks) {
      locks.put(t.id(), result.getOrDefault(t.id(), LockResult.FENCED_OUT));
      t.locked();
    }
    pending.addAll(tasks.subList(1, tasks.size()));
  }

  /**
   * Before the handler's first database call: opens its savepoint if none is open, with
   * application_name naming its task (one round trip, the driver pipelines both).
   */
  void ensureSavepoint(String applicationName) throws SQLException {
    if (savepointOpen) {
      return;
    }
    try (PreparedStatement ps = conn.prepareStatement(
        TaskSql.SAVEPOINT + "; SELECT set_config('application_name', ?, true)")) {
      ps.setString(1, applicationName);
      ps.execute();
    }
    savepointOpen = true;
  }

  boolean savepointOpen() {
    return savepointOpen;
  }

  /** Undoes the running task's work (back to its savepoint, which ends). */
  void rollbackToSavepoint() throws SQLException {
    if (!savepointOpen) {
      return; // the handler never touched the database: nothing to undo
    }
    try (Statement st = conn.createStatement()) {
      st.execute(TaskSql.ROLLBACK_SAVEPOINT);
    }
    savepointOpen = false;
  }

  /** Keeps the running task's work; the savepoint ends. */
  void releaseSavepointIfOpen() throws SQLException {
    if (!savepointOpen) {
      return;
    }
    try (Statement st = conn.createStatement()) {
      st.execute(TaskSql.RELEASE_SAVEPOINT);
    }
    savepointOpen = false;
  }

  /** The connection's transaction as the driver knows it, without a round trip. */
  TransactionState transactionState() {
    return pg.getTransactionState();
  }

  /**
   * Writes the completions and commits in one round trip. With {@code checkLast} (a transaction of
   * one task), the last task's deferred constraints are checked inside its savepoint first, so a
   * violation is that task's failure, its savepoint still open to roll back to.
   * {@code workerQueues}: {@link CompletionQueries#WORKER_QUEUES_SETTING} for the completions, the
   * queues whose hand-offs wake only this worker ("" for none).
   */
  int commit(boolean checkLast, String workerQueues) throws SQLException {
    List<Fence> fences = new ArrayList<>(completed.size());
    for (Run r : completed) {
      fences.add(r.task().fence());
    }
    Before before = !savepointOpen ? Before.NOTHING : checkLast ? Before.CHECK_AND_RELEASE : Before.RELEASE;
    int done = CompletionQueries.completeAllAndCommit(conn, fences, before, workerQueues);
    savepointOpen = false;
    return done;
  }

  /** Rolls back and returns the connection to the pool. */
  void abandon() {
    try {
      conn.rollback();
    } catch (SQLException ignored) {
      // the connection is gone; the server rolled back
    }
    close();
  }

  /** Returns the connection to the pool (the transaction has ended). */
  void close() {
    try {
      conn.setAutoCommit(true);
    } catch (SQLException ignored) {
      // the pool validates it
    }
    try {
      conn.close();
    } catch (SQLException ignored) {
      // nothing to do
    }
  }
}
