package dev.pgtask;

import java.util.Locale;

/**
 * What a child task does when one of its parents fails: is discarded, cancelled, or deleted
 * before it finished ({@link TaskOptions#withOnParentFailure}). A parent that fails and is retried
 * has not failed: only its final state counts.
 */
public enum ParentFailure {
  /** The child is cancelled, with the parent's id and state as its last error, and so are its own children (the default). */
  CANCEL,
  /** The child counts the failed parent as done and runs once its other parents completed. */
  RUN,
  /**
   * The child stays pending for an operator: {@code pgtask.release_task(id)} runs it,
   * {@code pgtask.cancel_task(id)} cancels it; a parent retried and completed later releases it too.
   */
  WAIT;

  /** The name used in SQL ({@code on_parent_failure}). */
  public String sqlName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
