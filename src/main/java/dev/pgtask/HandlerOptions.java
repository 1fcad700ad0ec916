package dev.pgtask;

import java.time.Duration;
import java.util.Objects;

/**
 * How the tasks of one kind are executed: timeout and mode. Immutable.
 *
 * <p>{@link Mode#TRANSACTIONAL} (the default, and always used for tasks with a tenant) runs the
 * handler inside the task's transaction: its database work and the task's completion commit
 * together. {@link Mode#PLAIN} is for handlers that do no database work (e.g. a 30 s call to another
 * service): the handler runs outside any transaction and holds no pooled connection, the worker's
 * heartbeat keeps the claim's lease alive, and completions are recorded in batches, fenced by owner
 * and attempt. Plain mode is at-least-once, like classic queues: a worker that dies after the
 * handler returned but before the batch was recorded runs the task again elsewhere.
 */
public final class HandlerOptions {

  /** Execution modes. */
  public enum Mode {
    /** The handler runs inside the task's transaction (default). */
    TRANSACTIONAL,
    /** The handler runs outside any transaction; tasks with a tenant still run transactionally. */
    PLAIN
  }

  private static final HandlerOptions DEFAULTS = new HandlerOptions(null, Mode.TRANSACTIONAL, false);

  private final Duration timeout;
  private final Mode mode;
  private final boolean sharedTransaction;

  private HandlerOptions(Duration timeout, Mode mode, boolean sharedTransaction) {
    this.timeout = timeout;
    this.mode = mode;
    this.sharedTransaction = sharedTransaction;
  }

  /** Transactional, with the worker's default task timeout. */
  public static HandlerOptions defaults() {
    return DEFAULTS;
  }

  /** This kind's timeout, instead of the worker's default task timeout. */
  public HandlerOptions withTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
    return new HandlerOptions(timeout, mode, sharedTransaction);
  }

  /** This kind's execution mode. */
  public HandlerOptions withMode(Mode mode) {
    return new HandlerOptions(timeout, Objects.requireNonNull(mode, "mode"), sharedTransaction);
  }

  /**
   * Lets this kind's tasks share a transaction with other tasks whose kind says the same: up to the
   * worker's {@code commitBatch(maxTasks, maxTime)}, each task in its own savepoint, one COMMIT for
   * all. Faster for short tasks (one commit, one WAL flush for many), and safe only for handlers
   * that keep these rules, because a savepoint does not undo everything:
   * <ul>
   *   <li>no settings: a {@code SET}, {@code SET LOCAL} or {@code set_config} outlives the task's
   *       savepoint and would reach the next task. pgtask notices SQL text that starts with
   *       {@code SET}/{@code RESET} or calls {@code set_config} and commits right after such a task
   *       (the kind then runs alone), but not a setting changed inside a function, a {@code DO}
   *       block or behind a comment;</li>
   *   <li>no temporary objects: a temporary table ({@code ON COMMIT DROP} included) lives until the
   *       shared transaction ends, so the next task sees it;</li>
   *   <li>{@code now()}, {@code txid_current()} and the snapshot's start are the transaction's, not
   *       the task's;</li>
   *   <li>a finished task keeps its row locks, the locks of the rows it wrote and its tenant lock
   *       until the shared transaction commits (about {@code maxTime} at most), and its effects and
   *       completion become visible only then.</li>
   * </ul>
   * Failures never cost another task an attempt: a task that fails inside a transaction carrying
   * other tasks (a deadlock with another batch, a lock timeout, any exception) is rolled back to
   * its savepoint and runs again alone, in a transaction of its own, before its failure counts; a
   * task that fails only at COMMIT fails alone and the others run again alone. Tasks of kinds that
   * did not opt in always run in a transaction of their own.
   */
  public HandlerOptions withSharedTransaction() {
    return new HandlerOptions(timeout, mode, true);
  }

  /** Whether this kind's tasks may share a transaction ({@link #withSharedTransaction()}); default false. */
  public boolean sharesTransaction() {
    return sharedTransaction;
  }

  /** The execution mode. */
  public Mode mode() {
    return mode;
  }

  /** The timeout, or {@code null} for the worker's default. */
  public Duration timeout() {
    return timeout;
  }
}
