package dev.pgtask.testing;

import java.util.List;

/**
 * What {@link PgTaskTester#drain()} ran, in the order it ran: one {@link TaskRun} per attempt (a
 * task retried without delay appears once per attempt).
 *
 * @param runs the attempts, in order
 */
public record DrainReport(List<TaskRun> runs) {

  /** Copies the list. */
  public DrainReport {
    runs = List.copyOf(runs);
  }

  /** The attempts that ended with {@code result}. */
  public List<TaskRun> withResult(TaskRun.Result result) {
    return runs.stream().filter(r -> r.result() == result).toList();
  }

  /** The attempts that completed their task. */
  public List<TaskRun> completed() {
    return withResult(TaskRun.Result.COMPLETED);
  }

  /** The attempts of one task. */
  public List<TaskRun> ofTask(long taskId) {
    return runs.stream().filter(r -> r.taskId() == taskId).toList();
  }

  /** Whether nothing was due. */
  public boolean isEmpty() {
    return runs.isEmpty();
  }

  /**
   * Throws {@link AssertionError} unless every attempt completed its task (and at least one ran),
   * listing the attempts that did not.
   */
  public DrainReport assertAllCompleted() {
    if (runs.isEmpty()) {
      throw new AssertionError("expected tasks to run and complete, but no task was due");
    }
    List<TaskRun> other = runs.stream().filter(r -> r.result() != TaskRun.Result.COMPLETED).toList();
    if (!other.isEmpty()) {
      throw new AssertionError("expected every attempt to complete, but " + other.size() + " of " + runs.size()
          + " did not: " + other);
    }
    return this;
  }

  @Override
  public String toString() {
    return runs.isEmpty() ? "no task was due" : runs.size() + " attempt(s): " + runs;
  }
}
