package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.ENQUEUE_BATCH;

import dev.pgtask.internal.sql.gen.Routines;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** Inserting tasks: through pgtask.enqueue / pgtask.enqueue_batch, the same path as SQL callers. */
public final class EnqueueQueries {

  private EnqueueQueries() {}

  /**
   * One task ready for the database: payload already serialized, runAt or delay resolved; debounce
   * (with the dedupe key as its key) or null. A batch takes no debounce (EnqueueQueries' caller
   * refuses it). Dependencies: {@code dependsOn} the parent ids (alone; null for none),
   * {@code dependsOnJson} the parents as enqueue_batch takes them (in a batch: a JSON array of ids
   * and {@code {"batch": k}}; null for none), {@code onParentFailure} cancel, run or wait (null:
   * cancel).
   */
  public record Row(String kind, String payloadJson, String queue, String tenant, Instant runAt,
      Duration delay, int priority, int maxAttempts, String dedupeKey, Duration debounce,
      Long[] dependsOn, String dependsOnJson, String onParentFailure) {}

  /**
   * Enqueues one task through {@code pgtask.enqueue}. Locks: inserts the task row (and a tenant
   * registry row on a tenant's first use); with a dedupe key, waits for a concurrent inserter of
   * the same key to finish; with a debounce, updates (locks) the pending task of its key instead of
   * inserting, when there is one.
   */
  public static long enqueue(DSLContext dsl, Row row) {
    return enqueue(dsl, row, null);
  }

  /**
   * {@link #enqueue(DSLContext, Row)}, and with {@code traceParent} not null, the same statement
   * first sets the transaction-local {@code pgtask.trace_parent} to it ({@code ""}: none), which the
   * insert trigger stores with the task (V4__trace_context.sql).
   */
  public static long enqueue(DSLContext dsl, Row row, String traceParent) {
    PreparedQuery query = traceParent != null
        ? (row.delay() != null ? TRACED_ENQUEUE_AFTER : TRACED_ENQUEUE_AT)
        : row.delay() != null ? ENQUEUE_AFTER : ENQUEUE_AT;
    java.util.Map<String, Object> values = new java.util.HashMap<>();
    values.put("kind", row.kind());
    if (traceParent != null) {
      values.put("trace_parent", traceParent);
    }
    values.put("payload", row.payloadJson());
    values.put("queue", row.queue());
    values.put("tenant", row.tenant());
    values.put("priority", row.priority());
    values.put("max_attempts", row.maxAttempts());
    values.put("dedupe_key", row.dedupeKey());
    values.put("debounce", row.debounce() == null ? null : interval(row.debounce()));
    values.put("on_parent_failure", row.onParentFailure());
    if (row.delay() != null) {
      values.put("delay", interval(row.delay()));
    } else {
      values.put("run_at", row.runAt() == null ? null : row.runAt().atOffset(ZoneOffset.UTC));
    }
    // the caller's connection (its transaction) or one from the pool, as the context provides
    return dsl.connectionResult(c -> {
      values.put("depends_on", row.dependsOn() == null ? null : c.createArrayOf("int8", row.dependsOn()));
      try (java.sql.PreparedStatement ps = query.prepare(c, values); java.sql.ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(ID);
      }
    });
  }

  private static org.postgresql.util.PGInterval interval(Duration d) {
    return new org.postgresql.util.PGInterval(0, 0, 0, 0, 0, d.getSeconds() + d.getNano() / 1e9);
  }

  // pgtask.enqueue, rendered once: rendering the call costs the producer more CPU than the
  // database spends on the insert. run_at is given (NULL: now) or a delay from the database clock.
  private static final PreparedQuery ENQUEUE_AT = enqueueQuery(DSL.param("run_at", Instant.class), false);
  private static final PreparedQuery ENQUEUE_AFTER = enqueueQuery(
      DSL.currentInstant().plus(DSL.param("delay", org.jooq.types.DayToSecond.class)), false);
  private static final PreparedQuery TRACED_ENQUEUE_AT = enqueueQuery(DSL.param("run_at", Instant.class), true);
  private static final PreparedQuery TRACED_ENQUEUE_AFTER = enqueueQuery(
      DSL.currentInstant().plus(DSL.param("delay", org.jooq.types.DayToSecond.class)), true);

  /**
   * {@code value}, evaluated after {@code set_config('pgtask.trace_parent', :trace_parent, true)}:
   * a function's arguments are evaluated before it runs, so the setting is in place for its insert.
   */
  private static <T> Field<T> afterTraceParent(Field<T> value) {
    Field<String> set = DSL.function("set_config", String.class, DSL.inline("pgtask.trace_parent"),
        DSL.param("trace_parent", String.class), DSL.inline(true));
    return DSL.when(set.isNull(), DSL.castNull(value.getDataType())).otherwise(value);
  }

  private static PreparedQuery enqueueQuery(Field<Instant> runAt, boolean traced) {
    Field<String> kind = DSL.param("kind", String.class);
    return PreparedQuery.of(DSL.select(Routines.enqueue(
        traced ? afterTraceParent(kind) : kind,
        DSL.param("payload", JSONB.class),
        DSL.param("queue", String.class),
        DSL.param("tenant", String.class),
        runAt,
        DSL.param("priority", Integer.class),
        DSL.param("max_attempts", Integer.class),
        DSL.param("dedupe_key", String.class),
        DSL.param("debounce", org.jooq.types.YearToSecond.class),
        DSL.param("depends_on", SQLDataType.BIGINT.array()),
        DSL.param("on_parent_failure", String.class)).as(ID)));
  }

  /** The column of the new task's id, in both statements' results. */
  private static final String ID = "id";

  /**
   * Enqueues a batch through {@code pgtask.enqueue_batch} in one statement; returns the ids in
   * input order. Locks: inserts the task rows (and new tenant registry rows, in name order).
   */
  public static List<Long> enqueueBatch(DSLContext dsl, List<Row> rows) {
    return enqueueBatch(dsl, rows, null);
  }

  /** {@link #enqueueBatch(DSLContext, List)}, setting {@code pgtask.trace_parent} first as {@link #enqueue(DSLContext, Row, String)} does. */
  public static List<Long> enqueueBatch(DSLContext dsl, List<Row> rows, String traceParent) {
    int n = rows.size();
    if (n == 0) {
      return List.of();
    }
    String[] kinds = new String[n];
    String[] payloads = new String[n];
    String[] queues = new String[n];
    String[] tenants = new String[n];
    String[] runAts = new String[n];
    Integer[] priorities = new Integer[n];
    Integer[] maxAttempts = new Integer[n];
    String[] dedupeKeys = new String[n];
    String[] dependsOn = new String[n];
    String[] onParentFailures = new String[n];
    boolean anyDependency = false;
    boolean anyTenant = false;
    boolean anyRunAt = false;
    boolean anyDedupe = false;
    boolean anyDelay = false;
    for (int i = 0; i < n; i++) {
      Row r = rows.get(i);
      kinds[i] = r.kind();
      payloads[i] = r.payloadJson();
      queues[i] = r.queue();
      tenants[i] = r.tenant();
      anyTenant |= r.tenant() != null;
      anyDelay |= r.delay() != null;
      priorities[i] = r.priority();
      maxAttempts[i] = r.maxAttempts();
      dedupeKeys[i] = r.dedupeKey();
      anyDedupe |= r.dedupeKey() != null;
      dependsOn[i] = r.dependsOnJson();
      onParentFailures[i] = r.onParentFailure();
      anyDependency |= r.dependsOnJson() != null;
    }
    // the database clock, as pgtask.enqueue would use it (now() = transaction start)
    Instant dbNow = anyDelay ? dsl.select(DSL.currentInstant()).fetchOne().value1() : null;
    for (int i = 0; i < n; i++) {
      Row r = rows.get(i);
      Instant at = r.delay() != null ? dbNow.plus(r.delay()) : r.runAt();
      // ISO-8601 with its offset: the server reads it as timestamptz exactly
      runAts[i] = at == null ? null : at.toString();
      anyRunAt |= at != null;
    }
    boolean withTenants = anyTenant;
    boolean withRunAts = anyRunAt;
    boolean withDedupe = anyDedupe;
    boolean withDependencies = anyDependency;
    java.util.Map<String, Object> values = new java.util.HashMap<>();
    if (traceParent != null) {
      values.put("trace_parent", traceParent);
    }
    PreparedQuery query = traceParent != null ? TRACED_ENQUEUE_BATCH : ENQUEUE_BATCH_QUERY;
    // the caller's connection (its transaction) or one from the pool, as the context provides
    return dsl.connectionResult(c -> {
      values.put("kinds", c.createArrayOf("text", kinds));
      values.put("payloads", c.createArrayOf("jsonb", payloads));
      values.put("queues", c.createArrayOf("text", queues));
      values.put("tenants", withTenants ? c.createArrayOf("text", tenants) : null);
      values.put("run_ats", withRunAts ? c.createArrayOf("timestamptz", runAts) : null);
      values.put("priorities", c.createArrayOf("int4", priorities));
      values.put("max_attempts", c.createArrayOf("int4", maxAttempts));
      values.put("dedupe_keys", withDedupe ? c.createArrayOf("text", dedupeKeys) : null);
      values.put("depends_on", withDependencies ? c.createArrayOf("jsonb", dependsOn) : null);
      values.put("on_parent_failures", withDependencies ? c.createArrayOf("text", onParentFailures) : null);
      List<Long> ids = new ArrayList<>(n);
      try (java.sql.PreparedStatement ps = query.prepare(c, values); java.sql.ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(ENQUEUE_BATCH.ID.getName()));
        }
      }
      return ids;
    });
  }

  // pgtask.enqueue_batch, rendered once and bound straight to JDBC arrays, the ids read with plain
  // JDBC: jOOQ's array bindings and its records took about 60 % of the producer's CPU per batch
  // (JFR; 8.8 ms of CPU per 10,000 tasks before, 4.2 ms after).
  private static final PreparedQuery ENQUEUE_BATCH_QUERY = enqueueBatchQuery(false);
  private static final PreparedQuery TRACED_ENQUEUE_BATCH = enqueueBatchQuery(true);

  private static PreparedQuery enqueueBatchQuery(boolean traced) {
    Field<String[]> kinds = DSL.param("kinds", SQLDataType.CLOB.array());
    var call = ENQUEUE_BATCH.call(
        traced ? afterTraceParent(kinds) : kinds,
        DSL.param("payloads", SQLDataType.JSONB.array()),
        DSL.param("queues", SQLDataType.CLOB.array()),
        DSL.param("tenants", SQLDataType.CLOB.array()),
        DSL.param("run_ats", SQLDataType.TIMESTAMPWITHTIMEZONE.array()),
        DSL.param("priorities", SQLDataType.INTEGER.array()),
        DSL.param("max_attempts", SQLDataType.INTEGER.array()),
        DSL.param("dedupe_keys", SQLDataType.CLOB.array()),
        DSL.param("depends_on", SQLDataType.JSONB.array()),
        DSL.param("on_parent_failures", SQLDataType.CLOB.array()));
    return PreparedQuery.of(DSL.select(ENQUEUE_BATCH.ID).from(call).orderBy(ENQUEUE_BATCH.ORD));
  }
}
