package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.types.DayToSecond;

/** The renewal of the leases of tasks a worker holds without a transaction. */
public final class LeaseQueries {

  private LeaseQueries() {}

  /**
   * Extends the claim lease of tasks this worker holds without a transaction (plain-mode tasks,
   * claimed tasks waiting to start); returns the ids renewed, each with whether a cancel request
   * stands for its attempt (a task missing is no longer this worker's, or is locked by a
   * transaction). A renewal is also a check: it proves the task still running as this claim.
   * Locks: those rows, briefly.
   */
  public static Map<Long, Boolean> extendLeases(DSLContext dsl, List<Fence> held, Duration lease) {
    if (held.isEmpty()) {
      return Map.of();
    }
    String owner = held.get(0).owner();
    List<Long> ids = new java.util.ArrayList<>(held.size());
    held.forEach(f -> ids.add(f.id()));
    JSONB attempts = JSONB.valueOf(Fence.attemptJson(held));
    // SKIP LOCKED: a row locked by a task transaction is alive anyway, and waiting for it could
    // deadlock with that transaction's next lock
    var h = TASK.as("h");
    Map<Long, Boolean> renewed = new java.util.HashMap<>();
    org.jooq.Field<Boolean> cancelRequested = DSL.field(TaskSql.cancelRequested()).as("cancel_requested");
    dsl.update(TASK)
        .set(TASK.LEASE_UNTIL, DSL.currentInstant().plus(DSL.val(DayToSecond.valueOf(lease))))
        .where(TASK.ID.in(DSL.select(h.ID).from(h)
            .where(h.ID.in(ids))
            .and(TaskSql.runningById(h))
            .and(h.OWNER.eq(owner))
            // fenced by attempt too: the same worker may hold a newer claim of a rescued task
            .and(h.ATTEMPT.eq(Fence.heldAttempt(DSL.val(attempts), h.ID)))
            .forNoKeyUpdate()
            .skipLocked()))
        .returningResult(TASK.ID, cancelRequested)
        .fetch()
        .forEach(r -> renewed.put(r.get(TASK.ID), Boolean.TRUE.equals(r.get(cancelRequested))));
    return renewed;
  }
}
