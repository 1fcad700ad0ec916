package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.CANCEL_REQUEST;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Instant;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * What the statements on a claimed task's path share, owned here so that the claim, the re-lock,
 * the completions, the outcomes and the held-task checks depend on this class and not on each
 * other: the claim's plan settings, the two sequences that hand the claim's head to the re-lock
 * sent after it, the task savepoint's statements, and the conditions and fields every one of them
 * writes alike (a running row found by id, the database clock, a standing cancel request).
 */
public final class TaskSql {

  private TaskSql() {}

  /**
   * The first statement of a claim's transaction (and of a maintenance pass's): the claim runs on
   * its generic plan from its first execution. The sub-selects of the claim make a custom plan cost
   * what the generic one costs for the same statistics, but the server compares the generic plan's
   * cost, taken when it is built, with the average cost of the first five custom plans, taken
   * earlier. The planner scales its row estimates by the table's current size, so while the task
   * table grows (a backlog building up) the generic plan looked dearer than those older custom
   * plans, and the server went on planning the claim on every execution. PlanCacheTest saw it for
   * the claim-and-start, which runs only into an idle worker and so rarely that the average did not
   * catch up (110 executions, all planned), and for the busy worker's claim on a connection that ran
   * it ten times (all planned). A generic plan made while the table was empty (a poll of an idle
   * queue) reads the whole table for each candidate row once a backlog arrives (measured: 395 ms for
   * one claim of a 4,000-task backlog, until the next ANALYZE), so the claim is planned with
   * sequential scans disabled: every lookup it makes has its index. And with JIT off: the server
   * would otherwise compile the claim on each execution once the table's size lifts the plan's cost
   * past {@code jit_above_cost} (as the database functions do; see db/R__02_tenant_heads.sql).
   * And without bitmap scans: the claimable index read in claim order stops after the claim's
   * LIMIT, a bitmap scan reads every claimable task of the queue and sorts them. The planner took
   * the bitmap scan whenever it expected few rows to pass the claim's conditions, which it
   * multiplies as if independent: beside 1,000,000 rows of completed history and a backlog in
   * another queue it expected one of 20,000 claimable tasks, and each claim of 200 read and sorted
   * 19,000 (13 ms; plain mode at 0.55 of its speed on an empty table; issue 31,
   * {@code EmptyQueuePlansTest}).
   * {@code SET LOCAL} ends with the claim's transaction; the pooled connection keeps nothing of it.
   */
  public static final String GENERIC_PLAN = "SET LOCAL plan_cache_mode = force_generic_plan;\n"
      + "SET LOCAL enable_seqscan = off;\nSET LOCAL enable_bitmapscan = off;\nSET LOCAL jit = off";

  /** The sequence whose currval() carries the claim's head id to the re-lock sent after it. */
  public static final String HEAD_ID_SEQUENCE = "pgtask.claim_head_id";
  /** The sequence whose currval() carries the claim's head attempt to the re-lock sent after it. */
  public static final String HEAD_ATTEMPT_SEQUENCE = "pgtask.claim_head_attempt";

  /** The savepoint each transactional task's handler runs in. */
  public static final String SAVEPOINT = "SAVEPOINT pgtask_task";
  /** Ends the task's savepoint, keeping its work in the task transaction. */
  public static final String RELEASE_SAVEPOINT = "RELEASE SAVEPOINT pgtask_task";
  /** Undoes the task's work back to its savepoint, and ends the savepoint. */
  public static final String ROLLBACK_SAVEPOINT = "ROLLBACK TO SAVEPOINT pgtask_task; RELEASE SAVEPOINT pgtask_task";
  /**
   * Checks the handler's deferred constraints now, inside its savepoint, so that a violation
   * fails this task under its own locks instead of failing the COMMIT. Sent only in a transaction
   * that carries one task: it changes the constraint mode for the rest of the transaction.
   */
  public static final String CHECK_DEFERRED = "SET CONSTRAINTS ALL IMMEDIATE";

  /** The error history's entry when a run ends cancelled because of a cancel request its worker had not acted on. */
  public static final String CANCELLED_AS_REQUESTED = "cancelled: cancellation requested while this attempt ran";

  /**
   * {@code state = 'running'} for statements that find their rows by id. Compared as text so the
   * planner cannot answer it from {@code task_running_idx}: that partial index is tiny when the
   * statistics were taken and large under load, and a plan that scans it (every running task,
   * each checked on the heap) instead of the primary key made the per-task statements 50 times
   * slower in the benchmark.
   */
  static Condition runningById(dev.pgtask.internal.sql.gen.tables.Task t) {
    return t.STATE.cast(SQLDataType.CLOB).eq(DSL.inline(TaskState.running.getLiteral()));
  }

  /**
   * The ids parameter behind a scalar sub-select: the planner cannot see how many ids there are,
   * so a plan for these values costs what the generic plan costs and PostgreSQL settles on the
   * generic plan. Bound directly, a custom plan for one id always looked cheaper, and the server
   * planned the statement again on every execution (a tenth of a millisecond per completion).
   */
  static Field<Long[]> opaqueIds() {
    return DSL.field(DSL.select(DSL.param("ids", Long[].class))).cast(SQLDataType.BIGINT.array());
  }

  /** {@code set_config(name, value, true)}: a transaction-local setting, as a field. */
  static Field<String> setLocal(String name, Field<String> value) {
    return DSL.function("set_config", SQLDataType.CLOB, DSL.inline(name), value, DSL.inline(true));
  }

  /** {@code clock_timestamp()}: the database clock now, not the transaction's start. */
  public static Field<Instant> clockTimestamp() {
    return DSL.function("clock_timestamp", TASK.FINISHED_AT.getDataType());
  }

  /**
   * A cancel request stands for the row's current attempt (pgtask.cancel_request, written by
   * {@code pgtask.cancel_task} when the task's worker held its row): a run that ends other than by
   * completing then ends the task cancelled instead of queueing it again. Used in statements on
   * {@code TASK}, where the attempt is the one running.
   */
  public static Condition cancelRequested() {
    return DSL.exists(DSL.selectOne().from(CANCEL_REQUEST)
        .where(CANCEL_REQUEST.TASK_ID.eq(TASK.ID))
        .and(CANCEL_REQUEST.ATTEMPT.eq(TASK.ATTEMPT)));
  }
}
