package dev.pgtask.internal.complete;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.util.Locale;

/**
 * How an attempt ended, as it is counted and named: the one place where an {@link Outcome} and the
 * state its write left the task in become a name. The worker's counters
 * ({@code WorkerStats.counted}), the metrics' {@code outcome} tag ({@link #label()}), logs and the
 * testing helpers' report ({@code DirectRun.Ran}) all take it from here.
 */
public enum OutcomeName {
  /** The handler returned; the task completed with its transaction's commit. */
  COMPLETED,
  /** The attempt failed and the task is retryable. */
  RETRIED,
  /** The attempt failed and no attempt is left, or the handler discarded the task. */
  DISCARDED,
  /** Cancelled before or while it ran, or a put-back that met a cancel request. */
  CANCELLED,
  /** The handler asked to run again later (no attempt spent). */
  SNOOZED,
  /** Put back without spending an attempt: the worker was stopping. */
  RELEASED,
  /** Put back for a while without running: its tenant's lock was busy. */
  DEFERRED,
  /** Nothing was written: the claim was no longer this worker's. */
  LOST;

  /** The name in metrics and logs: lower case ({@code completed}, {@code retried}, ...). */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  @Override
  public String toString() {
    return label();
  }

  /** The name of {@code o} when it is written as decided. */
  static OutcomeName decided(Outcome o) {
    if (o instanceof Outcome.Completed) {
      return COMPLETED;
    }
    if (o instanceof Outcome.Failed f) {
      return f.discard() ? DISCARDED : RETRIED;
    }
    if (o instanceof Outcome.Snoozed) {
      return SNOOZED;
    }
    if (o instanceof Outcome.Released) {
      return RELEASED;
    }
    if (o instanceof Outcome.Deferred) {
      return DEFERRED;
    }
    if (o instanceof Outcome.Cancelled) {
      return CANCELLED;
    }
    return LOST;
  }

  /**
   * The name of {@code o} as counted, once its write is durable: {@code result} is the state the
   * write left the task in (null: the fence did not match, nothing was written). A deferral is a
   * deferral whether or not its write matched, unless a cancel request turned it into a
   * cancellation; a put-back or a failure may end cancelled (a cancel request met) or discarded (no
   * attempt left) instead of as decided.
   */
  static OutcomeName counted(Outcome o, TaskState result) {
    if (o instanceof Outcome.Deferred && result != TaskState.cancelled) {
      return DEFERRED;
    }
    if (result == null) {
      return LOST;
    }
    if (o instanceof Outcome.Completed) {
      return COMPLETED;
    }
    if (result == TaskState.cancelled) {
      return CANCELLED;
    }
    if (result == TaskState.discarded) {
      return DISCARDED;
    }
    return decided(o);
  }
}
