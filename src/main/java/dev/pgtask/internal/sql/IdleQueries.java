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
   * Plans the rest of the caller's transaction as the claims are planned ({@link TaskSql#GENERIC_PLAN}):
   * without sequential scans of the task table and without JIT. The statements below read the
   * claimable index with the claim's conditions, and the planner multiplies the selectivities of
   * those conditions as if they were independent: beside a long history and a backlog in another
   * queue (issue 31: 1,000,000 rows, half completed in the drained queue, half available in another)
   * it estimated 126,912 claimable rows of the drained queue where there were 20,000, a cost past
   * {@code jit_above_cost}, and the server compiled the statement on every execution: 300–600 ms
   * each, 348 executions of the owed spill over 25 ms in one run. Even on an emptied table a
   * 20,000-task drain lifted its cost past 100,000 (JIT on each execution). Locks: none.
   */
  public static void planAsClaims(DSLContext tx) {
    tx.select(
            DSL.function("set_config", SQLDataType.CLOB, DSL.inline("enable_seqscan"), DSL.inline("off"), DSL.inline(true)),
            DSL.function("set_config", SQLDataType.CLOB, DSL.inline("enable_bitmapscan"), DSL.inline("off"), DSL.inline(true)),
            DSL.function("set_config", SQLDataType.CLOB, DSL.inline("jit"), DSL.inline("off"), DSL.inline(true)))
        .fetch();
  }

  /**
   * Whether a claim of this worker would find a task now: a task of one of {@code queues} (not
   * paused) and {@code kinds}, available or retryable, not waiting behind its tenant's head, due,
   * whose tenant runs nothing right now. The conditions of the claim's locking select
   * ({@code ClaimQueries}), read without locking anything: rows another worker's claim holds right
   * now count here and are skipped by the claim (one claim that finds nothing). In the caller's
   * transaction, planned as the claims are ({@link #planAsClaims}, for the rest of it). Reads the
   * claimable index; locks nothing.
   */
  public static boolean claimable(DSLContext tx, List<String> queues, List<String> kinds) {
    planAsClaims(tx);
    return tx.fetchExists(claimableTask(queues, kinds));
  }

  /**
   * Notifies each of {@code queues} that it has a task due now ({@code WakePayload.dueNow}), when a
   * claim of this worker would find a task ({@link #claimable}); returns how many queues it notified
   * (0: nothing claimable, nothing sent). One transaction on a connection of {@code dataSource}:
   * the planner settings of {@link #planAsClaims}, the statement, and the COMMIT that sends the
   * notifications. Locks: none.
   */
  public static int notifyIfClaimable(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds) {
    try (java.sql.Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        DSLContext tx = Sql.using(c);
        planAsClaims(tx);
        Integer notified = tx.fetchValue(DSL.field("(SELECT count(*) FROM (SELECT pg_notify({0}, q.q) FROM unnest({1}) AS q(q)"
            + " WHERE {2}) AS s)::integer", SQLDataType.INTEGER,
            DSL.inline(dev.pgtask.internal.wakeup.WakePayload.CHANNEL),
            DSL.val(queues.stream().map(dev.pgtask.internal.wakeup.WakePayload::dueNow).toArray(String[]::new))
                .cast(SQLDataType.VARCHAR.array()),
            DSL.exists(claimableTask(queues, kinds))));
        c.commit();
        return notified == null ? 0 : notified;
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (java.sql.SQLException e) {
      throw new org.jooq.exception.DataAccessException(e.getMessage(), e);
    }
  }

  /**
   * How long until each of the earliest {@code limit} distinct due times of this worker's tasks
   * that are not due yet (available or retryable, not waiting behind their tenant's head, of one
   * of {@code queues} not paused and of {@code kinds}, run_at in the future and finite), earliest
   * first, by the database's clock. What a starting worker arms its due timer with: the
   * notifications of those tasks' enqueues were sent before it listened. In the caller's
   * transaction, planned as the claims are ({@link #planAsClaims}, for the rest of it). Reads the
   * claimable index; locks nothing.
   */
  public static List<java.time.Duration> upcomingDue(DSLContext tx, List<String> queues, List<String> kinds,
      int limit) {
    planAsClaims(tx);
    Task c = TASK.as("c");
    var due = tx.selectDistinct(c.RUN_AT)
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
    return tx.select(millis).from(due).orderBy(due.field(c.RUN_AT)).fetch(r -> java.time.Duration.ofMillis(
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
