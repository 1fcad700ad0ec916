package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.util.ArrayList;
import java.util.List;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The claim's spill ({@link #spill}): the notification a claim sends when it leaves claimable tasks
 * behind that the other workers may not know of. A part of both claim statements
 * ({@link ClaimStatements}).
 */
final class ClaimSpill {

  private ClaimSpill() {}

  /**
   * Whether a task other than {@code taken} is claimable in the worker's queues (see {@link #spill}):
   * the first such task in claim order, so the server reads the claimable index as the claim does
   * (a plan free to stop at any matching row chose a sequential scan of the table).
   */
  private static Condition claimableBeyond(Field<Long[]> taken, int queueCount) {
    Task p = TASK.as("spill_probe");
    Task running = TASK.as("spill_running");
    return DSL.field(DSL.select(p.ID).from(p)
        .where(p.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
        .and(p.BLOCKED.isFalse())
        .and(probeQueues(p, queueCount))
        .and(p.RUN_AT.le(DSL.currentInstant()))
        .and(p.KIND.eq(DSL.any(DSL.field(DSL.select(DSL.param("spill_kinds", String[].class)))
            .cast(SQLDataType.VARCHAR.array()))))
        .and(p.TENANT_ID.isNull().or(DSL.notExists(DSL.selectOne().from(running)
            .where(running.TENANT_ID.eq(p.TENANT_ID))
            .and(running.BLOCKED.isFalse())
            .and(running.STATE.eq(DSL.inline(TaskState.running))))))
        .and(p.ID.ne(DSL.all(taken)))
        .orderBy(p.PRIORITY, p.PASS.asc().nullsFirst(), p.RUN_AT, p.ID)
        .limit(DSL.inline(1))).isNotNull();
  }

  /**
   * The claim a worker makes after its own hand-offs (with {@code spill}) may leave claimable
   * tasks behind that the other workers do not know of: a worker's completions wake only itself for
   * what they hand on in its queues (db/R__02a_wakeup.sql), and it may hand on more than it
   * has room for. When such a claim locks as many rows as it asked for and finds a claimable task
   * beyond them (the claim's conditions, its queues' pauses aside), it notifies each of the
   * worker's queues, sent with its commit, so idle workers claim too. A claim that came back short,
   * or took the last task, sends nothing: with small rooms (a worker of concurrency 4 with 3 tasks
   * running claims 1) a notification for every full claim woke every idle worker for nothing; and
   * every other claim sends nothing, because whatever made its tasks claimable notified everyone
   * (a notification per full claim in a drain halved plain mode's throughput). Without {@code
   * spill} the threshold is out of reach and the probe never runs. An uncorrelated scalar
   * sub-select: the server evaluates it once per claim (an InitPlan), not per returned row.
   * Returns the count notified.
   */
  static Field<Integer> spill(Field<Integer> lockedCount, Field<Long[]> taken, int queueCount) {
    return DSL.field("(SELECT count(*) FROM (SELECT pg_notify('pgtask', q.q) FROM unnest({0}) AS q(q)"
        + " WHERE {1}) AS s)::integer", SQLDataType.INTEGER,
        DSL.field(DSL.select(DSL.param("spill_queues", String[].class))).cast(SQLDataType.VARCHAR.array()),
        DSL.field(DSL.select(DSL.when(lockedCount.ge(DSL.param("spill_at", Integer.class)),
            DSL.field(claimableBeyond(taken, queueCount))).otherwise(DSL.inline(false)))));
  }

  /** The probe's queue condition, shaped as the claim's (one queue: equality, so no sort). */
  private static Condition probeQueues(Task p, int queueCount) {
    List<Field<String>> qs = new ArrayList<>();
    for (int i = 0; i < queueCount; i++) {
      qs.add(DSL.field(DSL.select(DSL.param("probe_queue" + i, String.class))));
    }
    return queueCount == 1 ? p.QUEUE.eq(qs.get(0)) : p.QUEUE.in(qs);
  }
}
