package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.CANCEL_REQUEST;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;

/**
 * The durable checks of what a worker holds: which of its attempts have a cancel request or are
 * no longer its own ({@link #checkHeld}), and whether one attempt still runs as its claim after a
 * lost COMMIT answer ({@link #stillRunningAs}). The renewal of leases, also a check, is
 * {@link LeaseQueries}'.
 */
public final class HeldQueries {

  private HeldQueries() {}

  /**
   * Whether the task still runs under fence {@code f}, read once the transaction that holds its row
   * (if any) has ended: after a COMMIT whose answer was lost, false means that COMMIT went through
   * (nothing else changes a running task within its lease). Locks: the row, FOR SHARE, so it waits
   * for a COMMIT still in progress (within the caller's lock_timeout) and holds the row until the
   * caller's transaction ends.
   */
  public static boolean stillRunningAs(DSLContext dsl, Fence f) {
    return dsl.fetchExists(dsl.selectOne().from(TASK).where(f.condition()).forShare());
  }

  /** What {@link #checkHeld} found about a task this worker holds. */
  public enum HeldState {
    /** {@code pgtask.cancel_task} asked for the attempt to be cancelled. */
    CANCEL_REQUESTED,
    /** The claim is no longer this worker's: the task was cancelled, rescued or deleted. */
    GONE
  }

  /**
   * What {@link #checkHeld} found about one attempt of a task: an answer about attempt 1 says
   * nothing about attempt 2 of the same task, which the same worker may have claimed since (after
   * a rescue of attempt 1) while the check was on its way.
   */
  public record Held(HeldState state, int attempt) {}

  /**
   * Reads, from durable state only, what has happened to the tasks this worker holds: the cancel
   * requests that stand for its running attempts (by {@code owner}, also for tasks whose claim it
   * has not registered yet), and the tasks of {@code held} that are no longer running as held.
   * This is how a worker verifies a cancellation hint: the notification only says when to look.
   * Each answer names the attempt it is about. Locks: none.
   */
  public static Map<Long, Held> checkHeld(DSLContext dsl, String owner, List<Fence> held)
      throws java.sql.SQLException {
    Map<Long, Held> found = new java.util.HashMap<>();
    var requested = dsl.select(CANCEL_REQUEST.TASK_ID, CANCEL_REQUEST.ATTEMPT)
        .from(CANCEL_REQUEST)
        .join(TASK).on(TASK.ID.eq(CANCEL_REQUEST.TASK_ID)).and(TASK.ATTEMPT.eq(CANCEL_REQUEST.ATTEMPT))
        .where(TASK.OWNER.eq(owner))
        .and(TASK.STATE.eq(DSL.inline(TaskState.running)));
    if (held.isEmpty()) {
      requested.fetch().forEach(r -> found.put(r.get(CANCEL_REQUEST.TASK_ID),
          new Held(HeldState.CANCEL_REQUESTED, r.get(CANCEL_REQUEST.ATTEMPT))));
      return found;
    }
    Map<Long, Integer> heldAttempts = new java.util.HashMap<>();
    held.forEach(f -> heldAttempts.put(f.id(), f.attempt()));
    Long[] ids = held.stream().map(Fence::id).toArray(Long[]::new);
    var h = DSL.unnest(ids).as("h", "id");
    Field<Long> hId = h.field("id", Long.class);
    var t = TASK.as("t");
    var gone = dsl.select(hId)
        .from(h)
        .whereNotExists(DSL.selectOne().from(t)
            .where(t.ID.eq(hId))
            .and(t.STATE.eq(DSL.inline(TaskState.running)))
            .and(t.OWNER.eq(owner))
            .and(t.ATTEMPT.eq(Fence.heldAttempt(DSL.val(JSONB.valueOf(Fence.attemptJson(held))), hId))));
    for (var r : requested.fetch()) {
      found.put(r.get(CANCEL_REQUEST.TASK_ID), new Held(HeldState.CANCEL_REQUESTED, r.get(CANCEL_REQUEST.ATTEMPT)));
    }
    for (var r : gone.fetch()) {
      found.put(r.get(hId), new Held(HeldState.GONE, heldAttempts.get(r.get(hId))));
    }
    return found;
  }
}
