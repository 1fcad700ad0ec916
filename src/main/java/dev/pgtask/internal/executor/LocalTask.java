package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.TaskContext;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.Fence;
import java.sql.Connection;
import java.time.Instant;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task claimed by this worker, from its claim until its outcome is written: its lifecycle
 * state, the stop requested of it, and (while its handler runs) the context the handler sees.
 *
 * <p><b>Who writes {@link #state}.</b> Every write is one call of {@link #moveTo}, under this
 * task's monitor, and only along the edges of {@link State#mayBecome} (anything else throws, and
 * changes nothing). That method is the only writer; its correctness does not depend on which
 * thread calls it. The calls, and the threads that make them:
 * <ul>
 *   <li>{@link State#WAITING} at construction: the claim's hand-over ({@link HeldTasks#register},
 *   on the producer's thread or a direct run's caller).</li>
 *   <li>{@link #locked}, {@link #running}, {@link #finishing}, {@link #requeued}: the executor
 *   thread that took the task (or a direct run's caller), in {@link TaskTransaction#lock},
 *   {@link TransactionalRun}, {@link PlainRun}, {@link BatchCommit} and {@link Executor#runOne}.
 *   Only code of this package can make them (package-private).</li>
 *   <li>{@link #done}: {@link HeldTasks#finished} only, on whichever thread lets the task go (its
 *   executor thread; the completer's thread, or the shutdown's flush thread, once a plain task's
 *   completion is written or given up; the producer's thread for a claim handed over after the
 *   executor closed; the shutdown's release thread). {@code DONE} is terminal and the first call
 *   wins, so a task is let go once, whoever races to do it.</li>
 * </ul>
 * Every other thread (listener, watchdog, lease keeper, held-task check, shutdown, the completer)
 * only sends the task a message: a stop request through {@link #requestStop} (first wins), which
 * also interrupts the handler and cancels its running statement when the task is
 * {@link State#RUNNING}; {@code RUNNING} is entered and left under the same monitor, so a stop
 * request sees the handler's thread and connection that belong to that state. The other packages
 * ({@code internal.complete}, {@code internal.lease}) see a task only through its public methods:
 * its fence and context, its stop reason, its lease instant.
 *
 * <p>Other fields: {@link #leaseFromNanos} is written only by
 * {@link dev.pgtask.internal.lease.Leases}, the one lease writer, on the thread of the renewal
 * whose answer it applies (the lease keeper's, through the pool; the listener's, after a renewal on
 * its session has committed; an executor thread, after a task transaction ended or at a plain
 * task's start fence); {@link #suspect} by the listener's hints and by the executor thread that
 * checks a plain task's start; the capacity slot once, by {@link Capacity#freeSlot}.
 */
public final class LocalTask implements TaskContext {

  private static final Logger log = LoggerFactory.getLogger(LocalTask.class);

  /** Where a claimed task is, and where it may go from there ({@link #mayBecome}). */
  enum State {
    /** Claimed, in the executor's queue: held without a transaction (its lease is kept alive). */
    WAITING,
    /** Re-locked in a task transaction, not started yet (a commit batch locks ahead). */
    LOCKED,
    /** Its handler runs. */
    RUNNING,
    /** Its handler has returned; the outcome is being written. */
    FINISHING,
    /** Its outcome is written (or it was lost): no longer held here. Terminal. */
    DONE;

    /**
     * The edges of the lifecycle: {@code WAITING -> LOCKED} (re-locked in a task transaction),
     * {@code WAITING | LOCKED -> RUNNING} (its handler starts: a plain task, or a claim's head whose
     * transaction the claim opened, starts from {@code WAITING}), {@code RUNNING -> FINISHING},
     * {@code WAITING | LOCKED | FINISHING -> WAITING} (its transaction ended before its outcome was
     * durable, or before it ran: it waits again), and anything but {@code DONE} to {@code DONE}.
     */
    boolean mayBecome(State next) {
      return switch (next) {
        case WAITING -> this == WAITING || this == LOCKED || this == FINISHING;
        case LOCKED -> this == WAITING;
        case RUNNING -> this == WAITING || this == LOCKED;
        case FINISHING -> this == RUNNING;
        case DONE -> this != DONE;
      };
    }
  }

  /** Why a task was asked to stop; the first request wins. */
  public enum Stop { NONE, CANCELLED, TIMED_OUT, SHUTDOWN, LOST }

  final Claimed claimed;
  private final Fence fence;
  /** System.nanoTime() before the claim was sent: the lease runs from a database instant after it. */
  final long claimedNanos;
  /** Plain mode: runs outside any transaction. */
  final boolean plain;
  private final String workerId;

  // written only by moveTo, under this object's monitor; read without it by others (lease keeping, views of what runs here)
  private volatile State state = State.WAITING;
  // written by Leases on the renewing thread (lease keeper, listener, executor thread): when the last renewal that covered it was sent
  private volatile long leaseFromNanos;
  // written by the listener (a hint named this task) and the executor thread checking a plain start; its start is checked first
  private volatile boolean suspect;

  // whether the executor still counts it against its capacity; cleared once (see Capacity.freeSlot)
  private final java.util.concurrent.atomic.AtomicBoolean slot = new java.util.concurrent.atomic.AtomicBoolean(true);

  // guarded by this
  private Stop stop = Stop.NONE;
  private Thread runner;
  private Connection rawConnection;
  private Connection connection;
  private DSLContext dsl;
  private JsonNode payload;
  private Instant deadline;

  LocalTask(Claimed claimed, String workerId, long claimedNanos, boolean plain) {
    this.claimed = claimed;
    this.fence = new Fence(claimed.id(), workerId, claimed.attempt());
    this.workerId = workerId;
    this.claimedNanos = claimedNanos;
    this.leaseFromNanos = claimedNanos;
    this.plain = plain;
  }

  /** The fencing record of its attempt: every write of its row is conditioned on it. */
  public Fence fence() {
    return fence;
  }

  /** The task's id. */
  public long id() {
    return claimed.id();
  }
  /** The rate limits this task's claim charged a token of (given back if it is put back unstarted). */
  public int[] chargedLimits() {
    return claimed.charged();
  }


  /** Where the task is now (read without the monitor: a moment's view). */
  State state() {
    return state;
  }

  /**
   * The only write of {@link #state}: moves it to {@code next} if the lifecycle allows it from where
   * it is ({@link State#mayBecome}); otherwise throws and changes nothing. The caller holds this
   * object's monitor.
   */
  private void moveTo(State next) {
    State now = state;
    if (!now.mayBecome(next)) {
      throw new IllegalStateException("task " + id() + " attempt " + claimed.attempt() + " cannot become " + next
          + " from " + now);
    }
    state = next;
  }

  /** Its executor thread: the task is re-locked in a task transaction. */
  synchronized void locked() {
    moveTo(State.LOCKED);
  }

  /** Its executor thread: the handler starts on this thread, with this view of the transaction (null: plain). */
  synchronized void running(Connection connection, DSLContext dsl, Connection raw, JsonNode payload, Instant deadline) {
    moveTo(State.RUNNING);
    this.runner = Thread.currentThread();
    this.connection = connection;
    this.dsl = dsl;
    this.rawConnection = raw;
    this.payload = payload;
    this.deadline = deadline;
  }

  /** Its executor thread: the handler has returned; no stop request may touch its connection any more. */
  synchronized void finishing() {
    moveTo(State.FINISHING);
    this.connection = null;
    this.dsl = null;
    this.rawConnection = null;
    this.runner = null;
  }

  /** Its executor thread: its transaction ended before it ran or before its outcome was durable; it waits again. */
  synchronized void requeued() {
    moveTo(State.WAITING);
  }

  /**
   * The task is let go (its outcome is written, or it was lost): called by {@link HeldTasks#finished}
   * only, on whichever thread lets it go. Returns true for the first call only; later calls change
   * nothing. A handler's view of its transaction ends here too (if pgtask's own code failed while it
   * ran).
   */
  synchronized boolean done() {
    if (state == State.DONE) {
      return false;
    }
    moveTo(State.DONE);
    this.connection = null;
    this.dsl = null;
    this.rawConnection = null;
    this.runner = null;
    return true;
  }

  /**
   * Asks the task to stop; the first reason wins (returns false for later ones). A running handler
   * is interrupted and its running statement cancelled; a task that has not started ends without
   * running when its thread takes it.
   */
  public boolean requestStop(Stop reason) {
    synchronized (this) {
      if (stop != Stop.NONE || state == State.DONE) {
        return false;
      }
      stop = reason;
      if (state != State.RUNNING) {
        return true;
      }
      runner.interrupt();
      if (rawConnection != null) {
        try {
          rawConnection.unwrap(PGConnection.class).cancelQuery();
        } catch (Exception e) {
          log.debug("pgtask: could not cancel the running statement of task {}", id(), e);
        }
      }
      return true;
    }
  }

  /** The first stop requested of it ({@link Stop#NONE}: none). */
  public synchronized Stop stopReason() {
    return stop;
  }

  /** System.nanoTime() of the send of the last renewal (or claim) that found it this worker's. */
  public long leaseFromNanos() {
    return leaseFromNanos;
  }

  /** A renewal sent at {@code sentNanos} found it this worker's; called only by {@code Leases}. */
  public void leaseRenewed(long sentNanos) {
    leaseFromNanos = sentNanos;
  }

  boolean suspect() {
    return suspect;
  }

  void markSuspect() {
    suspect = true;
  }

  /** Frees its capacity slot; true the first time only. */
  boolean freeSlot() {
    return slot.compareAndSet(true, false);
  }

  void clearSuspect() {
    suspect = false;
  }

  // ---- TaskContext, for the handler ----

  @Override
  public long taskId() {
    return claimed.id();
  }

  @Override
  public String kind() {
    return claimed.kind();
  }

  @Override
  public String queue() {
    return claimed.queue();
  }

  @Override
  public String tenant() {
    return claimed.tenant();
  }

  @Override
  public int attempt() {
    return claimed.attempt();
  }

  @Override
  public int maxAttempts() {
    return claimed.maxAttempts();
  }

  @Override
  public String idempotencyKey() {
    return "pgtask-" + claimed.id();
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public synchronized Instant deadline() {
    return deadline;
  }

  @Override
  public synchronized JsonNode payload() {
    return payload;
  }

  @Override
  public Connection connection() {
    Connection c;
    synchronized (this) {
      c = connection;
    }
    if (c == null) {
      throw new IllegalStateException(noTransaction());
    }
    return c;
  }

  @Override
  public DSLContext dsl() {
    DSLContext d;
    synchronized (this) {
      d = dsl;
    }
    if (d == null) {
      throw new IllegalStateException(noTransaction());
    }
    return d;
  }

  @Override
  public void setResult(Object result) {
    TaskResults.store(connection(), fence, result);
  }

  @Override
  public java.util.Map<Long, JsonNode> parentResults() {
    return TaskResults.ofParents(connection(), claimed.id());
  }

  private String noTransaction() {
    return plain
        ? "task " + claimed.id() + " of kind " + claimed.kind() + " runs in plain mode: it has no transaction"
        : "the task's transaction is over";
  }
}
