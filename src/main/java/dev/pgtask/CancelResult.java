package dev.pgtask;

/** What {@link PgTask#cancel(long)} did. */
public enum CancelResult {
  /** The task was queued and is now cancelled. */
  CANCELLED,
  /**
   * The task is running: its worker was told to interrupt the handler, roll back and mark it
   * cancelled. Watch its state; a worker that misses the message lets the attempt finish.
   */
  CANCEL_REQUESTED
}
