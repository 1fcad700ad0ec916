package dev.pgtask.internal.lease;

import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.HeldQueries;
import java.util.List;
import java.util.Map;

/**
 * What the {@link LeaseKeeper} needs of the registry of held tasks (the executor's
 * {@code HeldTasks}): which tasks to renew, which to check, and where a check's answer goes. The
 * keeper writes nothing of a task itself: renewals go through {@link Leases}, a check's answer to
 * {@link #apply}, which turns it into stop requests.
 */
public interface HeldRegistry {

  /** The tasks whose lease must be kept alive: those no transaction of this worker has locked. */
  List<LocalTask> heldWithoutTransaction();

  /** A copy of the held tasks. */
  List<LocalTask> held();

  /** Whether a claim's answer may be on its way (tasks held soon that are not registered yet). */
  boolean claimInFlight();

  /** A held-task check is about to read: its number, for {@link #apply}. */
  long checkStarting();

  /** Applies what {@link HeldQueries#checkHeld} found in check number {@code check}. */
  void apply(Map<Long, HeldQueries.Held> found, long check);
}
