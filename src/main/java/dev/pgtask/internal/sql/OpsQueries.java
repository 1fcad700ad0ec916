package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.Routines;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record1;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The queries of {@code pgtask demo} on its own queue (the reads of the public views, the demo's
 * too, are {@link OperatorViews}', behind {@code dev.pgtask.ops.PgTaskOperations}).
 */
public final class OpsQueries {

  private OpsQueries() {}

  // ---- pgtask demo: its own queue only ----

  /** The database clock ({@code clock_timestamp()}). Locks: none. */
  public static Instant selectClock(DSLContext dsl) {
    return dsl.select(TaskSql.clockTimestamp()).fetchOne(0, Instant.class);
  }

  /** Deletes every task of {@code queue} (the demo's leftovers). Locks: those task rows. */
  public static int deleteQueue(DSLContext dsl, String queue) {
    return dsl.deleteFrom(TASK).where(TASK.QUEUE.eq(queue)).execute();
  }

  /**
   * Enqueues {@code count} tasks of {@code kind} in one statement through {@code pgtask.enqueue}:
   * task {@code g} (1-based) gets tenant {@code tenantPrefix + (g % tenants + 1)} and payload
   * {@code {"ms": random 0..maxMs}}. Locks: the inserted rows (and the tenant rows it creates).
   */
  public static int enqueueDemoTasks(DSLContext dsl, String kind, String queue, int count, int tenants,
      String tenantPrefix, int maxMs) {
    Table<Record1<Integer>> series = DSL.generateSeries(1, count).as("g", "n");
    Field<Integer> n = series.field("n", Integer.class);
    Field<JSONB> payload = DSL.function("jsonb_build_object", SQLDataType.JSONB, DSL.inline("ms"),
        DSL.floor(DSL.rand().mul(DSL.inline(maxMs + 1))).cast(SQLDataType.INTEGER));
    Field<String> tenant = DSL.concat(DSL.inline(tenantPrefix),
        n.mod(DSL.inline(tenants)).plus(DSL.inline(1)).cast(SQLDataType.CLOB));
    Field<Long> id = Routines.enqueue(DSL.inline(kind), payload, DSL.inline(queue), tenant,
        DSL.castNull(SQLDataType.INSTANT), DSL.inline(0), DSL.inline(25), DSL.castNull(SQLDataType.CLOB),
        DSL.castNull(SQLDataType.INTERVAL), DSL.castNull(SQLDataType.BIGINT.array()), DSL.castNull(SQLDataType.CLOB));
    return dsl.select(id).from(series).fetch().size();
  }

  /**
   * Counts of {@code queue}'s tasks: total, completed, running, and retried (with at least one
   * error entry). Locks: none.
   */
  public static Progress selectProgress(DSLContext dsl, String queue) {
    var r = dsl.select(
            DSL.count(),
            DSL.count().filterWhere(TASK.STATE.eq(TaskState.completed)),
            DSL.count().filterWhere(TASK.STATE.eq(TaskState.running)),
            DSL.count().filterWhere(TASK.ERRORS.isNotNull()))
        .from(TASK)
        .where(TASK.QUEUE.eq(queue))
        .fetchOne();
    return new Progress(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /** The ids of every task of {@code queue}. Locks: none. */
  public static List<Long> selectTaskIds(DSLContext dsl, String queue) {
    return dsl.select(TASK.ID).from(TASK).where(TASK.QUEUE.eq(queue)).fetch(TASK.ID);
  }

  /** Counts of one queue's tasks. */
  public record Progress(int total, int completed, int running, int retried) {}

  /** How many of {@code queue}'s tasks each worker is running now (claimed, not finished). Locks: none. */
  public static Map<String, Integer> selectRunningByWorker(DSLContext dsl, String queue) {
    return dsl.select(TASK.OWNER, DSL.count())
        .from(TASK)
        .where(TASK.QUEUE.eq(queue), TASK.STATE.eq(TaskState.running), TASK.OWNER.isNotNull())
        .groupBy(TASK.OWNER)
        .fetchMap(TASK.OWNER, DSL.count());
  }

  /**
   * Tasks of {@code queue} that the rescue pass took back from {@code worker}: their error history
   * has a "worker lost" entry naming it. Returns each task's id and the time of that entry. Locks: none.
   */
  public static Map<Long, Instant> selectRescuedFrom(DSLContext dsl, String queue, String worker) {
    // jsonpath literals: PostgreSQL types the untyped literal from the function's signature
    Field<JSONB> vars = DSL.function("jsonb_build_object", SQLDataType.JSONB, DSL.inline("w"), DSL.val(worker));
    String lost = "$[*] ? (@.worker == $w && @.error starts with \"worker lost\")";
    Field<JSONB> entry = DSL.function("jsonb_path_query_first", SQLDataType.JSONB, TASK.ERRORS, DSL.inline(lost), vars);
    Field<Instant> at = DSL.jsonbGetAttributeAsText(entry, "at").cast(SQLDataType.INSTANT).as("rescued_at");
    return dsl.select(TASK.ID, at)
        .from(TASK)
        .where(TASK.QUEUE.eq(queue), TASK.ERRORS.isNotNull(), entry.isNotNull())
        .fetchMap(TASK.ID, at);
  }
}
