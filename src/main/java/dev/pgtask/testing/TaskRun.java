package dev.pgtask.testing;

import dev.pgtask.TaskState;
import java.time.Instant;

/**
 * How one attempt run by {@link PgTaskTester} ended, and the task as it was left.
 *
 * @param taskId the task's id
 * @param kind the task's kind
 * @param attempt the attempt's number (1 for the first)
 * @param result how the attempt ended
 * @param error the recorded error of a failed attempt ({@link Result#RETRY_SCHEDULED},
 *     {@link Result#DISCARDED}), else {@code null}
 * @param state the task's state after the attempt, as {@code pgtask.tasks} shows it
 * @param runAt the task's run time after the attempt: when a retry, snooze or deferral is due
 */
public record TaskRun(long taskId, String kind, int attempt, Result result, String error, TaskState state,
    Instant runAt) {

  /** How an attempt ended. */
  public enum Result {
    /** The handler returned; the task completed with its transaction's commit. */
    COMPLETED,
    /** The attempt failed and the task is retryable at {@link TaskRun#runAt()}. */
    RETRY_SCHEDULED,
    /** The attempt failed and no attempt is left, or the handler discarded the task. */
    DISCARDED,
    /** The task was cancelled before or while it ran. */
    CANCELLED,
    /** The handler snoozed the task until {@link TaskRun#runAt()} (no attempt spent). */
    SNOOZED,
    /** Its tenant's lock was held elsewhere: put back until {@link TaskRun#runAt()} without running (no attempt spent). */
    DEFERRED,
    /** Put back without spending an attempt (the worker was stopping). */
    RELEASED,
    /** Nothing was written: the claim was no longer this worker's (the log says why). */
    LOST
  }

  static Result resultOf(dev.pgtask.internal.complete.OutcomeName outcome) {
    return switch (outcome) {
      case COMPLETED -> Result.COMPLETED;
      case RETRIED -> Result.RETRY_SCHEDULED;
      case DISCARDED -> Result.DISCARDED;
      case CANCELLED -> Result.CANCELLED;
      case SNOOZED -> Result.SNOOZED;
      case DEFERRED -> Result.DEFERRED;
      case RELEASED -> Result.RELEASED;
      case LOST -> Result.LOST;
    };
  }

  @Override
  public String toString() {
    return "task " + taskId + " (" + kind + ") attempt " + attempt + ": " + result
        + (error != null ? " [" + error + "]" : "")
        + (result == Result.RETRY_SCHEDULED || result == Result.SNOOZED || result == Result.DEFERRED
            ? ", due again at " + runAt : "");
  }
}
