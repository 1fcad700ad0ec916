package dev.pgtask.internal.notifier;

import org.jooq.DSLContext;

/**
 * Periodic statements of an idle worker that the listener runs on its own session while it waits
 * for notifications (the poll's probe, the tick): a direct connection that no pool checks before
 * each use, and whose statements prove it alive, so the listener sends no ping of its own. The
 * listener runs the works that are due together, in one transaction (a round), on its thread.
 */
public interface SessionWork {

  /** {@code System.nanoTime()} when this work is due next. */
  long dueAt();

  /**
   * Whether this work runs in a round that starts at {@code now}: when it is due, or when it would
   * be due soon enough that running it a little early saves a round of its own.
   */
  boolean runsInRoundAt(long now);

  /**
   * The work's statements, in the round's transaction (on the listener's thread: keep it short).
   * Sets the work's next due time first, so that a round that fails is tried again a period later,
   * not at once. Returns what to do once the round has committed (never when it rolled back), or
   * null.
   */
  Runnable run(DSLContext tx, long now);
}
