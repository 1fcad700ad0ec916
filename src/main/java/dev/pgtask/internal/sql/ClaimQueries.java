package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TENANT;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record3;
import org.jooq.impl.SQLDataType;
import org.jooq.impl.DSL;
import org.jooq.types.DayToSecond;

/**
 * The claim: one statement takes up to N claimable tasks for a worker.
 *
 * <p>Protocol: a CTE selects claimable rows of the worker's queues and kinds in claim order
 * (priority, run_at, id) with {@code LIMIT n FOR UPDATE SKIP LOCKED} — rows locked by another
 * claimer are skipped, never waited on. The LIMIT sits inside the CTE so the planner cannot
 * re-evaluate it and lock more rows. Of the locked rows it keeps at most one per tenant, and none of
 * a tenant that already has a running task; the kept rows are marked running with attempt + 1,
 * owner and a lease from the database clock. The short claim transaction then commits.
 */
public final class ClaimQueries {

  private ClaimQueries() {}

  /** A claimed task, as the executor needs it. */
  public record Claimed(long id, String kind, String queue, JSONB payload, Integer tenantId,
      String tenant, int attempt, int maxAttempts, Instant runAt, Instant claimedAt) {}

  /** The claim's result: the tasks, and how many rows the locking select returned. */
  public record Claim(List<Claimed> tasks, int locked) {}

  // the claim statement for n queues, rendered once (see PreparedQuery)
  private static final java.util.Map<Integer, PreparedQuery> CLAIMS = new java.util.concurrent.ConcurrentHashMap<>();

  private static PreparedQuery claimQuery(int queueCount) {
    Task c = TASK.as("c");
    // every parameter that feeds a row estimate sits behind a sub-select: a custom plan then costs
    // the same as the generic one and the server keeps the generic plan. With the values visible, a
    // kind missing from the statistics made every custom plan look cheaper, and the server planned
    // the claim on every execution (half a millisecond, more than running it)
    Condition queueCondition;
    if (queueCount == 1) {
      // one queue: the claimable index returns its rows in claim order, no sort
      queueCondition = c.QUEUE.eq(DSL.field(DSL.select(DSL.param("queue0", String.class))));
    } else {
      List<Field<String>> qs = new ArrayList<>();
      for (int i = 0; i < queueCount; i++) {
        qs.add(DSL.field(DSL.select(DSL.param("queue" + i, String.class))));
      }
      queueCondition = c.QUEUE.in(qs);
    }
    Task running = TASK.as("r");

    CommonTableExpression<Record3<Long, Integer, Integer>> locked = DSL.name("locked").as(
        DSL.select(c.ID, c.TENANT_ID, c.PRIORITY)
            .from(c)
            .where(c.STATE.in(DSL.inline(TaskState.available), DSL.inline(TaskState.retryable)))
            .and(c.BLOCKED.isFalse())
            .and(queueCondition)
            .and(c.RUN_AT.le(DSL.currentInstant()))
            // the cast makes it an array-valued expression: ANY ((SELECT ...)) would read as ANY (sub-query)
            .and(c.KIND.eq(DSL.any(DSL.field(DSL.select(DSL.param("kinds", String[].class)))
                .cast(SQLDataType.VARCHAR.array()))))
            // the claim's commit need not wait for its WAL flush: if the server loses it, the tasks
            // are simply unclaimed again, and nothing the attempt does can commit before the claim
            // is durable (its own commit flushes the WAL up to and including the claim)
            .and(DSL.field(DSL.select(DSL.function("set_config", SQLDataType.CLOB,
                DSL.inline("synchronous_commit"), DSL.inline("off"), DSL.inline(true)))).isNotNull())
            .orderBy(c.PRIORITY, c.RUN_AT, c.ID)
            .limit(DSL.field(DSL.select(DSL.param("limit", Integer.class))))
            .forUpdate()
            .skipLocked());
    Field<Long> lId = locked.field(c.ID);
    Field<Integer> lTenant = locked.field(c.TENANT_ID);

    // at most one task per tenant, and none of a tenant whose critical section is running
    Field<Integer> rank = DSL.rowNumber().over(DSL.partitionBy(DSL.coalesce(lTenant.cast(Long.class), lId.neg()))
        .orderBy(locked.field(c.PRIORITY), lId));
    var ranked = DSL.select(lId.as("id"), lTenant.as("tenant_id"), rank.as("rn"))
        .from(locked)
        .asTable("ranked");
    Field<Long> rId = ranked.field("id", Long.class);
    Field<Integer> rTenant = ranked.field("tenant_id", Integer.class);
    var picked = DSL.select(rId)
        .from(ranked)
        .where(ranked.field("rn", Integer.class).eq(DSL.inline(1)))
        .and(rTenant.isNull()
            .or(DSL.notExists(DSL.selectOne().from(running)
                .where(running.TENANT_ID.eq(rTenant))
                .and(running.BLOCKED.isFalse())
                .and(running.STATE.eq(DSL.inline(TaskState.running))))));
    Field<Integer> lockedCount = DSL.field(DSL.selectCount().from(locked));

    // id = ANY(ARRAY(...)): an index scan on the primary key whatever the plan's row estimates
    return PreparedQuery.of(DSL.with(locked)
        .update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.running))
        .set(TASK.ATTEMPT, TASK.ATTEMPT.plus(DSL.inline(1)))
        .set(TASK.OWNER, DSL.param("owner", String.class))
        .set(TASK.ATTEMPTED_AT, DSL.currentInstant())
        .set(TASK.LEASE_UNTIL, DSL.currentInstant().plus(DSL.param("lease", DayToSecond.class)))
        .where(TASK.ID.eq(DSL.any(DSL.array(picked))))
        .returningResult(TASK.ID, TASK.KIND, TASK.QUEUE, TASK.PAYLOAD, TASK.TENANT_ID,
            TASK.ATTEMPT, TASK.MAX_ATTEMPTS, TASK.RUN_AT, TASK.ATTEMPTED_AT, lockedCount,
            // the tenant's name, from the registry's primary key: no extra round trip per new tenant
            DSL.field(DSL.select(TENANT.NAME).from(TENANT).where(TENANT.ID.eq(TASK.TENANT_ID)))));
  }

  /**
   * Claims up to {@code limit} tasks in one autocommit statement. Locks: row locks (FOR UPDATE
   * SKIP LOCKED) on at most {@code limit} claimable rows, held until the statement commits.
   */
  public static Claim claimAvailable(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      int limit, String owner, Duration lease) {
    PreparedQuery query = CLAIMS.computeIfAbsent(queues.size(), ClaimQueries::claimQuery);
    try (java.sql.Connection conn = dataSource.getConnection()) {
      java.util.Map<String, Object> values = new java.util.HashMap<>();
      for (int i = 0; i < queues.size(); i++) {
        values.put("queue" + i, queues.get(i));
      }
      values.put("kinds", conn.createArrayOf("text", kinds.toArray()));
      values.put("limit", limit);
      values.put("owner", owner);
      values.put("lease", new org.postgresql.util.PGInterval(0, 0, 0, 0, 0, lease.toMillis() / 1000.0));
      List<Claimed> tasks = new ArrayList<>();
      int lockedRows = 0;
      try (java.sql.PreparedStatement ps = query.prepare(conn, values);
          java.sql.ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long tenant = rs.getLong(5);
          Integer tenantId = rs.wasNull() ? null : (int) tenant;
          tasks.add(new Claimed(rs.getLong(1), rs.getString(2), rs.getString(3), JSONB.valueOf(rs.getString(4)),
              tenantId, rs.getString(11), rs.getInt(6), rs.getInt(7),
              rs.getObject(8, java.time.OffsetDateTime.class).toInstant(),
              rs.getObject(9, java.time.OffsetDateTime.class).toInstant()));
          lockedRows = rs.getInt(10);
        }
      }
      return new Claim(tasks, lockedRows);
    } catch (java.sql.SQLException e) {
      throw new org.jooq.exception.DataAccessException("claim failed: " + e.getMessage(), e);
    }
  }
}
