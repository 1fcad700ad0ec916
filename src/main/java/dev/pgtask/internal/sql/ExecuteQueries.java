package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.FLOW_LIMIT;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The start of a claimed task's execution in its transaction: the fenced re-lock of its row, its
 * tenant's advisory lock, its transaction-local settings, and its cancel request, read in one
 * statement ({@link #lockForExecution}, and {@link #LOCK_CLAIM_HEAD}, the same re-lock sent right
 * after a claim). Fencing rule: see {@link Fence}. The completions are {@link CompletionQueries}',
 * the other outcomes {@link OutcomeQueries}'.
 */
public final class ExecuteQueries {

  private ExecuteQueries() {}

  /** Result of {@link #lockForExecution}. */
  public enum LockResult {
    /** Row locked (and tenant lock taken, if any): run the handler. */
    LOCKED,
    /** The tenant's advisory lock is held by another transaction (a tenant without a limit). */
    TENANT_BUSY,
    /**
     * A concurrency limit that applies to the task is full (all its slots are held by other
     * transactions): {@link #heldBackBy} names which. No slot of any limit is held.
     */
    LIMIT_FULL,
    /** The claim is stale (rescued, cancelled, ...): abandon silently. */
    FENCED_OUT,
    /**
     * Row locked, but {@code pgtask.cancel_task} asked for this attempt to be cancelled (it found
     * the row locked by the claim or a commit batch): end it cancelled without running it.
     */
    CANCEL_REQUESTED;

    /**
     * The result of one row of a lock statement: its held-back-by and cancel-request columns.
     * {@code heldBackBy} is NULL when every slot was taken, else the scope of the full limit:
     * {@code "tenant_lock"} (a tenant without a limit: its one lock) is {@link #TENANT_BUSY}, a full
     * limit ({@code "tenant"}, {@code "queue"}, {@code "kind"}) {@link #LIMIT_FULL}.
     */
    public static LockResult of(String heldBackBy, boolean cancelRequested) {
      if (cancelRequested) {
        return CANCEL_REQUESTED;
      }
      if (heldBackBy == null) {
        return LOCKED;
      }
      return TENANT_LOCK.equals(heldBackBy) ? TENANT_BUSY : LIMIT_FULL;
    }

    /** The result of the current row of a lock statement's result set, its columns read by name. */
    static LockResult of(ResultSet rs) throws SQLException {
      return of(rs.getString(HELD_BACK_BY), rs.getBoolean(CANCEL_REQUESTED_COLUMN));
    }
  }

  /**
   * The lock statement's column: NULL when the task's tenant lock and every slot of its limits
   * were taken, else {@link #TENANT_LOCK} or the scope ({@code tenant}, {@code queue},
   * {@code kind}) of the first full limit.
   */
  private static final String HELD_BACK_BY = "held_back_by";
  /** {@link #HELD_BACK_BY}'s value for a tenant without a limit whose one lock is held. */
  public static final String TENANT_LOCK = "tenant_lock";
  /** The lock statement's column: a cancel request stands for the attempt. */
  private static final String CANCEL_REQUESTED_COLUMN = "cancel_requested";

  // re-lock (fenced) + transaction-local settings + tenant locks of one or more tasks of one owner,
  // in one statement whose shape does not depend on the count
  private static final PreparedQuery LOCK_FOR_EXECUTION = PreparedQuery.of(lockQuery(TaskSql.opaqueIds(),
      Fence.heldAttempt(), DSL.param("app", String.class),
      DSL.param("timeout", String.class), DSL.param("idle_timeout", String.class)));

  /**
   * The re-lock of the claim's head in {@link ClaimQueries#claimAndStart}: the task and its
   * attempt come from this session's currval() of the two hand-over sequences
   * ({@link TaskSql#HEAD_ID_SEQUENCE}, {@link TaskSql#HEAD_ATTEMPT_SEQUENCE}), which the claim
   * statement just set (0 and 0 when the claim took no transactional task); application_name is
   * built in the statement, and the server-side timeouts are looked up by kind in a
   * {"kind": "millis"} parameter. Its row is read with {@link LockResult#of(ResultSet)}.
   */
  static final PreparedQuery LOCK_CLAIM_HEAD = lockClaimHeadQuery();

  private static PreparedQuery lockClaimHeadQuery() {
    // the head's id and attempt, as the claim just set them for this session (see ClaimStatements),
    // each read once by a scalar sub-select (an InitPlan): currval() is volatile, and compared with
    // the row's columns directly it cannot be an index key, so the re-lock scanned the whole task
    // table (1.8 ms a start with 12,000 rows in it, growing with the table; the primary key: 0.08 ms)
    Field<Long[]> ids = DSL.field(DSL.select(DSL.array(currval(TaskSql.HEAD_ID_SEQUENCE))))
        .cast(SQLDataType.BIGINT.array());
    Field<Integer> attempt = DSL.field(DSL.select(currval(TaskSql.HEAD_ATTEMPT_SEQUENCE)))
        .cast(SQLDataType.INTEGER);
    Field<String> app = DSL.left(DSL.concat(DSL.inline("pgtask task "), TASK.ID.cast(SQLDataType.VARCHAR),
        DSL.inline(" "), DSL.param("worker", String.class)), DSL.inline(63));
    Field<String> timeout = DSL.field("({0} ->> {1})", SQLDataType.VARCHAR,
        DSL.param("timeouts", SQLDataType.JSONB), TASK.KIND);
    Field<String> idleTimeout = DSL.field("({0} ->> {1})", SQLDataType.VARCHAR,
        DSL.param("idle_timeouts", SQLDataType.JSONB), TASK.KIND);
    return PreparedQuery.of(lockQuery(ids, attempt, app, timeout, idleTimeout));
  }

  /** This session's currval() of a sequence (the claim's hand-over). */
  private static Field<Long> currval(String sequence) {
    return DSL.function("currval", SQLDataType.BIGINT, DSL.field("{0}::regclass", Object.class, DSL.inline(sequence)));
  }

  private static org.jooq.Select<?> lockQuery(Field<Long[]> ids, Field<Integer> attempt, Field<String> app,
      Field<String> timeout, Field<String> idleTimeout) {
    return DSL.select(lockFields(app, timeout, idleTimeout))
        .from(TASK)
        .where(TASK.ID.eq(DSL.any(ids)))
        .and(TASK.ATTEMPT.eq(attempt))
        .and(TaskSql.runningById(TASK))
        .and(TASK.OWNER.eq(DSL.param("owner", String.class)))
        .orderBy(TASK.ID)
        .forNoKeyUpdate();
  }

  private static List<org.jooq.SelectField<?>> lockFields(Field<String> app, Field<String> timeout,
      Field<String> idleTimeout) {
    return List.of(
        TASK.ID,
        TaskSql.setLocal("application_name", app),
        TaskSql.setLocal("statement_timeout", timeout),
        TaskSql.setLocal("idle_in_transaction_session_timeout", idleTimeout),
        // without any limit set, today's one tenant lock; with limits, every slot that applies,
        // all or nothing (db/R__01a_flow_limits.sql). Whether a limit is set: an InitPlan, once
        // per statement
        DSL.when(limitsSet().isFalse(),
                DSL.when(TASK.TENANT_ID.isNull().or(DSL.function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN,
                    DSL.param("namespace", Integer.class), TASK.TENANT_ID)), DSL.inline((String) null))
                .otherwise(DSL.inline(TENANT_LOCK)))
            .otherwise(DSL.function(DSL.name("pgtask", "take_slots"), SQLDataType.VARCHAR,
                DSL.param("slot_namespace", Integer.class), TASK.TENANT_ID, TASK.QUEUE, TASK.KIND)).as(HELD_BACK_BY),
        DSL.field(TaskSql.cancelRequested()).as(CANCEL_REQUESTED_COLUMN));
  }

  /** Whether any limit is set: {@code (SELECT EXISTS (SELECT 1 FROM pgtask.flow_limit))}. */
  private static Field<Boolean> limitsSet() {
    return DSL.field(DSL.select(DSL.field(DSL.exists(DSL.selectOne().from(FLOW_LIMIT)))));
  }

  /**
   * Starts the execution of one or more tasks of one owner inside the caller's open transaction,
   * in one round trip: re-locks each task row (fenced), takes each tenant's transaction-scoped
   * advisory lock, and sets transaction-local {@code application_name} and server-side timeouts.
   * Returns LOCKED, TENANT_BUSY, LIMIT_FULL or CANCEL_REQUESTED per task id; a task missing from the map is
   * fenced out. With {@code savepoint}, the first task's savepoint ({@link TaskSql#SAVEPOINT}) is
   * opened in the same round trip. Locks:
   * the rows (FOR NO KEY UPDATE, in id order) and {@code (namespace, tenant_id)} of each, until
   * the transaction ends. A lock taken for a row that then fails the fence is released with the
   * transaction.
   */
  public static Map<Long, LockResult> lockForExecution(Connection tx, List<Fence> fences,
      String applicationName, long serverTimeoutMillis, int namespace, boolean savepoint) throws SQLException {
    return lockForExecution(tx, fences, applicationName, serverTimeoutMillis, namespace, savepoint,
        TxBounds.ofBeat(TxBounds.MAX));
  }

  /** As above, with the re-lock bounded by {@code bounds} ({@link TxBounds#forRelock}). */
  public static Map<Long, LockResult> lockForExecution(Connection tx, List<Fence> fences,
      String applicationName, long serverTimeoutMillis, int namespace, boolean savepoint, TxBounds bounds)
      throws SQLException {
    String timeout = Long.toString(serverTimeoutMillis);
    Map<Long, LockResult> results = new java.util.HashMap<>();
    // the re-lock's bounds pipelined before it (lock_timeout set before the row lock is requested),
    // the default lock_timeout back after it: one round trip
    PreparedQuery query = BOUNDED_LOCKS.computeIfAbsent(savepoint + " " + bounds, k ->
        (savepoint ? LOCK_FOR_EXECUTION_RESTORED.followedBy(TaskSql.SAVEPOINT) : LOCK_FOR_EXECUTION_RESTORED)
            .precededBy(bounds.forRelock().setLocalSql()));
    try (PreparedStatement ps = query.prepare(tx, Map.of("app", applicationName, "timeout", timeout,
            "idle_timeout", timeout, "namespace", namespace, "slot_namespace", namespace, "ids", Fence.idArray(tx, fences),
            "attempts", Fence.attemptMap(fences), "owner", fences.get(0).owner()))) {
      boolean isResultSet = ps.execute();
      while (!isResultSet) { // past the bounds' update counts
        if (ps.getUpdateCount() == -1) {
          throw new IllegalStateException("the lock statement returned no rows");
        }
        isResultSet = ps.getMoreResults();
      }
      try (ResultSet rs = ps.getResultSet()) {
        while (rs.next()) {
          results.put(rs.getLong(TASK.ID.getName()), LockResult.of(rs));
        }
      }
    }
    return results;
  }

  private static final PreparedQuery LOCK_FOR_EXECUTION_RESTORED = LOCK_FOR_EXECUTION.followedBy(TxBounds.AFTER_RELOCK);
  // by savepoint and bounds
  private static final Map<String, PreparedQuery> BOUNDED_LOCKS = new java.util.concurrent.ConcurrentHashMap<>();
}
