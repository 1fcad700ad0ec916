package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.FLOW_LIMIT;
import static dev.pgtask.internal.sql.gen.Tables.PAUSED_QUEUE;
import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TENANT;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.PausedQueue;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.util.ArrayList;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.Record1;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;

/**
 * The claim's statements, built once per queue count and bounds (their execution and the reading
 * of their rows are {@link ClaimQueries}' and {@link ClaimRows}').
 *
 * <p>Protocol: a CTE selects claimable rows of the worker's queues and kinds in claim order
 * (priority, pass, run_at, id; pass is NULL without weights) with {@code LIMIT n FOR UPDATE SKIP LOCKED}: rows locked by another
 * claimer are skipped, never waited on. The LIMIT sits inside the CTE so the planner cannot
 * re-evaluate it and lock more rows. Tenants that already have a running task are excluded before
 * the LIMIT (inside the locking select), so the claim never locks rows it then throws away; of the
 * locked rows it keeps at most one per tenant; a paused queue's tasks are not selected
 * (see {@link #unlessPaused}); the kept rows are marked running with attempt + 1,
 * owner and a lease from the database clock. The short claim transaction then commits. It starts
 * with {@link TaskSql#GENERIC_PLAN}; BEGIN, that, the claim and COMMIT go in one round trip.
 *
 * <p>Into an idle worker, {@link #claimAndStartPipeline} sends the claim together with the start of
 * its first transactional task: {@link TaskSql#GENERIC_PLAN}, claim, COMMIT, BEGIN, and that task's
 * re-lock, in one round trip.
 */
final class ClaimStatements {

  private ClaimStatements() {}

  /**
   * What the claim statements share: the locking CTE, which rows to take, the CTE's row count, and
   * the spill (see {@link ClaimSpill#spill}).
   */
  private record ClaimParts(List<CommonTableExpression<?>> ctes, Condition picked, Field<Integer> lockedCount,
      Field<Integer> spill, Field<Long> nextTokenMillis, Field<Integer> heldForRoom, boolean limits) {}

  /**
   * Whether any flow control is set ({@code pgtask.flow_limit} has a row): an uncorrelated probe of
   * a table that is empty without limits, once per claim (an InitPlan). Every claim returns it, so
   * that its worker knows which form of the claim to send next.
   */
  private static Field<Boolean> limitsExist() {
    return DSL.field(DSL.select(DSL.field(DSL.exists(DSL.selectOne().from(FLOW_LIMIT)))));
  }

  private static ClaimParts claimParts(int queueCount, boolean limits) {
    if (!limits) {
      return unlimitedParts(queueCount);
    }
    Task c = TASK.as("c");
    // every parameter that feeds a row estimate sits behind a sub-select: a custom plan then costs
    // the same as the generic one and the server keeps the generic plan. With the values visible, a
    // kind missing from the statistics made every custom plan look cheaper, and the server planned
    // the claim on every execution (half a millisecond, more than running it)
    // a tenant with a task running anywhere is passed over before the LIMIT: a row locked here and
    // dropped afterwards made the claim return fewer tasks than it locked, and the producer, seeing
    // a full claim, claimed again at once, thousands of times a second, never reaching the due
    // tasks behind those rows. Its generic plan (EXPLAIN, 25,000 claimable rows over 500 tenants)
    // reads the running tasks once through task_running_idx into a hashed sub-plan: a cost that
    // grows with the tasks running at once, not with the backlog.
    // A tenant limited to N > 1 (pgtask.set_limit) passes while fewer than N of its tasks run.
    CommonTableExpression<?> limitRoom = ClaimLimits.room();
    Condition tenantIdle = c.TENANT_ID.isNull()
        .or(noTaskRunning(c))
        .or(c.TENANT_ID.eq(DSL.any(ClaimLimits.keys(limitRoom, "tenant", "tenant_id", SQLDataType.INTEGER, true))));
    // a queue, kind or tenant whose limit is full or out of rate tokens is passed over before the
    // LIMIT too, for the same reason
    Condition notFull = c.QUEUE.ne(DSL.all(ClaimLimits.keys(limitRoom, "queue", "key", SQLDataType.VARCHAR, false)))
        .and(c.KIND.ne(DSL.all(ClaimLimits.keys(limitRoom, "kind", "key", SQLDataType.VARCHAR, false))))
        .and(c.TENANT_ID.isNull().or(c.TENANT_ID.ne(DSL.all(
            ClaimLimits.keys(limitRoom, "tenant", "tenant_id", SQLDataType.INTEGER, false)))));

    CommonTableExpression<?> locked = lockedCte(c, queueCount, tenantIdle, notFull);
    Field<Long> lId = locked.field(c.ID);
    Field<Integer> lTenant = locked.field(c.TENANT_ID);

    // at most one task per tenant (its room, for a tenant limited to N): two due heads of one
    // tenant (in two queues, or a head due before the tenant's other head) can be locked by one
    // claim; the tenant's lock would turn the second away. At most a limited queue's or kind's
    // room of each. And of the tasks under any limit, at most as many as the worker has idle
    // executors (capped_room): claimed ahead, they would count as running and keep the limit's
    // room from the other workers while they wait here
    // every rank in claim order (the locked CTE's), so that what the limits keep is what comes first
    List<org.jooq.OrderField<?>> claimOrder = claimOrder(locked, c);
    Field<Integer> rank = DSL.rowNumber().over(DSL.partitionBy(DSL.coalesce(lTenant.cast(Long.class), lId.neg()))
        .orderBy(claimOrder));
    Field<String> lQueue = locked.field(c.QUEUE);
    Field<String> lKind = locked.field(c.KIND);
    Field<Integer> queueRank = DSL.rowNumber().over(DSL.partitionBy(lQueue).orderBy(claimOrder));
    Field<Integer> kindRank = DSL.rowNumber().over(DSL.partitionBy(lKind).orderBy(claimOrder));
    Field<Integer> tenantRoom = ClaimLimits.roomOf(limitRoom, "tenant", "tenant_id", lTenant, 1);
    Field<Integer> queueRoom = ClaimLimits.roomOf(limitRoom, "queue", "key", lQueue, Integer.MAX_VALUE);
    Field<Integer> kindRoom = ClaimLimits.roomOf(limitRoom, "kind", "key", lKind, Integer.MAX_VALUE);
    // under a limit: a limited tenant's task, or one of a limited queue or kind
    Field<Boolean> limited = ClaimLimits.limited(limitRoom, lTenant, lQueue, lKind);
    Field<Integer> limitedRank = DSL.rowNumber().over(DSL.partitionBy(limited).orderBy(claimOrder));
    // beyond_room: a task under a limit past the worker's idle executors (:capped_room, bound once)
    Field<Integer> cappedRoom = DSL.field(DSL.select(DSL.param("capped_room", Integer.class)));
    CommonTableExpression<?> ranked = DSL.name("ranked").as(DSL.select(lId.as("id"), rank.as("rn"),
            tenantRoom.as("tenant_room"), queueRank.as("rn_q"), queueRoom.as("queue_room"), kindRank.as("rn_k"),
            kindRoom.as("kind_room"), DSL.field(limited.isTrue().and(limitedRank.gt(cappedRoom))).as("beyond_room"))
        .from(locked));
    Field<Long> rId = ranked.field("id", Long.class);
    Condition withinLimits = ranked.field("rn", Integer.class).le(ranked.field("tenant_room", Integer.class))
        .and(ranked.field("rn_q", Integer.class).le(ranked.field("queue_room", Integer.class)))
        .and(ranked.field("rn_k", Integer.class).le(ranked.field("kind_room", Integer.class)));
    Condition beyondRoom = ranked.field("beyond_room", Boolean.class).isTrue();
    var picked = DSL.name("picked").as(DSL.select(rId.as("id"))
        .from(ranked)
        .where(withinLimits)
        .and(beyondRoom.not()));
    // the rows the limits admit that this claim left for want of an idle executor: its worker
    // claims again as soon as one is free (it would otherwise wait for a wake-up that no one sends)
    Field<Integer> heldForRoom = DSL.field(DSL.selectCount().from(ranked).where(withinLimits).and(beyondRoom));
    // of those, the ones every rate limit that applies grants a token now
    CommonTableExpression<?> rated = ClaimLimits.rated(picked, locked, claimOrder);
    CommonTableExpression<?> granted = ClaimLimits.granted(rated);
    Field<Long> pickedId = picked.field("id", Long.class);
    var kept = DSL.select(pickedId).from(picked).where(ClaimLimits.withTokens(pickedId, rated, granted));
    Field<Integer> lockedCount = DSL.field(DSL.selectCount().from(locked));

    // id = ANY(ARRAY(...)): an index scan on the primary key whatever the plan's row estimates
    return new ClaimParts(List.of(limitRoom, locked, ranked, picked, rated, granted),
        TASK.ID.eq(DSL.any(DSL.array(kept))), lockedCount,
        ClaimSpill.spill(lockedCount, DSL.array(DSL.select(lId).from(locked)), queueCount), ClaimLimits.nextTokenMillis(granted),
        heldForRoom, true);
  }

  /**
   * The claim without flow control, for a database with no limit, rate or weight set: what the
   * full claim does when {@code pgtask.flow_limit} is empty (its limit CTEs are then empty, every
   * tenant's room is 1, no rank or token holds a task back), without the CTEs, sub-plans and window
   * sorts that compute nothing then. The full claim costs the server about half a millisecond more
   * per execution and several times the planning, which a pooler in transaction mode pays on
   * every claim. Gated in the statement itself: if a limit exists in the claim's snapshot, the
   * locking select returns nothing and the statement says so ({@code limits_exist}); the worker
   * then claims again at once with the full claim ({@link ClaimQueries}).
   */
  private static ClaimParts unlimitedParts(int queueCount) {
    Task c = TASK.as("c");
    // the gate: no limit of any kind in this snapshot (the full claim's answer is then this one's)
    CommonTableExpression<?> locked = lockedCte(c, queueCount, c.TENANT_ID.isNull().or(noTaskRunning(c)),
        limitsExist().isFalse());
    Field<Long> lId = locked.field(c.ID);
    Field<Integer> lTenant = locked.field(c.TENANT_ID);
    // at most one task per tenant (two due heads of one tenant can be locked by one claim)
    Field<Integer> rank = DSL.rowNumber().over(DSL.partitionBy(DSL.coalesce(lTenant.cast(Long.class), lId.neg()))
        .orderBy(claimOrder(locked, c)));
    CommonTableExpression<?> ranked = DSL.name("ranked").as(DSL.select(lId.as("id"), rank.as("rn")).from(locked));
    var picked = DSL.name("picked").as(DSL.select(ranked.field("id", Long.class).as("id"))
        .from(ranked)
        .where(ranked.field("rn", Integer.class).eq(DSL.inline(1))));
    Field<Integer> lockedCount = DSL.field(DSL.selectCount().from(locked));
    return new ClaimParts(List.of(locked, ranked, picked),
        TASK.ID.eq(DSL.any(DSL.array(DSL.select(picked.field("id", Long.class)).from(picked)))), lockedCount,
        ClaimSpill.spill(lockedCount, DSL.array(DSL.select(lId).from(locked)), queueCount), DSL.castNull(SQLDataType.BIGINT),
        DSL.inline(0), false);
  }

  /**
   * The claim's locking select, {@code locked}: the claimable rows of the worker's queues and kinds
   * that pass {@code tenantIdle} and {@code limits}, in claim order, at most {@code :limit}, FOR
   * UPDATE SKIP LOCKED.
   */
  private static CommonTableExpression<?> lockedCte(Task c, int queueCount, Condition tenantIdle, Condition limits) {
    return DSL.name("locked").as(
        DSL.select(c.ID, c.TENANT_ID, c.PRIORITY, c.QUEUE, c.KIND, c.PASS, c.RUN_AT)
            .from(c)
            .where(c.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
            .and(c.BLOCKED.isFalse())
            .and(queueCondition(c, queueCount))
            .and(c.RUN_AT.le(DSL.currentInstant()))
            .and(tenantIdle)
            .and(limits)
            // the cast makes it an array-valued expression: ANY ((SELECT ...)) would read as ANY (sub-query)
            .and(c.KIND.eq(DSL.any(DSL.field(DSL.select(DSL.param("kinds", String[].class)))
                .cast(SQLDataType.VARCHAR.array()))))
            .and(claimSettings())
            // pass: a tenant's place under weighted fair share (db/R__02b_fair_share.sql), NULL
            // for every task without weights: then the order is (priority, run_at, id)
            .orderBy(c.PRIORITY, c.PASS.asc().nullsFirst(), c.RUN_AT, c.ID)
            .limit(DSL.field(DSL.select(DSL.param("limit", Integer.class))))
            .forUpdate()
            .skipLocked());
  }

  /** No task of {@code c}'s tenant is running (a hashed sub-plan over task_running_idx). */
  private static Condition noTaskRunning(Task c) {
    Task running = TASK.as("r");
    return DSL.notExists(DSL.selectOne().from(running)
        .where(running.TENANT_ID.eq(c.TENANT_ID))
        .and(running.BLOCKED.isFalse())
        .and(running.STATE.eq(DSL.inline(TaskState.running))));
  }

  /** The claim's queue condition: one queue by equality (the claimable index then returns its rows in claim order, no sort). */
  private static Condition queueCondition(Task c, int queueCount) {
    Condition queueCondition;
    if (queueCount == 1) {
      // one queue: the claimable index returns its rows in claim order, no sort
      queueCondition = c.QUEUE.eq(unlessPaused(0));
    } else {
      List<Field<String>> qs = new ArrayList<>();
      for (int i = 0; i < queueCount; i++) {
        qs.add(unlessPaused(i));
      }
      queueCondition = c.QUEUE.in(qs);
    }
    return queueCondition;
  }

  /**
   * The claim transaction's settings, set by its statement (an InitPlan, no round trip). Its commit
   * need not wait for its WAL flush: if the server loses it, the tasks are simply unclaimed again,
   * and nothing the attempt does can commit before the claim is durable (its own commit flushes the
   * WAL up to and including the claim). And {@code pgtask.claiming}: the tenant heads' statement
   * trigger (db/R__02_tenant_heads.sql) is not queued for the claim's UPDATE, which ends no head
   * (available or retryable to running, nothing else a head depends on changed); it cost each claim
   * a call and a query over its transition tables.
   */
  private static Condition claimSettings() {
    return DSL.field(DSL.select(DSL.function("set_config", SQLDataType.CLOB, DSL.inline("synchronous_commit"),
            DSL.inline("off"), DSL.inline(true)).concat(DSL.function("set_config", SQLDataType.CLOB,
            DSL.inline("pgtask.claiming"), DSL.inline("on"), DSL.inline(true))))).isNotNull();
  }

  /** The claim's order, (priority, pass, run_at, id), over the locked CTE's columns. */
  private static List<org.jooq.OrderField<?>> claimOrder(CommonTableExpression<?> locked, Task c) {
    return List.of(locked.field(c.PRIORITY), locked.field(c.PASS).asc().nullsFirst(), locked.field(c.RUN_AT),
        locked.field(c.ID));
  }

  /**
   * The worker's queue number {@code i}, or NULL (which matches no task) while that queue is paused:
   * {@code (SELECT q.v FROM (SELECT :queue_i AS v) q WHERE NOT EXISTS (SELECT 1 FROM
   * pgtask.paused_queue p WHERE p.queue = q.v))}. Uncorrelated, so the server runs it once per claim
   * (an InitPlan) before the index scan, which stays the same scan of the claimable index: the pause
   * costs the claim one primary-key probe per queue. Read in the claim's own statement, a pause
   * holds for every claim that starts after it commits, on every worker, however late it starts.
   */
  private static Field<String> unlessPaused(int i) {
    Table<Record1<String>> q = DSL.select(DSL.param("queue" + i, String.class).as("v")).asTable("q" + i);
    Field<String> v = q.field("v", String.class);
    PausedQueue p = PAUSED_QUEUE.as("p" + i);
    return DSL.field(DSL.select(v).from(q).whereNotExists(DSL.selectOne().from(p).where(p.QUEUE.eq(v))));
  }

  /** The claim's update: marks the picked rows running, with attempt + 1, owner and lease. */
  private static org.jooq.UpdateConditionStep<dev.pgtask.internal.sql.gen.tables.records.TaskRecord> claimUpdate(
      org.jooq.UpdateSetFirstStep<dev.pgtask.internal.sql.gen.tables.records.TaskRecord> update, ClaimParts p) {
    return update
        .set(TASK.STATE, DSL.inline(TaskState.running))
        .set(TASK.ATTEMPT, TASK.ATTEMPT.plus(DSL.inline(1)))
        .set(TASK.OWNER, DSL.param("owner", String.class))
        .set(TASK.ATTEMPTED_AT, DSL.currentInstant())
        .set(TASK.LEASE_UNTIL, DSL.currentInstant().plus(DSL.param("lease", DayToSecond.class)))
        .where(p.picked());
  }

  /** The tenant's name, from the registry's primary key: no extra round trip per new tenant. */
  static Field<String> tenantName() {
    return DSL.field(DSL.select(TENANT.NAME).from(TENANT).where(TENANT.ID.eq(TASK.TENANT_ID)));
  }

  /** The columns of a claimed task, as both claims return them from their UPDATE. */
  private static List<org.jooq.SelectFieldOrAsterisk> claimedColumns(ClaimParts p) {
    // without limits no cap applies and no token is charged
    Field<Boolean> capped = p.limits() ? ClaimLimits.capped() : DSL.inline(false);
    Field<Integer[]> charged = p.limits() ? ClaimLimits.charged() : DSL.castNull(SQLDataType.INTEGER.array());
    return List.of(TASK.ID, TASK.KIND, TASK.QUEUE, TASK.PAYLOAD, TASK.TENANT_ID, TASK.ATTEMPT,
        TASK.MAX_ATTEMPTS, TASK.RUN_AT, TASK.ATTEMPTED_AT, TASK.PRIORITY, tenantName().as(ClaimRows.TENANT_NAME),
        TASK.TRACE_PARENT, capped.as(ClaimRows.CAPPED), charged.as(ClaimRows.CHARGED));
  }

  /** The claimed task's columns of the {@code claimed} CTE, in the order {@link ClaimRows} reads them by name. */
  private static List<org.jooq.SelectFieldOrAsterisk> claimedFields(CommonTableExpression<?> claimed) {
    return List.of(claimed.field(TASK.ID), claimed.field(TASK.KIND), claimed.field(TASK.QUEUE),
        claimed.field(TASK.PAYLOAD), claimed.field(TASK.TENANT_ID), claimed.field(TASK.ATTEMPT),
        claimed.field(TASK.MAX_ATTEMPTS), claimed.field(TASK.RUN_AT), claimed.field(TASK.ATTEMPTED_AT),
        claimed.field(ClaimRows.TENANT_NAME, String.class), claimed.field(TASK.TRACE_PARENT),
        claimed.field(ClaimRows.CAPPED, Boolean.class), claimed.field(ClaimRows.CHARGED, Integer[].class));
  }

  /**
   * The plain claim for {@code queueCount} queues, within {@code bounds}: BEGIN, the bounds,
   * {@link TaskSql#TaskSql.GENERIC_PLAN}, the claim (its rows read with {@link ClaimRows}), COMMIT.
   * The claim is a data-modifying CTE and its result one row per claimed task, or one row without
   * a task when it claimed none: the row that says when the next rate token is due either way.
   */
  static PreparedQuery claimQuery(int queueCount, TxBounds bounds, boolean limits) {
    ClaimParts p = claimParts(queueCount, limits);
    var claimed = DSL.name("claimed").as(claimUpdate(DSL.update(TASK), p).returningResult(claimedColumns(p)));
    var summary = DSL.name("summary").as(DSL.select(p.lockedCount().as(ClaimRows.LOCKED_ROWS),
        p.spill().as("spilled"), p.nextTokenMillis().as(ClaimRows.NEXT_TOKEN_MS),
        p.heldForRoom().as(ClaimRows.HELD_FOR_ROOM), limitsExist().as(ClaimRows.LIMITS_EXIST)));
    List<org.jooq.SelectFieldOrAsterisk> fields = new ArrayList<>(claimedFields(claimed));
    fields.add(summary.field(ClaimRows.LOCKED_ROWS, Integer.class));
    fields.add(summary.field("spilled", Integer.class));
    fields.add(summary.field(ClaimRows.NEXT_TOKEN_MS, Long.class));
    fields.add(summary.field(ClaimRows.HELD_FOR_ROOM, Integer.class));
    fields.add(summary.field(ClaimRows.LIMITS_EXIST, Boolean.class));
    List<CommonTableExpression<?>> ctes = new ArrayList<>(p.ctes());
    ctes.add(claimed);
    ctes.add(summary);
    return PreparedQuery.of(DSL.with(ctes).select(fields).from(summary).leftJoin(claimed).on(DSL.trueCondition()))
        .precededBy(bounds.setLocalSql() + ";\n" + TaskSql.GENERIC_PLAN).followedBy("COMMIT");
  }

  /** {@code setval(sequence, value, true)}: sets this session's currval(), outside any transaction. */
  private static Field<Long> setval(String sequence, Field<? extends Number> value) {
    return DSL.function("setval", SQLDataType.BIGINT, DSL.field("{0}::regclass", Object.class, DSL.inline(sequence)),
        value, DSL.inline(true));
  }

  /**
   * The claim as a data-modifying CTE, which also picks its head (the first transactional task in
   * claim order) and hands its id and attempt to the re-lock through this session's currval() of
   * {@link TaskSql#HEAD_ID_SEQUENCE} and {@link TaskSql#HEAD_ATTEMPT_SEQUENCE} (0 and 0 without a head). They are
   * set whatever the claim took (the head CTE always yields its one row), so the re-lock never
   * reads a value left by an earlier claim; being sequence values, not settings, no transaction's
   * end or rollback changes them and nothing is left to clear. Its columns are named as the plain
   * claim's (a row with a NULL id when nothing was claimed), with the head's id ({@link ClaimRows#HEAD_ID}).
   */
  private static PreparedQuery claimAndStartQuery(int queueCount, boolean limits) {
    ClaimParts p = claimParts(queueCount, limits);
    var claimed = DSL.name("claimed").as(claimUpdate(DSL.update(TASK), p).returningResult(claimedColumns(p)));
    Field<String[]> plainKinds = DSL.field(DSL.select(DSL.param("plain_kinds", String[].class)))
        .cast(SQLDataType.VARCHAR.array());
    var headTask = DSL.name("head_task").as(DSL.select(claimed.field(TASK.ID), claimed.field(TASK.ATTEMPT))
        .from(claimed)
        // plain-mode kinds run outside any transaction, except tasks with a tenant or a cap
        .where(claimed.field(TASK.TENANT_ID).isNotNull().or(claimed.field(TASK.KIND).ne(DSL.all(plainKinds)))
            .or(claimed.field(ClaimRows.CAPPED, Boolean.class)))
        .orderBy(claimed.field(TASK.PRIORITY), claimed.field(TASK.RUN_AT), claimed.field(TASK.ID))
        .limit(DSL.inline(1)));
    Field<Long> headId = DSL.field(DSL.select(headTask.field(TASK.ID)).from(headTask));
    Field<Integer> headAttempt = DSL.field(DSL.select(headTask.field(TASK.ATTEMPT)).from(headTask));
    var head = DSL.name("head").as(DSL.select(
        setval(TaskSql.HEAD_ID_SEQUENCE, DSL.coalesce(headId, DSL.inline(0L))).as("head_id_set"),
        setval(TaskSql.HEAD_ATTEMPT_SEQUENCE, DSL.coalesce(headAttempt, DSL.inline(0))).as("head_attempt_set"),
        headId.as(ClaimRows.HEAD_ID), p.spill().as("spilled"), p.lockedCount().as(ClaimRows.LOCKED_ROWS),
        p.nextTokenMillis().as(ClaimRows.NEXT_TOKEN_MS), p.heldForRoom().as(ClaimRows.HELD_FOR_ROOM),
        limitsExist().as(ClaimRows.LIMITS_EXIST)));
    List<org.jooq.SelectFieldOrAsterisk> fields = new ArrayList<>(claimedFields(claimed));
    fields.add(head.field(ClaimRows.LOCKED_ROWS, Integer.class));
    fields.add(head.field(ClaimRows.HEAD_ID, Long.class));
    fields.add(head.field("head_id_set", Long.class));
    fields.add(head.field("head_attempt_set", Long.class));
    fields.add(head.field("spilled", Integer.class));
    fields.add(head.field(ClaimRows.NEXT_TOKEN_MS, Long.class));
    fields.add(head.field(ClaimRows.HELD_FOR_ROOM, Integer.class));
    fields.add(head.field(ClaimRows.LIMITS_EXIST, Boolean.class));
    List<CommonTableExpression<?>> ctes = new ArrayList<>(p.ctes());
    ctes.add(claimed);
    ctes.add(headTask);
    ctes.add(head);
    return PreparedQuery.of(DSL.with(ctes).select(fields).from(head).leftJoin(claimed).on(DSL.trueCondition()));
  }

  /**
   * The claim-and-start for {@code queueCount} queues, within {@code bounds}: the claim as
   * {@link #claimAndStartQuery}, COMMIT, BEGIN, and the re-lock of its head
   * ({@link ExecuteQueries#LOCK_CLAIM_HEAD}) with its savepoint.
   */
  static PreparedQuery claimAndStartPipeline(int queueCount, TxBounds bounds, boolean limits) {
    // the claim's transaction and the task's each bounded before its first statement; the re-lock
    // waits for its row at most the re-lock bound, the handler then runs with the default lock_timeout
    return claimAndStartQuery(queueCount, limits).precededBy(bounds.setLocalSql() + ";\n" + TaskSql.GENERIC_PLAN)
        .followedBy("COMMIT").followedBy("BEGIN").followedBy(bounds.forRelock().setLocalSql())
        .followedBy(ExecuteQueries.LOCK_CLAIM_HEAD).followedBy(TxBounds.AFTER_RELOCK).followedBy(TaskSql.SAVEPOINT);
  }

}
