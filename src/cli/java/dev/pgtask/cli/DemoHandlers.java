package dev.pgtask.cli;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.inline;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskContext;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The demo handlers behind {@code pgtask worker --demo-handlers} (and {@code pgtask demo}). The demo
 * and the acceptance tests rely on exactly these kinds and this behaviour:
 * <ul>
 *   <li>{@value #NOOP} does nothing;</li>
 *   <li>{@value #SLEEP} sleeps {@code payload.ms} milliseconds (default 0);</li>
 *   <li>{@value #RECORD}, in the task's transaction, inserts a row into {@code pgtask_demo.execution}
 *       with {@code started_at = clock_timestamp()}, sleeps {@code payload.ms} (default 0), then sets
 *       {@code finished_at = clock_timestamp()}; with {@code payload.fail_attempts = K} it throws on
 *       attempts 1..K, after the insert, so that row rolls back with the attempt. Each committed row
 *       is one execution: duplicates and overlaps are visible, not prevented;</li>
 *   <li>{@value #FAIL} always throws;</li>
 *   <li>{@value #HALT} halts the JVM at once ({@link Runtime#halt}), to simulate a crash.</li>
 * </ul>
 */
public final class DemoHandlers {

  public static final String NOOP = "demo.noop";
  public static final String SLEEP = "demo.sleep";
  public static final String RECORD = "demo.record";
  public static final String FAIL = "demo.fail";
  public static final String HALT = "demo.halt";

  /** Every demo kind. */
  public static final List<String> KINDS = List.of(NOOP, SLEEP, RECORD, FAIL, HALT);

  /** The demo's schema. */
  public static final String SCHEMA = "pgtask_demo";

  /** {@code pgtask_demo.execution}: one row per committed execution of a {@value #RECORD} task. */
  public static final Table<?> EXECUTION = table(name(SCHEMA, "execution"));
  public static final Field<Long> TASK_ID = field(name("task_id"), SQLDataType.BIGINT);
  public static final Field<Integer> ATTEMPT = field(name("attempt"), SQLDataType.INTEGER);
  public static final Field<String> TENANT = field(name("tenant"), SQLDataType.CLOB);
  public static final Field<String> WORKER = field(name("worker"), SQLDataType.CLOB);
  public static final Field<OffsetDateTime> STARTED_AT = field(name("started_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  public static final Field<OffsetDateTime> FINISHED_AT = field(name("finished_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  /**
   * Key of the transaction-level advisory lock that serializes concurrent {@link #ensureSchema} calls
   * (one-bigint form, so it cannot meet pgtask's two-int tenant and maintenance locks).
   */
  static final long SCHEMA_LOCK_KEY = 0x7067_7461_6465_6d6fL; // "pgtademo" in ASCII

  private static final Field<OffsetDateTime> CLOCK_TIMESTAMP =
      function("clock_timestamp", SQLDataType.TIMESTAMPWITHTIMEZONE);

  private DemoHandlers() {}

  /** Registers every demo kind on {@code builder}. */
  public static PgTaskWorker.Builder register(PgTaskWorker.Builder builder) {
    return builder
        .handler(NOOP, (ctx, payload) -> {})
        .handler(SLEEP, (ctx, payload) -> Thread.sleep(millis(payload)))
        .handler(RECORD, DemoHandlers::record)
        .handler(FAIL, (ctx, payload) -> {
          throw new IllegalStateException(FAIL + " always fails (attempt " + ctx.attempt() + ")");
        })
        .handler(HALT, (ctx, payload) -> Runtime.getRuntime().halt(1));
  }

  /**
   * Creates {@code pgtask_demo.execution} if missing. Safe when several workers start at once: the
   * DDL runs under a transaction-level advisory lock.
   */
  public static void ensureSchema(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        DSLContext dsl = DSL.using(c, SQLDialect.POSTGRES);
        dsl.select(function("pg_advisory_xact_lock", SQLDataType.OTHER, inline(SCHEMA_LOCK_KEY))).fetch();
        dsl.createSchemaIfNotExists(name(SCHEMA)).execute();
        dsl.createTableIfNotExists(EXECUTION)
            .columns(TASK_ID, ATTEMPT, TENANT, WORKER, STARTED_AT, FINISHED_AT)
            .execute();
        dsl.createIndexIfNotExists(name("execution_task_id_idx")).on(EXECUTION, TASK_ID).execute();
        c.commit();
      } catch (RuntimeException | SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create " + SCHEMA + ".execution: " + e.getMessage(), e);
    }
  }

  private static void record(TaskContext ctx, JsonNode payload) throws Exception {
    DSLContext dsl = ctx.dsl();
    // started_at: the database clock at handler start (clock_timestamp, not the transaction's now())
    dsl.insertInto(EXECUTION)
        .columns(TASK_ID, ATTEMPT, TENANT, WORKER, STARTED_AT)
        .values(DSL.val(ctx.taskId()), DSL.val(ctx.attempt()), DSL.val(ctx.tenant()), DSL.val(ctx.workerId()),
            CLOCK_TIMESTAMP)
        .execute();
    int failAttempts = payload.path("fail_attempts").asInt(0);
    if (ctx.attempt() <= failAttempts) {
      throw new IllegalStateException(RECORD + " fails attempt " + ctx.attempt() + " of the first " + failAttempts
          + " by request (fail_attempts)");
    }
    Thread.sleep(millis(payload));
    // "that row": the only unfinished row of this task and attempt visible here is our own
    // uncommitted one (every committed row has finished_at set; other uncommitted rows are invisible)
    dsl.update(EXECUTION)
        .set(FINISHED_AT, CLOCK_TIMESTAMP)
        .where(TASK_ID.eq(ctx.taskId()), ATTEMPT.eq(ctx.attempt()), FINISHED_AT.isNull())
        .execute();
  }

  private static long millis(JsonNode payload) {
    long ms = payload == null ? 0 : payload.path("ms").asLong(0);
    return Math.max(0, ms);
  }
}
