package dev.pgtask;

/** What {@link PgTask#cancel(long)} did. */
public enum CancelResult {
  /** The task was queued and is now cancelled. */
  CANCELLED,
  /**
   * The task is running: its worker was told to interrupt the handler, roll back and mark it
   * cancelled. Watch its state. The request is also written down: a worker that was not listening
   * reads it when it listens again, and a run that ends other than by completing (the handler
   * fails, the task is released, it snoozes, its worker dies) ends the task cancelled. Only a
   * handler that completes before the request reaches it leaves the task completed.
   */
  CANCEL_REQUESTED
}
