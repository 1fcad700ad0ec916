package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.PAUSED_QUEUE;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** The statements of an idle worker's poll when it runs on the listener's session (see {@code Listener}). */
public final class IdleQueries {

  private IdleQueries() {}

  /**
   * Whether a claim of this worker would find a task now: a task of one of {@code queues} (not
   * paused) and {@code kinds}, available or retryable, not waiting behind its tenant's head, due,
   * whose tenant runs nothing right now. The conditions of the claim's locking select
   * ({@code ClaimQueries}), read without locking anything: rows another worker's claim holds right
   * now count here and are skipped by the claim (one claim that finds nothing). Reads the claimable
   * index; locks nothing.
   */
  public static boolean claimable(DSLContext dsl, List<String> queues, List<String> kinds) {
    return dsl.fetchExists(claimableTask(queues, kinds));
  }

  /**
   * Notifies each of {@code queues} that it has a task due now ({@code WakePayload.dueNow}), in one
   * statement (autocommit: sent as it returns), when a claim of this worker would find a task
   * ({@link #claimable}); returns how many queues it notified (0: nothing claimable, nothing sent).
   */
  public static int notifyIfClaimable(DSLContext dsl, List<String> queues, List<String> kinds) {
    return dsl.fetchValue(DSL.field("(SELECT count(*) FROM (SELECT pg_notify({0}, q.q) FROM unnest({1}) AS q(q)"
        + " WHERE {2}) AS s)::integer", SQLDataType.INTEGER,
        DSL.inline(dev.pgtask.internal.wakeup.WakePayload.CHANNEL),
        DSL.val(queues.stream().map(dev.pgtask.internal.wakeup.WakePayload::dueNow).toArray(String[]::new))
            .cast(SQLDataType.VARCHAR.array()),
        DSL.exists(claimableTask(queues, kinds))));
  }

  /**
   * How long until each of the earliest {@code limit} distinct due times of this worker's tasks
   * that are not due yet (available or retryable, not waiting behind their tenant's head, of one
   * of {@code queues} not paused and of {@code kinds}, run_at in the future and finite), earliest
   * first, by the database's clock. What a starting worker arms its due timer with: the
   * notifications of those tasks' enqueues were sent before it listened. Reads the claimable
   * index; locks nothing.
   */
  public static List<java.time.Duration> upcomingDue(DSLContext dsl, List<String> queues, List<String> kinds,
      int limit) {
    Task c = TASK.as("c");
    var due = dsl.selectDistinct(c.RUN_AT)
        .from(c)
        .where(c.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
        .and(c.BLOCKED.isFalse())
        .and(c.QUEUE.in(queues))
        .and(c.RUN_AT.gt(DSL.currentInstant()))
        .and(c.RUN_AT.lt(DSL.field("'infinity'::timestamptz", java.time.Instant.class)))
        .and(c.KIND.in(kinds))
        .and(DSL.notExists(DSL.selectOne().from(PAUSED_QUEUE).where(PAUSED_QUEUE.QUEUE.eq(c.QUEUE))))
        .orderBy(c.RUN_AT)
        .limit(limit)
        .asTable("d");
    Field<Long> millis = DSL.field("ceil(extract(epoch FROM {0} - clock_timestamp()) * 1000)::bigint", Long.class,
        due.field(c.RUN_AT));
    return dsl.select(millis).from(due).orderBy(due.field(c.RUN_AT)).fetch(r -> java.time.Duration.ofMillis(
        Math.max(0, r.value1())));
  }

  private static org.jooq.Select<?> claimableTask(List<String> queues, List<String> kinds) {
    Task c = TASK.as("c");
    Task running = TASK.as("r");
    return DSL.selectOne()
        .from(c)
        .where(c.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
        .and(c.BLOCKED.isFalse())
        .and(c.QUEUE.in(queues))
        .and(c.RUN_AT.le(DSL.currentInstant()))
        .and(c.KIND.in(kinds))
        .and(DSL.notExists(DSL.selectOne().from(PAUSED_QUEUE).where(PAUSED_QUEUE.QUEUE.eq(c.QUEUE))))
        .and(c.TENANT_ID.isNull().or(DSL.notExists(DSL.selectOne().from(running)
            .where(running.TENANT_ID.eq(c.TENANT_ID))
            .and(running.BLOCKED.isFalse())
            .and(running.STATE.eq(DSL.inline(TaskState.running))))));
  }
}
