package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.FLOW_LIMIT;
import static dev.pgtask.internal.sql.gen.Tables.LIMIT_BUCKET;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.FlowLimit;
import dev.pgtask.internal.sql.gen.tables.Task;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DataType;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The claim's part of flow control (docs/how-it-works.md, "Limits"): which keys are full or out of
 * rate tokens, so the claim passes over them before its LIMIT; each limit's room, so a claim takes
 * no more than it; and the rate tokens it takes for what it keeps. The slots that hold concurrency
 * limits are taken later, when each task starts ({@code pgtask.take_slots}); the rate tokens here,
 * in the claim's short transaction. Without any limit set, every part is one probe of an empty
 * table per claim.
 */
final class ClaimLimits {

  private ClaimLimits() {}

  /** No bound: the room of a key without a concurrency limit, or without a rate. */
  private static final int UNBOUNDED = Integer.MAX_VALUE;

  /** Whether {@code l} applies to the task {@code t} (tenant by id, queue or kind by name). */
  static Condition applies(FlowLimit l, Field<Integer> tenantId, Field<String> queue, Field<String> kind) {
    return DSL.when(l.SCOPE.eq(DSL.inline("tenant")), tenantId.eq(l.TENANT_ID))
        .when(l.SCOPE.eq(DSL.inline("queue")), queue.eq(l.KEY))
        .otherwise(kind.eq(l.KEY)).isTrue();
  }

  /**
   * The room of every limit, once per claim (materialized): the starts it admits now. A
   * concurrency limit's room is its max_running (a tenant's: 1 without one) less its tasks in state
   * running; a rate's, the tokens its bucket holds now (read without locking it); a limit with both
   * has the smaller. The running rows err on the safe side: a task claimed ahead counts, and a dead
   * worker's task counts until it is rescued (its slot, a lock, was freed at once). They only steer
   * the claim away from full keys; the slots and the tokens taken are what hold the limits.
   */
  static CommonTableExpression<?> room() {
    FlowLimit l = FLOW_LIMIT.as("l");
    Task r = TASK.as("lr");
    var b = LIMIT_BUCKET.as("lb");
    Field<Integer> running = DSL.field(DSL.selectCount().from(r)
        .where(r.STATE.eq(DSL.inline(TaskState.running))).and(applies(l, r.TENANT_ID, r.QUEUE, r.KIND)));
    Field<Integer> slotRoom = DSL.when(l.MAX_RUNNING.isNotNull().or(l.SCOPE.eq(DSL.inline("tenant"))),
            DSL.coalesce(l.MAX_RUNNING, DSL.inline(1)).minus(running))
        .otherwise(DSL.inline(UNBOUNDED));
    Field<Integer> tokens = DSL.when(l.PER_SECOND.isNotNull(), DSL.coalesce(DSL.field(DSL.select(
                DSL.function(DSL.name("pgtask", "tokens_now"), SQLDataType.INTEGER, b.TAT, l.PER_SECOND, l.BURST,
                    DSL.currentInstant()))
            .from(b).where(b.LIMIT_ID.eq(l.ID))), DSL.inline(0)))
        .otherwise(DSL.inline(UNBOUNDED));
    return DSL.name("limit_room").asMaterialized(DSL.select(l.ID.as("limit_id"), l.SCOPE.as("scope"),
            l.KEY.as("key"), l.TENANT_ID.as("tenant_id"), DSL.least(slotRoom, tokens).as("room"))
        .from(l)
        .where(l.MAX_RUNNING.isNotNull().or(l.PER_SECOND.isNotNull())));
  }

  /**
   * The keys of one scope of {@link #room} whose room is (or is not) left, as an array (an InitPlan;
   * the cast makes it an array-valued expression: ANY ((SELECT ...)) would read as ANY (sub-query)).
   */
  static <T> Field<T[]> keys(CommonTableExpression<?> room, String scope, String column, DataType<T> type,
      boolean withRoom) {
    Field<Integer> left = room.field("room", Integer.class);
    Field<T> key = room.field(column, type);
    return DSL.field(DSL.select(DSL.array(DSL.select(key).from(room)
        .where(room.field("scope", String.class).eq(DSL.inline(scope)))
        .and(withRoom ? left.gt(DSL.inline(0)) : left.le(DSL.inline(0)))))).cast(type.array());
  }

  /** The room of {@code scope}'s limit whose {@code column} is {@code value}, or {@code otherwise} without one. */
  static <T> Field<Integer> roomOf(CommonTableExpression<?> room, String scope, String column, Field<T> value,
      int otherwise) {
    return DSL.coalesce(DSL.field(DSL.select(room.field("room", Integer.class)).from(room)
        .where(room.field("scope", String.class).eq(DSL.inline(scope)))
        .and(room.field(column, value.getType()).eq(value))), DSL.inline(otherwise));
  }

  /** Whether any limit of {@link #room} applies to a locked row (a limited tenant's, queue's or kind's task). */
  static Field<Boolean> limited(CommonTableExpression<?> room, Field<Integer> tenant, Field<String> queue,
      Field<String> kind) {
    Field<String> scope = room.field("scope", String.class);
    Field<String> key = room.field("key", String.class);
    return DSL.field(DSL.exists(DSL.selectOne().from(room)
        .where(scope.eq(DSL.inline("queue")).and(key.eq(queue)))
        .or(scope.eq(DSL.inline("kind")).and(key.eq(kind)))
        .or(scope.eq(DSL.inline("tenant")).and(room.field("tenant_id", Integer.class).eq(tenant)))));
  }

  /**
   * The rate limits of each picked row, ranked in claim order within each limit: {@code (id,
   * limit_id, rn)}. {@code picked}: the rows the concurrency ranks kept, {@code (id)}; {@code
   * locked}: the locked rows with their tenant, queue, kind and the claim order's columns
   * ({@code claimOrder}). Read only when a rate limit exists (an uncorrelated {@code EXISTS}: one
   * probe of pgtask.flow_limit, evaluated once before the join): the planner estimates one row for
   * each of the two CTEs and joins them in a nested loop, which compared every picked row with every
   * locked one, 40,000 comparisons and 4.4 ms of a 200-task claim of about 12 ms (EXPLAIN ANALYZE of
   * plain mode's claim, issue 31), before finding that no limit has a rate.
   */
  static CommonTableExpression<?> rated(CommonTableExpression<?> picked, CommonTableExpression<?> locked,
      java.util.List<org.jooq.OrderField<?>> claimOrder) {
    FlowLimit l = FLOW_LIMIT.as("rl");
    FlowLimit any = FLOW_LIMIT.as("any_rate");
    Field<Long> pId = picked.field("id", Long.class);
    Field<Long> lId = locked.field(TASK.ID);
    return DSL.name("rated").as(DSL.select(pId.as("id"), l.ID.as("limit_id"),
            DSL.rowNumber().over(DSL.partitionBy(l.ID).orderBy(claimOrder)).as("rn"))
        .from(picked)
        .join(locked).on(lId.eq(pId))
        .join(l).on(l.PER_SECOND.isNotNull()
            .and(applies(l, locked.field(TASK.TENANT_ID), locked.field(TASK.QUEUE), locked.field(TASK.KIND))))
        .where(DSL.exists(DSL.selectOne().from(any).where(any.PER_SECOND.isNotNull()))));
  }

  /**
   * The tokens granted to this claim, per rate limit ({@code pgtask.take_tokens}, which also applies
   * the refunds handed in: {@code :refunds}, limit ids, {@code :refund_count} of them). Materialized:
   * taken once. Without any rate set and no refund, the function is not called (a one-time filter).
   */
  static CommonTableExpression<?> granted(CommonTableExpression<?> rated) {
    Field<Integer> limitId = rated.field("limit_id", Integer.class);
    var wanted = DSL.select(limitId.as("limit_id"), DSL.count().cast(SQLDataType.INTEGER).as("n")).from(rated)
        .groupBy(limitId).asTable("w");
    Field<Integer[]> ids = DSL.field(DSL.select(DSL.arrayAgg(wanted.field("limit_id", Integer.class))
        .orderBy(wanted.field("limit_id", Integer.class))).from(wanted));
    Field<Integer[]> counts = DSL.field(DSL.select(DSL.arrayAgg(wanted.field("n", Integer.class))
        .orderBy(wanted.field("limit_id", Integer.class))).from(wanted));
    Field<Integer[]> refunds = DSL.field(DSL.select(DSL.param("refunds", Integer[].class)))
        .cast(SQLDataType.INTEGER.array());
    var tokens = DSL.table("pgtask.take_tokens({0}, {1}, {2})", ids, counts, refunds)
        .as("g", "limit_id", "granted", "next_ms");
    Condition anyRate = DSL.field(DSL.select(DSL.field(DSL.exists(DSL.selectOne().from(FLOW_LIMIT)
        .where(FLOW_LIMIT.PER_SECOND.isNotNull()))))).isTrue()
        .or(DSL.field(DSL.select(DSL.param("refund_count", Integer.class))).gt(DSL.inline(0)));
    // a plain SQL table knows no columns: its fields by name
    return DSL.name("granted").asMaterialized(DSL.select(
            DSL.field(DSL.name("g", "limit_id"), Integer.class).as("limit_id"),
            DSL.field(DSL.name("g", "granted"), Integer.class).as("granted"),
            DSL.field(DSL.name("g", "next_ms"), Long.class).as("next_ms"))
        .from(tokens)
        .where(anyRate));
  }

  /** A picked row keeps every rate token it needs: none of its limits granted fewer than its rank. */
  static Condition withTokens(Field<Long> id, CommonTableExpression<?> rated, CommonTableExpression<?> granted) {
    return DSL.notExists(DSL.selectOne().from(rated)
        .leftJoin(granted).on(granted.field("limit_id", Integer.class).eq(rated.field("limit_id", Integer.class)))
        .where(rated.field("id", Long.class).eq(id))
        .and(rated.field("rn", Integer.class).gt(DSL.coalesce(granted.field("granted", Integer.class), DSL.inline(0)))));
  }

  /**
   * The rate limits a claimed task was charged a token of ({@code TASK}'s row): given back if it
   * is put back without starting. Empty without any rate set (an InitPlan decides).
   */
  static Field<Integer[]> charged() {
    FlowLimit l = FLOW_LIMIT.as("ch");
    return DSL.when(DSL.field(DSL.select(DSL.field(DSL.exists(DSL.selectOne().from(FLOW_LIMIT)
                .where(FLOW_LIMIT.PER_SECOND.isNotNull()))))),
            DSL.array(DSL.select(l.ID).from(l).where(l.PER_SECOND.isNotNull())
                .and(applies(l, TASK.TENANT_ID, TASK.QUEUE, TASK.KIND))))
        .otherwise(DSL.castNull(SQLDataType.INTEGER.array()));
  }

  /**
   * Milliseconds until the next rate token of a limit that has none now, or NULL (no rate waits):
   * the claim's worker arms its due timer with it, so a task held back by a rate starts when its
   * token is due, not at the next poll.
   */
  static Field<Long> nextTokenMillis(CommonTableExpression<?> granted) {
    FlowLimit l = FLOW_LIMIT.as("nt");
    var b = LIMIT_BUCKET.as("ntb");
    // the next token is due at tat - (burst - 1) / per_second
    Field<Long> millis = DSL.field("ceil(extract(epoch FROM ({0} - make_interval(secs => ({1} - 1) / {2}))"
        + " - clock_timestamp()) * 1000)::bigint", SQLDataType.BIGINT, b.TAT, l.BURST, l.PER_SECOND);
    // the buckets this claim's statement did not empty (it sees them as they were before it)...
    Field<Long> before = DSL.field(DSL.select(DSL.min(millis)).from(l).join(b).on(b.LIMIT_ID.eq(l.ID))
        .where(l.PER_SECOND.isNotNull())
        .and(DSL.function(DSL.name("pgtask", "tokens_now"), SQLDataType.INTEGER, b.TAT, l.PER_SECOND, l.BURST,
            DSL.field("clock_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE)).eq(DSL.inline(0))));
    // ...and the ones it emptied (pgtask.take_tokens says when their next token is due)
    Field<Long> emptied = DSL.field(DSL.select(DSL.min(granted.field("next_ms", Long.class))).from(granted));
    return DSL.least(before, emptied);
  }

  /**
   * Whether a queue or kind concurrency limit applies to {@code TASK}'s row: such a task runs in a
   * transaction even if its kind runs plain, since its slot lives in that transaction. Without any
   * limit set, one probe of an empty table per claim (an InitPlan).
   */
  static Field<Boolean> capped() {
    FlowLimit l = FLOW_LIMIT.as("cap");
    return DSL.when(DSL.field(DSL.select(DSL.field(DSL.exists(DSL.selectOne().from(FLOW_LIMIT))))),
            DSL.field(DSL.exists(DSL.selectOne().from(l)
                .where(l.MAX_RUNNING.isNotNull())
                .and(l.SCOPE.eq(DSL.inline("queue")).and(l.KEY.eq(TASK.QUEUE))
                    .or(l.SCOPE.eq(DSL.inline("kind")).and(l.KEY.eq(TASK.KIND)))))))
        .otherwise(DSL.inline(false));
  }
}
