package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TENANT;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;

/** Reading tasks as they are stored, for the testing helpers' assertions. Locks nothing. */
public final class InspectQueries {

  private InspectQueries() {}

  /** A stored task; {@code state} as {@code pgtask.tasks} shows it (scheduled, waiting derived). */
  public record StoredTask(long id, String kind, String queue, String tenant, String state, String payloadJson,
      int priority, int attempt, int maxAttempts, Instant runAt, Instant createdAt, String dedupeKey,
      String lastError) {}

  /**
   * The tasks matching the given filters (null: any; {@code id}: that task only), in id order. Reads pgtask.task and
   * pgtask.tenant: the role needs to read them (the owner can; a producer-only role cannot).
   */
  public static List<StoredTask> find(DSLContext dsl, List<String> kinds, List<String> queues, List<String> tenants,
      Instant runAtFrom, Instant runAtTo, Long id) {
    Condition c = DSL.noCondition();
    if (kinds != null) {
      c = c.and(TASK.KIND.in(kinds));
    }
    if (queues != null) {
      c = c.and(TASK.QUEUE.in(queues));
    }
    if (tenants != null) {
      c = c.and(TENANT.NAME.in(tenants));
    }
    if (runAtFrom != null) {
      c = c.and(TASK.RUN_AT.ge(runAtFrom));
    }
    if (runAtTo != null) {
      c = c.and(TASK.RUN_AT.le(runAtTo));
    }
    if (id != null) {
      c = c.and(TASK.ID.eq(id));
    }
    var state = DSL.when(TASK.BLOCKED, DSL.inline("waiting"))
        .when(TASK.STATE.eq(DSL.inline(dev.pgtask.internal.sql.gen.enums.TaskState.available))
            .and(TASK.RUN_AT.gt(DSL.currentInstant())), DSL.inline("scheduled"))
        .otherwise(TASK.STATE.cast(String.class)).as("state");
    var lastError = DSL.when(TASK.STATE.ne(DSL.inline(dev.pgtask.internal.sql.gen.enums.TaskState.completed)),
        DSL.field("{0} -> -1 ->> 'error'", String.class, TASK.ERRORS)).as("last_error");
    List<StoredTask> out = new ArrayList<>();
    for (var r : dsl.select(TASK.ID, TASK.KIND, TASK.QUEUE, TENANT.NAME, state, TASK.PAYLOAD, TASK.PRIORITY,
            TASK.ATTEMPT, TASK.MAX_ATTEMPTS, TASK.RUN_AT, TASK.CREATED_AT, TASK.DEDUPE_KEY, lastError)
        .from(TASK)
        .leftJoin(TENANT).on(TENANT.ID.eq(TASK.TENANT_ID))
        .where(c)
        .orderBy(TASK.ID)
        .fetch()) {
      out.add(new StoredTask(r.get(TASK.ID), r.get(TASK.KIND), r.get(TASK.QUEUE), r.get(TENANT.NAME), r.get(state),
          r.get(TASK.PAYLOAD).data(), r.get(TASK.PRIORITY), r.get(TASK.ATTEMPT), r.get(TASK.MAX_ATTEMPTS),
          r.get(TASK.RUN_AT), r.get(TASK.CREATED_AT), r.get(TASK.DEDUPE_KEY), r.get(lastError)));
    }
    return out;
  }

  /** The state of one task as {@code pgtask.tasks} shows it, or null when there is no such task. */
  public static StoredTask byId(DSLContext dsl, long id) {
    List<StoredTask> found = find(dsl, null, null, null, null, null, id);
    return found.isEmpty() ? null : found.get(0);
  }

  /**
   * How many tasks of {@code kinds} in {@code queues} a claim would find now: queued, due by the
   * database clock, not waiting behind a tenant head.
   */
  public static int countDue(DSLContext dsl, List<String> queues, List<String> kinds) {
    return dsl.fetchCount(TASK, TASK.QUEUE.in(queues).and(TASK.KIND.in(kinds))
        .and(TASK.STATE.in(dev.pgtask.internal.sql.gen.enums.TaskState.available,
            dev.pgtask.internal.sql.gen.enums.TaskState.retryable))
        .and(TASK.BLOCKED.isFalse())
        .and(TASK.RUN_AT.le(DSL.currentInstant())));
  }
}
