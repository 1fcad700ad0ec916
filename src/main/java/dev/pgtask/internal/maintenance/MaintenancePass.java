package dev.pgtask.internal.maintenance;

import java.time.Duration;

/**
 * One maintenance pass: a class of its own with its own small {@code Config}, run by the driver
 * ({@link Maintenance}) on its schedule, or once at once through {@link #runOnce()}. A pass's
 * statements and what follows their commit are its {@link PassStatements}, which the driver runs in
 * its one bounded transaction ({@link PassTransaction}).
 *
 * @param <R> what one run of the pass did (the tasks it rescued, the rows it deleted, ...)
 */
public interface MaintenancePass<R> {

  /** The pass's name, for logs and tests. */
  String name();

  /**
   * How often the pass runs: its period on the leader (or on every worker), or, for a pass that
   * rides in another pass's transaction, how often it runs at most.
   */
  Duration interval();

  /**
   * Runs the pass once now on this worker, leader or not (tests, operations), under its pass lock
   * when it has one (at most one of its kind at a time in the cluster), and returns what it did
   * (nothing, when another worker held the lock). Blocks the caller's thread.
   */
  R runOnce();
}
