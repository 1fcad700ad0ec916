package dev.pgtask;

import java.util.List;

/**
 * What a bulk operation changed ({@link PgTask#retryTasks}, {@link PgTask#cancelTasks},
 * {@link PgTask#deleteTasks}), or with a dry run would change: per state of the matched tasks, how
 * many it changed and how many it skipped (a state it cannot change, or held by another transaction
 * at that moment). For a cancellation, {@code changed} counts the running tasks whose worker was
 * asked to stop too ({@code pgtask.cancel_task}'s {@code cancel_requested}).
 *
 * @param dryRun whether nothing was changed (the counts say what would be)
 * @param states one entry per state of the matched tasks, by state name
 */
public record BulkResult(boolean dryRun, List<ForState> states) {

  public BulkResult {
    states = List.copyOf(states);
  }

  /**
   * The matched tasks of one state.
   *
   * @param state the state, as {@code pgtask.tasks} names it
   * @param changed how many the operation changed (or would change)
   * @param skipped how many it left as they were
   */
  public record ForState(TaskState state, long changed, long skipped) {}

  /** The tasks changed (or that would be), in all states. */
  public long changed() {
    return states.stream().mapToLong(ForState::changed).sum();
  }

  /** The tasks skipped, in all states. */
  public long skipped() {
    return states.stream().mapToLong(ForState::skipped).sum();
  }
}
