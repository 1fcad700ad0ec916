package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.types.DayToSecond;

/**
 * The claim: one round trip takes up to N claimable tasks for a worker ({@link #claimAvailable}),
 * or takes them and starts the first transactional one ({@link #claimAndStart}); and the claim of
 * one task by id ({@link #claimById}). The statements and their protocol are
 * {@link ClaimStatements}'; their rows are read by {@link ClaimRows}.
 */
public final class ClaimQueries {

  private ClaimQueries() {}

  /** A claimed task, as the executor needs it. */
  public record Claimed(long id, String kind, String queue, JSONB payload, Integer tenantId,
      String tenant, int attempt, int maxAttempts, Instant runAt, Instant claimedAt, String traceParent,
      boolean capped, int[] charged) {

    /** Without limits: no cap, no rate token charged. */
    public Claimed(long id, String kind, String queue, JSONB payload, Integer tenantId, String tenant, int attempt,
        int maxAttempts, Instant runAt, Instant claimedAt, String traceParent) {
      this(id, kind, queue, payload, tenantId, tenant, attempt, maxAttempts, runAt, claimedAt, traceParent, false,
          new int[0]);
    }
  }

  /**
   * What a claim needs for flow control: how many tasks under a limit it may take (the worker's idle
   * executors), the rate limits whose tokens tasks put back without starting give back, and whether
   * the worker's last claim saw any limit set ({@link Claim#limitsExist()}): if not, and nothing is
   * given back, the claim is sent in its form without flow control, which is cheaper and gives the
   * same answer while no limit exists; should one exist by then, that form takes nothing and the
   * full claim follows at once (on a connection of the pool again).
   */
  public record LimitInput(int cappedRoom, Integer[] refunds, boolean limitsExpected) {

    /** Limits expected: the full claim. */
    public LimitInput(int cappedRoom, Integer[] refunds) {
      this(cappedRoom, refunds, true);
    }

    /** No more tasks under a limit than {@code limit}, nothing to give back; the full claim. */
    public static LimitInput none(int limit) {
      return new LimitInput(limit, new Integer[0], true);
    }

    /** Whether the claim without flow control may be sent: no limit expected and no token to give back. */
    boolean unlimited() {
      return !limitsExpected && refunds.length == 0;
    }
  }

  /**
   * The claim's result: the tasks, how many rows the locking select returned, and the milliseconds
   * until a rate limit's next token when a task waits for one (else null), and the tasks under a
   * limit it left for want of an idle executor (its worker claims again when one is free).
   */
  public record Claim(List<Claimed> tasks, int locked, Long nextTokenMillis, int heldForRoom, boolean limitsExist) {}

  // the claim statement for n queues, rendered once (see PreparedQuery), by queue count and bounds
  private static final java.util.Map<String, PreparedQuery> CLAIMS = new java.util.concurrent.ConcurrentHashMap<>();
  // claim, commit, and the re-lock of the claim's head in a new transaction, by queue count and bounds
  private static final java.util.Map<String, PreparedQuery> CLAIM_AND_START = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * A claim whose head is already locked for execution: {@code transaction} is a pooled connection
   * with a transaction open (auto-commit off) that holds the head's row lock and tenant lock (when
   * {@code headLock} is LOCKED). Without a transactional task among the claimed ones,
   * {@code transaction} is null.
   */
  public record StartedClaim(Claim claim, java.sql.Connection transaction, long headId,
      ExecuteQueries.LockResult headLock) {}

  /**
   * Claims like {@link #claimAvailable}, and starts the execution of the claim's head in the same
   * round trip: the claim, its COMMIT, a BEGIN and the head's re-lock (as
   * {@link ExecuteQueries#lockForExecution} does it: fenced, tenant lock, transaction-local
   * application_name and server-side timeouts) are sent together. The claim commits on its own
   * before the re-lock runs, as every claim does. {@code serverTimeouts}: {"kind": "millis"} for
   * every kind claimed. If the connection fails after the claim's COMMIT, the claimed tasks stay
   * running until their lease ends and are rescued, as after any claim whose answer is lost.
   */
  public static StartedClaim claimAndStart(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      List<String> plainKinds, int limit, String owner, Duration lease, org.postgresql.util.PGobject serverTimeouts,
      int namespace, boolean spill) {
    return claimAndStart(dataSource, queues, kinds, plainKinds, limit, owner, lease, serverTimeouts, namespace, spill,
        TxBounds.ofBeat(TxBounds.MAX), LimitInput.none(limit));
  }

  /**
   * As above, the claim's and the task's transactions bounded by {@code bounds}, and at most
   * {@code cappedRoom} of the tasks under a limit claimed (the worker's idle executors).
   */
  public static StartedClaim claimAndStart(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      List<String> plainKinds, int limit, String owner, Duration lease, org.postgresql.util.PGobject serverTimeouts,
      int namespace, boolean spill, TxBounds bounds, LimitInput limits) {
    boolean full = !limits.unlimited();
    PreparedQuery query = CLAIM_AND_START.computeIfAbsent(queues.size() + " " + bounds + " " + full,
        k -> ClaimStatements.claimAndStartPipeline(queues.size(), bounds, full));
    java.sql.Connection conn = null;
    boolean handedOver = false;
    try {
      conn = dataSource.getConnection();
      conn.setAutoCommit(false);
      java.util.Map<String, Object> values = claimValues(conn, queues, kinds, limit, owner, lease, spill, limits);
      values.put("plain_kinds", conn.createArrayOf("text", plainKinds.toArray()));
      values.put("worker", owner);
      values.put("timeouts", serverTimeouts);
      values.put("idle_timeouts", serverTimeouts);
      values.put("namespace", namespace);
      values.put("slot_namespace", namespace);
      List<Claimed> tasks = new ArrayList<>();
      int lockedRows = 0;
      Long headId = null;
      Long nextToken = null;
      int heldForRoom = 0;
      boolean limitsExist = full;
      ExecuteQueries.LockResult headLock = ExecuteQueries.LockResult.FENCED_OUT;
      try (java.sql.PreparedStatement ps = query.prepare(conn, values)) {
        ClaimRows.firstResultSet(ps);
        try (java.sql.ResultSet rs = ps.getResultSet()) {
          while (rs.next()) {
            headId = ClaimRows.headId(rs);
            lockedRows = ClaimRows.lockedRows(rs);
            nextToken = ClaimRows.nextTokenMillis(rs);
            heldForRoom = ClaimRows.heldForRoom(rs);
            limitsExist = ClaimRows.limitsExist(rs);
            if (ClaimRows.hasTask(rs)) {
              tasks.add(ClaimRows.claimed(rs));
            }
          }
        }
        // COMMIT and BEGIN answer with update counts, the re-lock with a result set
        while (!ps.getMoreResults()) {
          if (ps.getUpdateCount() == -1) {
            throw new IllegalStateException("the claim's re-lock returned no result set");
          }
        }
        try (java.sql.ResultSet rs = ps.getResultSet()) {
          if (rs.next()) {
            headLock = ExecuteQueries.LockResult.of(rs);
          }
        }
      }
      Claim claim = new Claim(tasks, lockedRows, nextToken, heldForRoom, limitsExist);
      if (headId == null) {
        if (!full && limitsExist && tasks.isEmpty()) {
          // a limit exists: the claim without flow control took nothing (its gate); the full claim now
          closeQuietly(conn);
          conn = null;
          return claimAndStart(dataSource, queues, kinds, plainKinds, limit, owner, lease, serverTimeouts, namespace,
              spill, bounds, new LimitInput(limits.cappedRoom(), limits.refunds(), true));
        }
        return new StartedClaim(claim, null, 0, null);
      }
      handedOver = true;
      return new StartedClaim(claim, conn, headId, headLock);
    } catch (java.sql.SQLException e) {
      throw new org.jooq.exception.DataAccessException("claim failed: " + e.getMessage(), e);
    } finally {
      if (conn != null && !handedOver) {
        closeQuietly(conn);
      }
    }
  }

  private static void closeQuietly(java.sql.Connection conn) {
    try {
      conn.rollback();
      conn.setAutoCommit(true);
    } catch (java.sql.SQLException ignored) {
      // the pool tests and replaces a broken connection
    }
    try {
      conn.close();
    } catch (java.sql.SQLException ignored) {
      // nothing more to do
    }
  }

  private static java.util.Map<String, Object> claimValues(java.sql.Connection conn, List<String> queues,
      List<String> kinds, int limit, String owner, Duration lease, boolean spill, LimitInput limits)
      throws java.sql.SQLException {
    java.util.Map<String, Object> values = new java.util.HashMap<>();
    values.put("capped_room", limits.cappedRoom());
    values.put("refunds", conn.createArrayOf("int4", limits.refunds()));
    values.put("refund_count", limits.refunds().length);
    for (int i = 0; i < queues.size(); i++) {
      values.put("queue" + i, queues.get(i));
    }
    values.put("kinds", conn.createArrayOf("text", kinds.toArray()));
    values.put("limit", limit);
    // the spill's copies of the queues and kinds: a prepared query binds each name at one place
    values.put("spill_queues", conn.createArrayOf("text", queues.toArray()));
    values.put("spill_at", spill ? limit : Integer.MAX_VALUE);
    values.put("spill_kinds", conn.createArrayOf("text", kinds.toArray()));
    for (int i = 0; i < queues.size(); i++) {
      values.put("probe_queue" + i, queues.get(i));
    }
    values.put("owner", owner);
    values.put("lease", new org.postgresql.util.PGInterval(0, 0, 0, 0, 0, lease.toMillis() / 1000.0));
    return values;
  }

  /**
   * Claims up to {@code limit} tasks in one round trip: the claim in its own short transaction
   * (BEGIN, {@link TaskSql#GENERIC_PLAN}, the claim, COMMIT, sent together). Locks: row locks (FOR UPDATE
   * SKIP LOCKED) on at most {@code limit} claimable rows, held until that transaction commits.
   */
  public static Claim claimAvailable(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      int limit, String owner, Duration lease) {
    return claimAvailable(dataSource, queues, kinds, limit, owner, lease, false, TxBounds.ofBeat(TxBounds.MAX), LimitInput.none(limit));
  }

  /**
   * As {@link #claimAvailable(javax.sql.DataSource, List, List, int, String, Duration)}; with
   * {@code spill}, a claim that locks {@code limit} tasks and finds another claimable one notifies
   * the queues (see {@link ClaimSpill#spill}).
   */
  public static Claim claimAvailable(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      int limit, String owner, Duration lease, boolean spill) {
    return claimAvailable(dataSource, queues, kinds, limit, owner, lease, spill, TxBounds.ofBeat(TxBounds.MAX), LimitInput.none(limit));
  }

  /**
   * As above, the claim's transaction bounded by {@code bounds}, and at most {@code cappedRoom} of
   * the tasks under a limit claimed (the worker's idle executors).
   */
  public static Claim claimAvailable(javax.sql.DataSource dataSource, List<String> queues, List<String> kinds,
      int limit, String owner, Duration lease, boolean spill, TxBounds bounds, LimitInput limits) {
    boolean full = !limits.unlimited();
    PreparedQuery query = CLAIMS.computeIfAbsent(queues.size() + " " + bounds + " " + full,
        k -> ClaimStatements.claimQuery(queues.size(), bounds, full));
    java.sql.Connection conn = null;
    try {
      conn = dataSource.getConnection();
      conn.setAutoCommit(false);
      java.util.Map<String, Object> values = claimValues(conn, queues, kinds, limit, owner, lease, spill, limits);
      List<Claimed> tasks = new ArrayList<>();
      int lockedRows = 0;
      Long nextToken = null;
      int heldForRoom = 0;
      boolean limitsExist = full;
      try (java.sql.PreparedStatement ps = query.prepare(conn, values)) {
        ClaimRows.firstResultSet(ps);
        try (java.sql.ResultSet rs = ps.getResultSet()) {
          while (rs.next()) {
            if (ClaimRows.hasTask(rs)) {
              tasks.add(ClaimRows.claimed(rs));
            }
            lockedRows = ClaimRows.lockedRows(rs);
            nextToken = ClaimRows.nextTokenMillis(rs);
            heldForRoom = ClaimRows.heldForRoom(rs);
            limitsExist = ClaimRows.limitsExist(rs);
          }
        }
        ps.getMoreResults(); // the COMMIT
      }
      conn.setAutoCommit(true); // committed: no round trip
      conn.close();
      conn = null;
      if (!full && limitsExist && tasks.isEmpty()) {
        // a limit exists: the claim without flow control took nothing (its gate); the full claim now
        return claimAvailable(dataSource, queues, kinds, limit, owner, lease, spill, bounds,
            new LimitInput(limits.cappedRoom(), limits.refunds(), true));
      }
      return new Claim(tasks, lockedRows, nextToken, heldForRoom, limitsExist);
    } catch (java.sql.SQLException e) {
      throw new org.jooq.exception.DataAccessException("claim failed: " + e.getMessage(), e);
    } finally {
      if (conn != null) {
        closeQuietly(conn);
      }
    }
  }

  /**
   * Claims one task by id, whatever its run_at, if it is queued (available or retryable) and not
   * waiting behind its tenant's head: marks it running with attempt + 1, owner and lease, like the
   * claim. For running a task now (dev.pgtask.testing). Locks: the task's row, until the statement's
   * transaction (autocommit here) ends. Returns null when no such task was claimable.
   */
  public static Claimed claimById(DSLContext dsl, long id, String owner, Duration lease) {
    Field<String> tenant = ClaimStatements.tenantName().as(ClaimRows.TENANT_NAME);
    Field<Boolean> capped = ClaimLimits.capped().as(ClaimRows.CAPPED);
    var r = dsl.update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.running))
        .set(TASK.ATTEMPT, TASK.ATTEMPT.plus(DSL.inline(1)))
        .set(TASK.OWNER, owner)
        .set(TASK.ATTEMPTED_AT, DSL.currentInstant())
        .set(TASK.LEASE_UNTIL, DSL.currentInstant().plus(DSL.val(DayToSecond.valueOf(lease))))
        .where(TASK.ID.eq(id))
        .and(TASK.STATE.in(TaskState.available, TaskState.retryable))
        .and(TASK.BLOCKED.isFalse())
        .returningResult(TASK.ID, TASK.KIND, TASK.QUEUE, TASK.PAYLOAD, TASK.TENANT_ID, tenant,
            TASK.ATTEMPT, TASK.MAX_ATTEMPTS, TASK.RUN_AT, TASK.ATTEMPTED_AT, TASK.TRACE_PARENT, capped)
        .fetchOne();
    return r == null ? null : new Claimed(r.get(TASK.ID), r.get(TASK.KIND), r.get(TASK.QUEUE), r.get(TASK.PAYLOAD),
        r.get(TASK.TENANT_ID), r.get(tenant), r.get(TASK.ATTEMPT), r.get(TASK.MAX_ATTEMPTS), r.get(TASK.RUN_AT),
        r.get(TASK.ATTEMPTED_AT), r.get(TASK.TRACE_PARENT), r.get(capped), new int[0]);
  }
}
