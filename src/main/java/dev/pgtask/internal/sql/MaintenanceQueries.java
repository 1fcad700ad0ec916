package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.CANCEL_REQUEST;
import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TASK_DEPENDENCY;

import dev.pgtask.internal.sql.gen.Routines;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.time.Duration;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record1;
import org.jooq.Record2;
import java.util.List;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;

/**
 * Maintenance passes. Each runs in its own transaction, after taking a transaction-scoped advisory
 * lock {@code (namespace, key)} with a negative key (tenant ids are positive), so at most one pass of
 * each kind runs at a time in the whole cluster and nothing outlives the transaction.
 */
public final class MaintenanceQueries {

  /** Lock key of the rescue pass. */
  public static final int RESCUE_LOCK_KEY = -1;
  /** Lock key of the tenant repair pass. */
  public static final int TENANT_REPAIR_LOCK_KEY = -2;
  /** Lock key of the retention pass. */
  public static final int PRUNE_LOCK_KEY = -3;

  /**
   * What {@code pgtask.maintenance_turn} answered: the term of the maintenance lease the caller
   * holds now, or null when another worker holds it; whether the caller's worker row was there
   * (null when the turn carried no heartbeat).
   */
  public record Turn(Long term, Boolean registered) {}

  /**
   * Takes or renews the maintenance lease for {@code lease} on the database's clock, and with
   * {@code heartbeat} refreshes the worker's heartbeat in the same statement. Locks: the lease row
   * when the caller holds or takes the lease (until the transaction ends), its worker row.
   */
  public static Turn maintenanceTurn(DSLContext dsl, String workerId, Duration lease, boolean heartbeat) {
    var turn = dev.pgtask.internal.sql.gen.Tables.MAINTENANCE_TURN.call(workerId,
        (int) Math.min(Integer.MAX_VALUE, Math.max(1, lease.toMillis())), heartbeat);
    var r = dsl.select(turn.TERM, turn.REGISTERED).from(turn).fetchOne();
    return new Turn(r.value1(), r.value2());
  }

  /** Gives up the maintenance lease if {@code workerId} holds it; returns whether it did. Locks: the lease row. */
  public static boolean releaseMaintenanceLease(DSLContext dsl, String workerId) {
    return Boolean.TRUE.equals(dsl.select(Routines.releaseMaintenanceLease(DSL.val(workerId))).fetchOne().value1());
  }

  private MaintenanceQueries() {}

  /**
   * Takes a pass's lock in the caller's transaction; false when another pass holds it. The caller's
   * transaction was opened with its server-side bounds ({@link TxBounds#begin}), so a worker frozen
   * in the middle of a pass loses its session and the lock instead of stopping that pass
   * cluster-wide. The same statement plans the pass's statements without sequential scans of the
   * task table and without JIT, as the claims are (see {@code TaskSql.GENERIC_PLAN}): a plan the
   * session kept from a pass over an empty table would otherwise read the whole table once it
   * fills up.
   */
  public static boolean tryPassLock(DSLContext tx, int namespace, int key) {
    return Boolean.TRUE.equals(tx.select(
            DSL.function("set_config", SQLDataType.CLOB, DSL.inline("enable_seqscan"), DSL.inline("off"), DSL.inline(true)),
            DSL.function("set_config", SQLDataType.CLOB, DSL.inline("jit"), DSL.inline("off"), DSL.inline(true)),
            DSL.function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN, DSL.val(namespace), DSL.val(key)))
        .fetchOne().value3());
  }

  /**
   * Rescues tasks whose worker is gone: running, lease expired, and no live transaction holds the
   * row (SKIP LOCKED: an executing worker holds it, so a slow-but-alive worker is never robbed).
   * They become retryable at once, or discarded when their attempts are exhausted, or cancelled
   * when a cancellation was requested for the lost attempt, with a "worker lost" entry in the error
   * history. Locks: up to {@code limit} expired task rows.
   *
   * @return the number of tasks rescued
   */
  public static int rescueExpired(DSLContext tx, int limit) {
    Task e = TASK.as("e");
    CommonTableExpression<Record2<Long, java.time.Instant>> expired = DSL.name("expired").as(
        DSL.select(e.ID, e.LEASE_UNTIL).from(e)
            .where(e.STATE.eq(DSL.inline(TaskState.running)))
            .and(e.LEASE_UNTIL.lt(DSL.currentInstant()))
            .orderBy(e.LEASE_UNTIL)
            .limit(limit)
            .forUpdate()
            .skipLocked());
    Condition exhausted = TASK.ATTEMPT.ge(TASK.MAX_ATTEMPTS);
    Condition cancel = TaskSql.cancelRequested();
    Condition ends = cancel.or(exhausted);
    // the lost attempt's error: in the row's history and, from the update's RETURNING, in the attempt history
    Field<String> lostError = DSL.concat(DSL.inline("worker lost: "), TASK.OWNER,
        DSL.inline(" stopped renewing its claim (lease expired at "),
        expired.field(e.LEASE_UNTIL).cast(SQLDataType.CLOB), DSL.inline(")"));
    Field<JSONB> lost = errorEntry(lostError);
    Field<JSONB> cancelled = errorEntry(DSL.inline(TaskSql.CANCELLED_AS_REQUESTED));
    Field<JSONB> history = DSL.coalesce(TASK.ERRORS, DSL.inline(JSONB.valueOf("[]")));
    var update = tx.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled))
            .when(exhausted, DSL.inline(TaskState.discarded)).otherwise(DSL.inline(TaskState.retryable)))
        .set(TASK.RUN_AT, DSL.when(ends, TASK.RUN_AT).otherwise(DSL.currentInstant()))
        .set(TASK.FINISHED_AT, DSL.when(ends, TaskSql.clockTimestamp()).otherwise(DSL.inline((java.time.Instant) null)))
        .set(TASK.ERRORS, DSL.function("jsonb_concat", SQLDataType.JSONB,
            DSL.function("jsonb_concat", SQLDataType.JSONB, history, lost),
            DSL.when(cancel, cancelled).otherwise(DSL.inline(JSONB.valueOf("[]")))))
        .setNull(TASK.LEASE_UNTIL)
        .from(expired)
        .where(TASK.ID.eq(expired.field(e.ID)));
    // recorded as lost with its worker, whatever state the rescue left the task in
    return AttemptQueries.recorded(tx, List.of(expired), update, state -> DSL.inline(AttemptQueries.WORKER_LOST),
        lostError, DSL.inline((String) null, String.class)).fetch().size();
  }

  /** A one-entry error history array for the task row being updated: its attempt and owner, now. */
  private static Field<JSONB> errorEntry(Field<String> error) {
    return DSL.function("jsonb_build_array", SQLDataType.JSONB,
        DSL.function("jsonb_build_object", SQLDataType.JSONB,
            DSL.inline("attempt"), TASK.ATTEMPT,
            DSL.inline("at"), TaskSql.clockTimestamp(),
            DSL.inline("error"), error,
            DSL.inline("worker"), TASK.OWNER));
  }

  /**
   * Deletes the cancel requests that no longer stand: their attempt is not running any more (it
   * completed, ended cancelled, or the task is gone). Locks: the deleted request rows.
   *
   * @return the requests deleted
   */
  public static int pruneCancelRequests(DSLContext tx) {
    return tx.deleteFrom(CANCEL_REQUEST)
        .whereNotExists(DSL.selectOne().from(TASK)
            .where(TASK.ID.eq(CANCEL_REQUEST.TASK_ID))
            .and(TASK.ATTEMPT.eq(CANCEL_REQUEST.ATTEMPT))
            .and(TASK.STATE.eq(DSL.inline(TaskState.running))))
        .execute();
  }

  /**
   * Gives a head to (tenant, queue) pairs left with waiting tasks and no running or due head in
   * that queue (a race between an enqueue and a hand-off can leave one so), and takes the passes
   * of weighted fair share away when no weight is left. Locks: the promoted rows.
   *
   * @return how many tasks were promoted
   */
  public static int repairTenantHeads(DSLContext tx) {
    // promote_tenants skips pairs that have a running or due head; the pairs come from the
    // waiting index, in one order for both arrays
    CommonTableExpression<Record2<Integer, String>> pairs = waitingPairs();
    Field<Integer> tenant = pairs.field(0, Integer.class);
    Field<String> queue = pairs.field(1, String.class);
    var arrays = DSL.select(
            DSL.arrayAgg(tenant).orderBy(tenant, queue).as("tenants"),
            DSL.arrayAgg(queue).orderBy(tenant, queue).as("queues"))
        .from(pairs)
        .asTable("arrays");
    Integer n = tx.withRecursive(pairs).select(Routines.promoteTenants(arrays.field("tenants", Integer[].class),
            arrays.field("queues", String[].class)))
        .from(arrays)
        .fetchOne().value1();
    // weighted fair share: a task given a pass before the last weight went and queued again since
    // (a retry) loses it here (db/R__02b_fair_share.sql); without passes, one probe of an empty index
    Routines.clearPassesUnlessWeighted(tx.configuration());
    return n == null ? 0 : n;
  }

  /**
   * The distinct (tenant, queue) pairs of the waiting tasks, in (tenant, queue) order: a recursive
   * walk of task_tenant_waiting_idx that descends once per pair to the first entry after the last
   * pair, where a DISTINCT reads every waiting task's entry. Beside a backlog of 2,500,000 waiting
   * tasks of 2,000 tenants (issue 31), the DISTINCT took 470-570 ms of every rescue round (10 s) and
   * the walk 29 ms (EXPLAIN ANALYZE). Locks: none.
   */
  private static CommonTableExpression<Record2<Integer, String>> waitingPairs() {
    Task first = TASK.as("w");
    Task next = TASK.as("n");
    var name = DSL.name("pairs");
    Field<Integer> lastTenant = DSL.field(DSL.name("pairs", "tenant_id"), Integer.class);
    Field<String> lastQueue = DSL.field(DSL.name("pairs", "queue"), String.class);
    var step = DSL.lateral(DSL.select(next.TENANT_ID, next.QUEUE).from(next)
        .where(next.BLOCKED.isTrue())
        .and(DSL.row(next.TENANT_ID, next.QUEUE).gt(DSL.row(lastTenant, lastQueue)))
        .orderBy(next.TENANT_ID, next.QUEUE)
        .limit(DSL.inline(1))).as("step");
    return name.fields("tenant_id", "queue").as(
        DSL.select(first.TENANT_ID, first.QUEUE).from(first)
            .where(first.BLOCKED.isTrue())
            .orderBy(first.TENANT_ID, first.QUEUE)
            .limit(DSL.inline(1))
            .unionAll(DSL.select(step.field(next.TENANT_ID), step.field(next.QUEUE))
                .from(DSL.table(name))
                .crossJoin(step)));
  }

  /** Due tasks of one kind in one queue that no live worker handles. */
  public record Unhandled(String queue, String kind, long tasks) {}

  /**
   * Due tasks in the given queues (all queues when {@code queues} is null) whose kind no live worker
   * (pgtask.workers) serving their queue handles, per queue and kind, as {@code pgtask.unrunnable}
   * counts them, from its due heads ({@code pgtask.unrunnable_due}) without its count of the tasks
   * waiting behind each. Locks: none.
   */
  public static java.util.List<Unhandled> unhandledKinds(DSLContext dsl, java.util.List<String> queues) {
    var u = dev.pgtask.internal.sql.gen.Tables.UNRUNNABLE_DUE.as("u");
    Field<Integer> tasks = DSL.count();
    return dsl.select(u.QUEUE, u.KIND, tasks).from(u)
        .where(u.REASON.eq(DSL.inline("unhandled_kind")))
        .and(queues == null ? DSL.noCondition() : u.QUEUE.in(queues))
        .groupBy(u.QUEUE, u.KIND)
        .orderBy(u.QUEUE, u.KIND)
        .fetch(r -> new Unhandled(r.value1(), r.value2(), r.value3()));
  }

  /** Dead row versions in the task table, from the statistics collector. Locks: none. */
  public static long deadTuples(DSLContext dsl) {
    return taskTable(dsl).dead();
  }

  /**
   * The task table's row versions, from the statistics collector: dead and live ones, and the rows
   * the planner believes it has ({@code pg_class.reltuples}: -1 before the first ANALYZE or VACUUM).
   */
  public record TaskTableRows(long dead, long live, double planned) {
    /**
     * Whether the planner's estimate is far below the table (four times, and a thousand rows or
     * more): plans made since the last ANALYZE may read the whole table for one task.
     */
    public boolean outgrewPlans() {
      return live >= 1_000 && live > 4 * Math.max(planned, 0);
    }
  }

  /** The task table's {@link TaskTableRows}. Locks: none. */
  public static TaskTableRows taskTable(DSLContext dsl) {
    var stats = DSL.table(DSL.name("pg_catalog", "pg_stat_user_tables")).as("s");
    var cls = DSL.table(DSL.name("pg_catalog", "pg_class")).as("c");
    Field<Long> dead = DSL.field(DSL.name("s", "n_dead_tup"), Long.class);
    Field<Long> live = DSL.field(DSL.name("s", "n_live_tup"), Long.class);
    Field<Double> planned = DSL.field(DSL.name("c", "reltuples"), Double.class);
    var r = dsl.select(dead, live, planned).from(stats)
        .join(cls).on(DSL.field(DSL.name("c", "oid")).eq(DSL.field(DSL.name("s", "relid"))))
        .where(DSL.field(DSL.name("s", "schemaname"), String.class).eq(DSL.inline("pgtask")))
        .and(DSL.field(DSL.name("s", "relname"), String.class).eq(DSL.inline("task")))
        .fetchOne();
    if (r == null) {
      return new TaskTableRows(0, 0, -1);
    }
    return new TaskTableRows(r.value1() == null ? 0 : r.value1(), r.value2() == null ? 0 : r.value2(),
        r.value3() == null ? -1 : r.value3());
  }

  /**
   * ANALYZE of the task table (needs the table's owner; another role gets a server WARNING and no
   * ANALYZE). New statistics make every session plan its task statements again. Locks: SHARE
   * UPDATE EXCLUSIVE on the table, which no task statement takes.
   */
  public static void analyzeTasks(DSLContext dsl) {
    dsl.query("ANALYZE pgtask.task").execute(); // a constant statement: ANALYZE has no jOOQ DSL
  }

  /**
   * Claims the turn to vacuum the task table: true for the one caller whose update moves
   * {@code vacuum_turn_at} forward (no other turn was taken within {@code minInterval}).
   * Locks: the settings row, for the statement.
   */
  public static boolean takeVacuumTurn(DSLContext dsl, Duration minInterval) {
    return dsl.update(dev.pgtask.internal.sql.gen.Tables.SETTINGS)
        .set(dev.pgtask.internal.sql.gen.Tables.SETTINGS.VACUUM_TURN_AT, DSL.currentInstant())
        .where(dev.pgtask.internal.sql.gen.Tables.SETTINGS.VACUUM_TURN_AT
            .lt(DSL.currentInstant().minus(DSL.val(DayToSecond.valueOf(minInterval)))))
        .execute() == 1;
  }

  /** VACUUM of the task table (autocommit only; needs the table's owner). Locks: SHARE UPDATE EXCLUSIVE on it. */
  public static void vacuumTasks(DSLContext dsl) {
    dsl.query("VACUUM pgtask.task").execute(); // a constant statement: VACUUM has no jOOQ DSL
  }

  /** Ready tasks of a queue and the age of the oldest. */
  public record QueueSample(long available, Duration lag) {}

  /**
   * Counts ready (claimable) tasks per queue, with the age of the oldest, over the claimable index.
   * Locks: none.
   */
  public static java.util.Map<String, QueueSample> sampleQueues(DSLContext dsl, java.util.List<String> queues) {
    Field<java.time.Instant> oldest = DSL.min(TASK.RUN_AT);
    java.util.Map<String, QueueSample> out = new java.util.HashMap<>();
    for (var r : dsl.select(TASK.QUEUE, DSL.count(), oldest, DSL.currentInstant())
        .from(TASK)
        .where(TASK.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
        .and(TASK.BLOCKED.isFalse())
        .and(TASK.QUEUE.in(queues))
        .and(TASK.RUN_AT.le(DSL.currentInstant()))
        .groupBy(TASK.QUEUE)
        .fetch()) {
      out.put(r.value1(), new QueueSample(r.value2(), Duration.between(r.value3(), r.value4())));
    }
    return out;
  }

  /**
   * Deletes finished tasks older than their retention, at most {@code limit} per call; a parent
   * with a child that has not finished stays until it has. Locks: the deleted rows.
   */
  public static int pruneFinished(DSLContext tx, Duration completedRetention, Duration failedRetention, int limit) {
    Task p = TASK.as("p");
    Field<java.time.Instant> now = DSL.currentInstant();
    Task c = TASK.as("c");
    var victims = DSL.select(p.ID).from(p)
        .where(p.STATE.eq(DSL.inline(TaskState.completed))
            .and(p.FINISHED_AT.lt(now.minus(DSL.val(DayToSecond.valueOf(completedRetention)))))
            .or(p.STATE.in(DSL.inline(TaskState.cancelled), DSL.inline(TaskState.discarded))
                .and(p.FINISHED_AT.lt(now.minus(DSL.val(DayToSecond.valueOf(failedRetention)))))))
        // a parent stays while a child of it has not finished (its result is the child's to read)
        .and(p.HAS_CHILDREN.isFalse().or(DSL.notExists(DSL.selectOne()
            .from(TASK_DEPENDENCY).join(c).on(c.ID.eq(TASK_DEPENDENCY.CHILD_ID))
            .where(TASK_DEPENDENCY.PARENT_ID.eq(p.ID))
            .and(c.STATE.in(DSL.inline(TaskState.pending), DSL.inline(TaskState.available),
                DSL.inline(TaskState.retryable), DSL.inline(TaskState.running))))))
        .limit(limit)
        .forUpdate()
        .skipLocked();
    return tx.deleteFrom(TASK).where(TASK.ID.in(victims)).execute();
  }
}
