package dev.pgtask.internal.complete;

import java.time.Duration;
import java.time.Instant;

/**
 * How an attempt ended, as data: one type per outcome. The executor decides an outcome in one
 * place ({@link Outcomes}), and {@link OutcomeWriter} is the only code that writes one to the
 * database and counts it.
 */
public sealed interface Outcome {

  /** The name in metrics and logs when the outcome is applied as decided ({@link OutcomeName#decided}). */
  default String name() {
    return OutcomeName.decided(this).label();
  }

  /** The handler returned: the task is marked completed with its transaction's commit. */
  record Completed() implements Outcome {}

  /**
   * The attempt failed: retried at {@code retryAt} (an instant the handler chose) or after
   * {@code retryDelay} (database clock), or discarded when {@code discard} or no attempt is left.
   * {@code error} is the one line of the task's error history and {@code pgtask.tasks.last_error};
   * {@code detail} the full text the attempt history keeps ({@link ErrorText}: stack trace and
   * causes, bounded), or null when the failure has no throwable (a timeout, for one).
   */
  record Failed(String error, String detail, Duration retryDelay, Instant retryAt, boolean discard) implements Outcome {
    public Failed(String error, Duration retryDelay, Instant retryAt, boolean discard) {
      this(error, null, retryDelay, retryAt, discard);
    }

    public static Failed retry(String error, Duration delay) {
      return new Failed(error, null, delay, null, false);
    }

    public static Failed discarded(String error) {
      return new Failed(error, null, Duration.ZERO, null, true);
    }

    /** This failure with {@code cause}'s full text as its detail. */
    public Failed because(Throwable cause) {
      return new Failed(error, ErrorText.of(cause), retryDelay, retryAt, discard);
    }
  }

  /** The handler asked to run again after {@code delay}; the attempt does not count. */
  record Snoozed(Duration delay) implements Outcome {}

  /** Put back without spending an attempt: the worker is stopping (before or while it ran). */
  record Released() implements Outcome {}

  /**
   * Put back for {@code delay} without spending an attempt: its tenant's lock was busy, or (with
   * {@code limit}) a concurrency limit that applies to it was full when it was to start.
   */
  record Deferred(Duration delay, boolean limit) implements Outcome {

    /**
     * How long a task that lost the race for a limit's slot waits: short, because the claim passes
     * over full limits, so a lost race is two claims meeting on the last slot, not a full limit;
     * a second (the tenant lock's delay) per lost race halved a capped kind's throughput.
     */
    public static final Duration SLOT_RETRY = Duration.ofMillis(50);
  }

  /** Stopped by a cancellation (while it ran, or before it started): ends cancelled. */
  record Cancelled(String reason) implements Outcome {}

  /** The claim is no longer ours (rescued, cancelled or deleted meanwhile): nothing to write. */
  record Lost(String why) implements Outcome {}
}
