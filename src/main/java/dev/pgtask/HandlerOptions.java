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

  private static final HandlerOptions DEFAULTS = new HandlerOptions(null, Mode.TRANSACTIONAL);

  private final Duration timeout;
  private final Mode mode;

  private HandlerOptions(Duration timeout, Mode mode) {
    this.timeout = timeout;
    this.mode = mode;
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
    return new HandlerOptions(timeout, mode);
  }

  /** This kind's execution mode. */
  public HandlerOptions withMode(Mode mode) {
    return new HandlerOptions(timeout, Objects.requireNonNull(mode, "mode"));
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
