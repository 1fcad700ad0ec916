package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.CANCEL_REQUEST;
import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Duration;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;

/**
 * A task's state changes made by the worker that claimed it. Fencing rule: every statement here is
 * conditioned on the task still being running, owned by this worker, at this attempt, claimed at
 * this instant. A stale worker's statement matches no row, and it abandons the task.
 */
public final class ExecuteQueries {

  private ExecuteQueries() {}

  /** The identity of one claim: the fencing token. */
  public record Fence(long id, String owner, int attempt) {}

  /** Result of {@link #lockForExecution}. */
  public enum LockResult {
    /** Row locked (and tenant lock taken, if any): run the handler. */
    LOCKED,
    /** The tenant's advisory lock is held by another transaction. */
    TENANT_BUSY,
    /** The claim is stale (rescued, cancelled, ...): abandon silently. */
    FENCED_OUT,
    /**
     * Row locked, but {@code pgtask.cancel_task} asked for this attempt to be cancelled (it found
     * the row locked by the claim or a commit batch): end it cancelled without running it.
     */
    CANCEL_REQUESTED;

    /** The result of one row of a lock statement: its tenant-lock and cancel-request columns. */
    public static LockResult of(boolean tenantLocked, boolean cancelRequested) {
      return cancelRequested ? CANCEL_REQUESTED : tenantLocked ? LOCKED : TENANT_BUSY;
    }
  }

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

  private static Condition fenced(Fence f) {
    return TASK.ID.eq(f.id())
        .and(runningById(TASK))
        .and(TASK.OWNER.eq(f.owner()))
        .and(TASK.ATTEMPT.eq(f.attempt()));
  }

  /**
   * Whether the task still runs under fence {@code f}, read once the transaction that holds its row
   * (if any) has ended: after a COMMIT whose answer was lost, false means that COMMIT went through
   * (nothing else changes a running task within its lease). Locks: the row, FOR SHARE, so it waits
   * for a COMMIT still in progress (within the caller's lock_timeout) and holds the row until the
   * caller's transaction ends.
   */
  public static boolean stillRunningAs(DSLContext dsl, Fence f) {
    return dsl.fetchExists(dsl.selectOne().from(TASK).where(fenced(f)).forShare());
  }

  private static Field<String> setLocal(String name, Field<String> value) {
    return DSL.function("set_config", SQLDataType.CLOB, DSL.inline(name), value, DSL.inline(true));
  }

  /**
   * The attempt this worker holds for a row found by {@code id = ANY(ids)}: looked up in a JSON
   * object {"id": attempt, ...} bound as one parameter (binary search over its sorted keys). Not a
   * join with unnest(ids, attempts): when the statistics say no task is running, the planner joins
   * that way with a nested loop over every pair (a batch of 500 took 60 ms instead of 8); and not
   * array_position, which is linear per row.
   */
  private static Field<Integer> heldAttempt() {
    return heldAttempt(DSL.param("attempts", SQLDataType.JSONB));
  }

  private static Field<Integer> heldAttempt(Field<JSONB> attempts) {
    return DSL.field("({0} ->> {1})::integer", SQLDataType.INTEGER, attempts, TASK.ID.cast(SQLDataType.CLOB));
  }

  /**
   * The {"id": attempt, ...} parameter of {@link #heldAttempt}, bound as jsonb: bound as text, the
   * server would parse it again for every row it filters.
   */
  private static org.postgresql.util.PGobject attemptMap(java.util.List<Fence> fences) throws SQLException {
    StringBuilder json = new StringBuilder(fences.size() * 16).append('{');
    for (int i = 0; i < fences.size(); i++) {
      if (i > 0) {
        json.append(',');
      }
      json.append('"').append(fences.get(i).id()).append("\":").append(fences.get(i).attempt());
    }
    org.postgresql.util.PGobject value = new org.postgresql.util.PGobject();
    value.setType("jsonb");
    value.setValue(json.append('}').toString());
    return value;
  }

  private static java.sql.Array idArray(Connection connection, java.util.List<Fence> fences) throws SQLException {
    Long[] ids = new Long[fences.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = fences.get(i).id();
    }
    return connection.createArrayOf("bigint", ids);
  }

  // re-lock (fenced) + transaction-local settings + tenant locks of one or more tasks of one owner,
  // in one statement whose shape does not depend on the count
  private static final PreparedQuery LOCK_FOR_EXECUTION = PreparedQuery.of(lockQuery(opaqueIds(),
      heldAttempt(DSL.param("attempts", SQLDataType.JSONB)), DSL.param("app", String.class),
      DSL.param("timeout", String.class), DSL.param("idle_timeout", String.class)));

  /**
   * The re-lock of the claim's head in {@link ClaimQueries#claimAndStart}: the task and its
   * attempt come from this session's currval() of the two hand-over sequences, which the claim
   * statement just set (0 and 0 when the claim took no transactional task); application_name is built in the statement, and
   * the server-side timeouts are looked up by kind in a {"kind": "millis"} parameter.
   */
  static final PreparedQuery LOCK_CLAIM_HEAD = lockClaimHeadQuery();

  private static PreparedQuery lockClaimHeadQuery() {
    // the head's id and attempt, as the claim just set them for this session (see ClaimQueries),
    // each read once by a scalar sub-select (an InitPlan): currval() is volatile, and compared with
    // the row's columns directly it cannot be an index key, so the re-lock scanned the whole task
    // table (1.8 ms a start with 12,000 rows in it, growing with the table; the primary key: 0.08 ms)
    Field<Long[]> ids = DSL.field(DSL.select(DSL.array(currval(ClaimQueries.HEAD_ID_SEQUENCE))))
        .cast(SQLDataType.BIGINT.array());
    Field<Integer> attempt = DSL.field(DSL.select(currval(ClaimQueries.HEAD_ATTEMPT_SEQUENCE)))
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
        .and(runningById(TASK))
        .and(TASK.OWNER.eq(DSL.param("owner", String.class)))
        .orderBy(TASK.ID)
        .forNoKeyUpdate();
  }

  private static java.util.List<org.jooq.SelectField<?>> lockFields(Field<String> app, Field<String> timeout,
      Field<String> idleTimeout) {
    return java.util.List.of(
        TASK.ID,
        setLocal("application_name", app),
        setLocal("statement_timeout", timeout),
        setLocal("idle_in_transaction_session_timeout", idleTimeout),
        DSL.when(TASK.TENANT_ID.isNull(), DSL.inline(true))
            .otherwise(DSL.function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN,
                DSL.param("namespace", Integer.class), TASK.TENANT_ID)),
        DSL.field(cancelRequested()));
  }

  /**
   * Starts the execution of one or more tasks of one owner inside the caller's open transaction,
   * in one round trip: re-locks each task row (fenced), takes each tenant's transaction-scoped
   * advisory lock, and sets transaction-local {@code application_name} and server-side timeouts.
   * Returns LOCKED, TENANT_BUSY or CANCEL_REQUESTED per task id; a task missing from the map is
   * fenced out. With {@code savepoint}, the first task's savepoint ({@link #SAVEPOINT}) is opened in
   * the same round trip. Locks:
   * the rows (FOR NO KEY UPDATE, in id order) and {@code (namespace, tenant_id)} of each, until
   * the transaction ends. A lock taken for a row that then fails the fence is released with the
   * transaction.
   */
  public static Map<Long, LockResult> lockForExecution(Connection tx, java.util.List<Fence> fences,
      String applicationName, long serverTimeoutMillis, int namespace, boolean savepoint) throws SQLException {
    return lockForExecution(tx, fences, applicationName, serverTimeoutMillis, namespace, savepoint,
        TxBounds.ofBeat(TxBounds.MAX));
  }

  /** As above, with the re-lock bounded by {@code bounds} ({@link TxBounds#forRelock}). */
  public static Map<Long, LockResult> lockForExecution(Connection tx, java.util.List<Fence> fences,
      String applicationName, long serverTimeoutMillis, int namespace, boolean savepoint, TxBounds bounds)
      throws SQLException {
    String timeout = Long.toString(serverTimeoutMillis);
    Map<Long, LockResult> results = new java.util.HashMap<>();
    // the re-lock's bounds pipelined before it (lock_timeout set before the row lock is requested),
    // the default lock_timeout back after it: one round trip
    PreparedQuery query = BOUNDED_LOCKS.computeIfAbsent(savepoint + " " + bounds, k ->
        (savepoint ? LOCK_FOR_EXECUTION_RESTORED.followedBy(SAVEPOINT) : LOCK_FOR_EXECUTION_RESTORED)
            .precededBy(bounds.forRelock().setLocalSql()));
    try (PreparedStatement ps = query.prepare(tx, Map.of("app", applicationName, "timeout", timeout,
            "idle_timeout", timeout, "namespace", namespace, "ids", idArray(tx, fences),
            "attempts", attemptMap(fences), "owner", fences.get(0).owner()))) {
      boolean isResultSet = ps.execute();
      while (!isResultSet) { // past the bounds' update counts
        if (ps.getUpdateCount() == -1) {
          throw new IllegalStateException("the lock statement returned no rows");
        }
        isResultSet = ps.getMoreResults();
      }
      try (ResultSet rs = ps.getResultSet()) {
        while (rs.next()) {
          results.put(rs.getLong(1), LockResult.of(rs.getBoolean(5), rs.getBoolean(6)));
        }
      }
    }
    return results;
  }

  private static final PreparedQuery LOCK_FOR_EXECUTION_RESTORED = LOCK_FOR_EXECUTION.followedBy(TxBounds.AFTER_RELOCK);
  // by savepoint and bounds
  private static final Map<String, PreparedQuery> BOUNDED_LOCKS = new java.util.concurrent.ConcurrentHashMap<>();

  // fenced completion of a batch: one statement shape whatever the batch size
  private static final PreparedQuery COMPLETE_ALL = PreparedQuery.of(completeAllQuery());

  private static org.jooq.UpdateConditionStep<?> completeAllQuery() {
    return DSL.update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.completed))
        .set(TASK.FINISHED_AT, clockTimestamp())
        .set(TASK.LEASE_UNTIL, DSL.inline((java.time.Instant) null, TASK.LEASE_UNTIL))
        .where(TASK.ID.eq(DSL.any(opaqueIds())))
        .and(TASK.ATTEMPT.eq(heldAttempt()))
        .and(runningById(TASK))
        .and(TASK.OWNER.eq(DSL.param("owner", String.class)));
  }

  /**
   * The transaction-local setting naming the queues of the worker whose completion statement runs
   * ({@code ,q1,q2,}; empty for none): the hand-off triggers send no wake-up notification for a
   * task they make claimable in one of them, because that worker claims after its commit itself
   * (db/R__02a_wakeup.sql, "A worker's own hand-offs wake only itself"; {@code HandOffWake}).
   */
  public static final String WORKER_QUEUES_SETTING = "pgtask.worker_queues";

  /** {@link #WORKER_QUEUES_SETTING}'s value for a worker of {@code queues}. */
  public static String workerQueues(java.util.List<String> queues) {
    return queues.isEmpty() ? "" : "," + String.join(",", queues) + ",";
  }

  // the completion of a worker's task transaction: as COMPLETE_ALL, with WORKER_QUEUES_SETTING set
  // for the hand-off triggers it fires (read once, before the rows, as an InitPlan)
  private static final PreparedQuery COMPLETE_OWN = PreparedQuery.of(completeAllQuery()
      .and(DSL.field(DSL.select(setLocal(WORKER_QUEUES_SETTING, DSL.param("worker_queues", String.class))))
          .isNotNull()));

  // the completions and the commit in one round trip
  private static final PreparedQuery COMPLETE_ALL_AND_COMMIT = COMPLETE_OWN.followedBy("COMMIT");
  // the last task's deferred constraints checked and its savepoint released, then as above
  private static final PreparedQuery CHECK_RELEASE_COMPLETE_ALL_AND_COMMIT =
      COMPLETE_ALL_AND_COMMIT.precededBy(CHECK_DEFERRED + ";\n" + RELEASE_SAVEPOINT);
  private static final PreparedQuery RELEASE_COMPLETE_ALL_AND_COMMIT = COMPLETE_ALL_AND_COMMIT.precededBy(RELEASE_SAVEPOINT);

  /** What to send before the completions of {@link #completeAllAndCommit}. */
  public enum Before {
    /** Nothing: no savepoint is open. */
    NOTHING,
    /** Release the open savepoint of the last task. */
    RELEASE,
    /** Check the deferred constraints inside the open savepoint, then release it. */
    CHECK_AND_RELEASE
  }

  /**
   * {@link #completeAll} and COMMIT of the transaction, pipelined (with what {@code before} says
   * first): one round trip. Returns the completed count. The rows are locked by this transaction
   * since the execution re-locked them, so the fence cannot fail here; a failed statement throws,
   * the statements after it are skipped, and nothing was committed (a failure before the
   * completions leaves the savepoint open in an aborted transaction).
   */
  public static int completeAllAndCommit(Connection tx, java.util.List<Fence> fences, Before before,
      String workerQueues) throws SQLException {
    if (fences.isEmpty()) {
      if (before != Before.NOTHING) {
        try (Statement st = tx.createStatement()) {
          st.execute(before == Before.RELEASE ? RELEASE_SAVEPOINT : CHECK_DEFERRED + "; " + RELEASE_SAVEPOINT);
        }
      }
      tx.commit();
      return 0;
    }
    PreparedQuery query = switch (before) {
      case NOTHING -> COMPLETE_ALL_AND_COMMIT;
      case RELEASE -> RELEASE_COMPLETE_ALL_AND_COMMIT;
      case CHECK_AND_RELEASE -> CHECK_RELEASE_COMPLETE_ALL_AND_COMMIT;
    };
    try (PreparedStatement ps = query.prepare(tx, Map.of("ids", idArray(tx, fences),
        "attempts", attemptMap(fences), "owner", fences.get(0).owner(), "worker_queues", workerQueues))) {
      ps.execute();
      // past the update counts of what was sent before the completions
      for (int skip = before == Before.NOTHING ? 0 : before == Before.RELEASE ? 1 : 2; skip > 0; skip--) {
        ps.getMoreResults();
      }
      return ps.getUpdateCount();
    }
  }

  /**
   * Marks several tasks of one owner completed in one statement, each fenced by its attempt.
   * Locks: the task rows (already held by a transactional execution; plain-mode tasks are
   * unlocked and only the fence protects them).
   */
  public static int completeAll(Connection connection, java.util.List<Fence> fences) throws SQLException {
    if (fences.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps = COMPLETE_ALL.prepare(connection, Map.of("ids", idArray(connection, fences),
        "attempts", attemptMap(fences), "owner", fences.get(0).owner()))) {
      return ps.executeUpdate();
    }
  }

  /**
   * Extends the claim lease of tasks this worker holds without a transaction (plain-mode tasks,
   * claimed tasks waiting to start); returns the ids renewed, each with whether a cancel request
   * stands for its attempt (a task missing is no longer this worker's, or is locked by a
   * transaction). A renewal is also a check: it proves the task still running as this claim.
   * Locks: those rows, briefly.
   */
  public static Map<Long, Boolean> extendLeases(DSLContext dsl, java.util.List<Fence> held, Duration lease) {
    if (held.isEmpty()) {
      return Map.of();
    }
    String owner = held.get(0).owner();
    java.util.List<Long> ids = new java.util.ArrayList<>(held.size());
    held.forEach(f -> ids.add(f.id()));
    JSONB attempts;
    try {
      attempts = JSONB.valueOf(attemptMap(held).getValue());
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    // SKIP LOCKED: a row locked by a task transaction is alive anyway, and waiting for it could
    // deadlock with that transaction's next lock
    var h = TASK.as("h");
    Map<Long, Boolean> renewed = new java.util.HashMap<>();
    dsl.update(TASK)
        .set(TASK.LEASE_UNTIL, DSL.currentInstant().plus(DSL.val(DayToSecond.valueOf(lease))))
        .where(TASK.ID.in(DSL.select(h.ID).from(h)
            .where(h.ID.in(ids))
            .and(runningById(h))
            .and(h.OWNER.eq(owner))
            // fenced by attempt too: the same worker may hold a newer claim of a rescued task
            .and(h.ATTEMPT.eq(DSL.field("({0} ->> {1})::integer", SQLDataType.INTEGER, DSL.val(attempts),
                h.ID.cast(SQLDataType.CLOB))))
            .forNoKeyUpdate()
            .skipLocked()))
        .returningResult(TASK.ID, DSL.field(cancelRequested()))
        .fetch()
        .forEach(r -> renewed.put(r.value1(), Boolean.TRUE.equals(r.value2())));
    return renewed;
  }



  /** What {@link #checkHeld} found about a task this worker holds. */
  public enum HeldState {
    /** {@code pgtask.cancel_task} asked for the attempt to be cancelled. */
    CANCEL_REQUESTED,
    /** The claim is no longer this worker's: the task was cancelled, rescued or deleted. */
    GONE
  }

  /**
   * What {@link #checkHeld} found about one attempt of a task: an answer about attempt 1 says
   * nothing about attempt 2 of the same task, which the same worker may have claimed since (after
   * a rescue of attempt 1) while the check was on its way.
   */
  public record Held(HeldState state, int attempt) {}

  /**
   * Reads, from durable state only, what has happened to the tasks this worker holds: the cancel
   * requests that stand for its running attempts (by {@code owner}, also for tasks whose claim it
   * has not registered yet), and the tasks of {@code held} that are no longer running as held.
   * This is how a worker verifies a cancellation hint: the notification only says when to look.
   * Each answer names the attempt it is about. Locks: none.
   */
  public static Map<Long, Held> checkHeld(DSLContext dsl, String owner, java.util.List<Fence> held)
      throws SQLException {
    Map<Long, Held> found = new java.util.HashMap<>();
    var requested = dsl.select(CANCEL_REQUEST.TASK_ID, CANCEL_REQUEST.ATTEMPT)
        .from(CANCEL_REQUEST)
        .join(TASK).on(TASK.ID.eq(CANCEL_REQUEST.TASK_ID)).and(TASK.ATTEMPT.eq(CANCEL_REQUEST.ATTEMPT))
        .where(TASK.OWNER.eq(owner))
        .and(TASK.STATE.eq(DSL.inline(TaskState.running)));
    if (held.isEmpty()) {
      requested.fetch().forEach(r -> found.put(r.value1(), new Held(HeldState.CANCEL_REQUESTED, r.value2())));
      return found;
    }
    Map<Long, Integer> heldAttempts = new java.util.HashMap<>();
    held.forEach(f -> heldAttempts.put(f.id(), f.attempt()));
    Long[] ids = held.stream().map(Fence::id).toArray(Long[]::new);
    var h = DSL.unnest(ids).as("h", "id");
    Field<Long> hId = h.field("id", Long.class);
    var t = TASK.as("t");
    var gone = dsl.select(hId)
        .from(h)
        .whereNotExists(DSL.selectOne().from(t)
            .where(t.ID.eq(hId))
            .and(t.STATE.eq(DSL.inline(TaskState.running)))
            .and(t.OWNER.eq(owner))
            .and(t.ATTEMPT.eq(DSL.field("({0} ->> {1})::integer", SQLDataType.INTEGER,
                DSL.val(JSONB.valueOf(attemptMap(held).getValue())), hId.cast(SQLDataType.CLOB)))));
    for (var r : requested.fetch()) {
      found.put(r.value1(), new Held(HeldState.CANCEL_REQUESTED, r.value2()));
    }
    for (var r : gone.fetch()) {
      found.put(r.value1(), new Held(HeldState.GONE, heldAttempts.get(r.value1())));
    }
    return found;
  }

  /**
   * Puts back the tasks claimed by {@code owner} that it does not hold any more ({@code held}
   * excluded) and that no transaction has locked: what a claim whose answer was lost, or a worker
   * stopping after such a claim, leaves behind. Their attempt is given back; a task with a cancel
   * request for that attempt ends cancelled. Returns how many. Locks: those rows (SKIP LOCKED).
   */
  public static int releaseOrphans(DSLContext dsl, String owner, java.util.Collection<Long> held) {
    var o = TASK.as("o");
    Condition cancel = cancelRequested();
    Field<JSONB> entry = DSL.function("jsonb_build_array", SQLDataType.JSONB,
        DSL.function("jsonb_build_object", SQLDataType.JSONB,
            DSL.inline("attempt"), TASK.ATTEMPT, DSL.inline("at"), clockTimestamp(),
            DSL.inline("error"), DSL.inline(CANCELLED_AS_REQUESTED), DSL.inline("worker"), TASK.OWNER));
    return dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled)).otherwise(DSL.inline(TaskState.available)))
        .set(TASK.ATTEMPT, DSL.when(cancel, TASK.ATTEMPT).otherwise(TASK.ATTEMPT.minus(1)))
        .set(TASK.OWNER, DSL.when(cancel, TASK.OWNER).otherwise(DSL.inline((String) null)))
        .set(TASK.FINISHED_AT, DSL.when(cancel, clockTimestamp()).otherwise(TASK.FINISHED_AT))
        .set(TASK.ERRORS, DSL.when(cancel, DSL.function("jsonb_concat", SQLDataType.JSONB,
            DSL.coalesce(TASK.ERRORS, DSL.inline(JSONB.valueOf("[]"))), entry)).otherwise(TASK.ERRORS))
        .setNull(TASK.LEASE_UNTIL)
        .where(TASK.ID.in(DSL.select(o.ID).from(o)
            .where(o.STATE.eq(DSL.inline(TaskState.running)))
            .and(o.OWNER.eq(owner))
            .and(held.isEmpty() ? DSL.trueCondition() : o.ID.notIn(held))
            .forNoKeyUpdate()
            .skipLocked()))
        .execute();
  }

  /** The error history's entry when a run ends cancelled because of a cancel request its worker had not acted on. */
  public static final String CANCELLED_AS_REQUESTED = "cancelled: cancellation requested while this attempt ran";

  /**
   * A cancel request stands for the row's current attempt (pgtask.cancel_request, written by
   * {@code pgtask.cancel_task} when the task's worker held its row): a run that ends other than by
   * completing then ends the task cancelled instead of queueing it again. Used in UPDATEs of
   * {@code TASK}, where the attempt is the one running.
   */
  public static Condition cancelRequested() {
    return DSL.exists(DSL.selectOne().from(CANCEL_REQUEST)
        .where(CANCEL_REQUEST.TASK_ID.eq(TASK.ID))
        .and(CANCEL_REQUEST.ATTEMPT.eq(TASK.ATTEMPT)));
  }

  /**
   * Records a failed attempt: appends to the error history, and either schedules the retry after
   * {@code retryDelay} from the moment it is written (database clock, clock_timestamp: the
   * transaction may have started long before the attempt ended) or discards the task when {@code discard} or the attempts
   * are exhausted; or ends it cancelled when a cancellation was requested during this attempt.
   * Returns the new state, or {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState fail(DSLContext dsl, Fence f, String error, Duration retryDelay, boolean discard) {
    return fail(dsl, f, error, clockTimestamp().plus(DSL.val(DayToSecond.valueOf(retryDelay))), discard);
  }

  /** {@link #fail} with the retry at {@code retryAt}, an instant the handler chose. */
  public static TaskState failUntil(DSLContext dsl, Fence f, String error, java.time.Instant retryAt, boolean discard) {
    return fail(dsl, f, error, DSL.val(retryAt, TASK.RUN_AT), discard);
  }

  private static TaskState fail(DSLContext dsl, Fence f, String error, Field<java.time.Instant> retryAt,
      boolean discard) {
    Condition giveUp = discard ? DSL.trueCondition() : TASK.ATTEMPT.ge(TASK.MAX_ATTEMPTS);
    Condition cancel = cancelRequested();
    Condition ends = cancel.or(giveUp);
    var r = dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled))
            .when(giveUp, DSL.inline(TaskState.discarded)).otherwise(DSL.inline(TaskState.retryable)))
        .set(TASK.RUN_AT, DSL.when(ends, TASK.RUN_AT).otherwise(retryAt))
        .set(TASK.FINISHED_AT, DSL.when(ends, clockTimestamp()).otherwise(DSL.inline((java.time.Instant) null)))
        .set(TASK.ERRORS, DSL.when(cancel, appendError(f, error, CANCELLED_AS_REQUESTED)).otherwise(appendError(f, error)))
        .setNull(TASK.LEASE_UNTIL)
        .where(fenced(f))
        .returning(TASK.STATE)
        .fetchOne();
    return r == null ? null : r.getState();
  }

  /**
   * Puts a task back without spending an attempt (tenant lock busy, or the worker is stopping
   * before/while running it): available again after {@code delay}, attempt given back; or ends it
   * cancelled when a cancellation was requested during this attempt. Returns the new state, or
   * {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState release(DSLContext dsl, Fence f, Duration delay) {
    Condition cancel = cancelRequested();
    var q = backInTheQueue(dsl, f, cancel)
        .set(TASK.ATTEMPT, DSL.when(cancel, TASK.ATTEMPT).otherwise(TASK.ATTEMPT.minus(1)));
    if (!delay.isZero()) {
      q = q.set(TASK.RUN_AT, later(cancel, delay));
    }
    var r = q.where(fenced(f)).returning(TASK.STATE).fetchOne();
    return r == null ? null : r.getState();
  }

  /**
   * Snoozes a task its handler asked to run later: available after {@code delay}, the attempt is
   * not counted against max_attempts (max_attempts + 1, so attempt numbers keep increasing); or
   * ends it cancelled when a cancellation was requested during this attempt. Returns the new
   * state, or {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState snooze(DSLContext dsl, Fence f, Duration delay) {
    Condition cancel = cancelRequested();
    var r = backInTheQueue(dsl, f, cancel)
        .set(TASK.MAX_ATTEMPTS, DSL.when(cancel, TASK.MAX_ATTEMPTS).otherwise(TASK.MAX_ATTEMPTS.plus(1)))
        .set(TASK.RUN_AT, later(cancel, delay))
        .where(fenced(f))
        .returning(TASK.STATE)
        .fetchOne();
    return r == null ? null : r.getState();
  }

  /**
   * What a release and a snooze set alike: available again, without an owner or lease; or, when
   * {@code cancel} holds, cancelled now with the request's entry in the error history.
   */
  private static org.jooq.UpdateSetMoreStep<dev.pgtask.internal.sql.gen.tables.records.TaskRecord> backInTheQueue(
      DSLContext dsl, Fence f, Condition cancel) {
    return dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled)).otherwise(DSL.inline(TaskState.available)))
        .set(TASK.OWNER, DSL.when(cancel, TASK.OWNER).otherwise(DSL.inline((String) null)))
        .set(TASK.FINISHED_AT, DSL.when(cancel, clockTimestamp()).otherwise(TASK.FINISHED_AT))
        .set(TASK.ERRORS, DSL.when(cancel, appendError(f, CANCELLED_AS_REQUESTED)).otherwise(TASK.ERRORS))
        .setNull(TASK.LEASE_UNTIL);
  }

  /**
   * {@code delay} from the moment the outcome is written, on the database clock (clock_timestamp:
   * not the transaction's start, which may be long before the attempt ended), or run_at unchanged
   * when {@code cancel} holds.
   */
  private static Field<java.time.Instant> later(Condition cancel, Duration delay) {
    return DSL.when(cancel, TASK.RUN_AT).otherwise(clockTimestamp().plus(DSL.val(DayToSecond.valueOf(delay))));
  }

  /** Marks a running task cancelled (its handler was stopped). Locks: the task row. */
  public static int cancelled(DSLContext dsl, Fence f, String reason) {
    return dsl.update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.cancelled))
        .set(TASK.FINISHED_AT, clockTimestamp())
        .set(TASK.ERRORS, appendError(f, reason))
        .setNull(TASK.LEASE_UNTIL)
        .where(fenced(f))
        .execute();
  }

  static Field<java.time.Instant> clockTimestamp() {
    return DSL.function("clock_timestamp", TASK.FINISHED_AT.getDataType());
  }

  /** The error history with one entry per message appended, each for this attempt. */
  private static Field<JSONB> appendError(Fence f, String... errors) {
    List<Field<?>> entries = new java.util.ArrayList<>();
    for (String error : errors) {
      entries.add(DSL.function("jsonb_build_object", SQLDataType.JSONB,
          DSL.inline("attempt"), DSL.val(f.attempt()),
          DSL.inline("at"), clockTimestamp(),
          DSL.inline("error"), DSL.val(error),
          DSL.inline("worker"), DSL.val(f.owner())));
    }
    Field<JSONB> entry = DSL.function("jsonb_build_array", SQLDataType.JSONB, entries.toArray(new Field<?>[0]));
    return DSL.function("jsonb_concat", SQLDataType.JSONB,
        DSL.coalesce(TASK.ERRORS, DSL.inline(JSONB.valueOf("[]"))), entry);
  }
}
