package dev.pgtask.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A claim into an idle worker also starts its head (the first transactional task it
 * took) in the same round trip: claim, COMMIT, BEGIN and the head's re-lock are sent together, and
 * the head's handler runs on the connection that claimed it. Seen from inside the handler: the
 * claim is committed (another session sees the task running, attempt 1), the row is locked by the
 * handler's transaction, the transaction-local settings are the task's, and the connection is the
 * one whose session the claim handed this task to (currval() of the hand-over sequences: per
 * session, outside transactions). Back in the pool, no connection keeps a hand-over setting, also
 * after a head transaction that rolled back.
 */
class ClaimAndStartTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("claimstart", 6);

  @BeforeEach
  void empty() throws SQLException {
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  /** What a handler saw of its own transaction and of its task from outside. */
  record Seen(String handOver, String applicationName, String statementTimeout, String stateSeenByOthers,
      int attemptSeenByOthers, boolean rowLockedForOthers) {}

  private static Seen look(Connection tx, long taskId) throws SQLException {
    String handOver;
    String app;
    String timeout;
    try (Statement st = tx.createStatement();
        ResultSet rs = st.executeQuery("SELECT currval('pgtask.claim_head_id') || ':' || currval('pgtask.claim_head_attempt'), "
            + "current_setting('application_name'), current_setting('statement_timeout')")) {
      rs.next();
      handOver = rs.getString(1);
      app = rs.getString(2);
      timeout = rs.getString(3);
    }
    try (Connection other = queue.database().connect(); Statement st = other.createStatement()) {
      other.setAutoCommit(false);
      String state;
      int attempt;
      try (ResultSet rs = st.executeQuery("SELECT state, attempt FROM pgtask.task WHERE id = " + taskId)) {
        rs.next();
        state = rs.getString(1);
        attempt = rs.getInt(2);
      }
      boolean locked;
      try (ResultSet rs = st.executeQuery("SELECT 1 FROM pgtask.task WHERE id = " + taskId + " FOR UPDATE NOWAIT")) {
        locked = false;
      } catch (SQLException e) {
        locked = "55P03".equals(e.getSQLState());
      }
      other.rollback();
      return new Seen(handOver, app, timeout, state, attempt, locked);
    }
  }

  @Test
  void anIdleWorkersClaimStartsItsHeadOnTheClaimingConnection() throws Exception {
    Map<Long, Seen> seen = new ConcurrentHashMap<>();
    long id = queue.pgtask().enqueue(NewTask.of("start.tx", null, TaskOptions.defaults().withTenant("acme")));
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
        .handler("start.tx", JsonNode.class, (ctx, p) -> seen.put(ctx.taskId(), look(ctx.connection(), ctx.taskId())),
            HandlerOptions.defaults().withTimeout(Duration.ofSeconds(20)))
        .build().start()) {
      await().atMost(Duration.ofSeconds(10)).until(() -> seen.containsKey(id));
      Seen s = seen.get(id);
      assertThat(s.handOver()).as("the claim's hand-over (head id:attempt) in the handler's session").isEqualTo(id + ":1");
      assertThat(s.stateSeenByOthers()).as("state seen by another session while the handler runs").isEqualTo("running");
      assertThat(s.attemptSeenByOthers()).as("attempt seen by another session: the claim committed").isEqualTo(1);
      assertThat(s.rowLockedForOthers()).as("the task row is locked by the handler's transaction").isTrue();
      assertThat(s.applicationName()).isEqualTo("pgtask task " + id + " " + worker.workerId());
      // the kind's timeout, 20 s, plus max(5 s, 10 %)
      assertThat(s.statementTimeout()).isEqualTo("25s");
      await().atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.task WHERE id = " + id)));
    }
    Leaks.assertNoAdvisoryLocks(queue.database());
    Leaks.assertPoolConnectionsClean(queue.pool(), 6);
  }

  @Test
  void theHeadIsTheFirstTransactionalTaskAndPlainTasksRunAsBefore() throws Exception {
    Map<Long, Seen> seen = new ConcurrentHashMap<>();
    Map<Long, Boolean> plainRan = new ConcurrentHashMap<>();
    // claimed together, the plain task first in claim order (higher priority)
    long plain = queue.pgtask().enqueue(NewTask.of("start.plain", null, TaskOptions.defaults().withPriority(-1)));
    long tx = queue.pgtask().enqueue(NewTask.of("start.tx", null));
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
        .handler("start.tx", JsonNode.class, (ctx, p) -> seen.put(ctx.taskId(), look(ctx.connection(), ctx.taskId())))
        .handler("start.plain", JsonNode.class, (ctx, p) -> plainRan.put(ctx.taskId(), true),
            HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN))
        .build().start()) {
      await().atMost(Duration.ofSeconds(10)).until(() -> seen.containsKey(tx) && plainRan.containsKey(plain));
      assertThat(seen.get(tx).handOver()).as("the claim's hand-over (head id:attempt) in the handler's session").isEqualTo(tx + ":1");
      assertThat(seen.get(tx).rowLockedForOthers()).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
          "SELECT count(*) FROM pgtask.task WHERE state = 'completed' AND id IN (" + plain + ", " + tx + ")") == 2);
    }
    Leaks.assertPoolConnectionsClean(queue.pool(), 6);
  }

  @Test
  void aHeadWhoseTenantIsBusyIsPutBackWithoutSpendingAnAttempt() throws Exception {
    Map<Long, Seen> seen = new ConcurrentHashMap<>();
    long id = queue.pgtask().enqueue(NewTask.of("start.tx", null, TaskOptions.defaults().withTenant("busy")));
    int tenant = (int) queue.sql().count("SELECT tenant_id FROM pgtask.task WHERE id = " + id);
    try (Connection holder = queue.database().connect(); Statement st = holder.createStatement()) {
      holder.setAutoCommit(false);
      st.execute("SELECT pg_advisory_xact_lock(lock_namespace, " + tenant + ") FROM pgtask.settings");
      try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
          .tenantDeferDelay(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(500))
          .handler("start.tx", JsonNode.class, (ctx, p) -> seen.put(ctx.taskId(), look(ctx.connection(), ctx.taskId())))
          .build().start()) {
        await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
            "SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND state = 'available' AND run_at > now()") == 1);
        assertThat(seen).as("handlers run while the tenant's lock is held elsewhere").isEmpty();
        holder.rollback();
        await().atMost(Duration.ofSeconds(10)).until(() -> seen.containsKey(id));
        assertThat(seen.get(id).attemptSeenByOthers()).as("attempt of the run after the deferral").isEqualTo(1);
      }
    }
    Leaks.assertNoAdvisoryLocks(queue.database());
    Leaks.assertPoolConnectionsClean(queue.pool(), 6);
  }

  @Test
  void manyClaimsInARowLeaveNoTransactionOpen() throws Exception {
    int n = 200;
    Map<Long, Boolean> done = new ConcurrentHashMap<>();
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(3)
        .handler("start.tx", JsonNode.class, (ctx, p) -> done.put(ctx.taskId(), true))
        .build().start()) {
      for (int i = 0; i < n; i++) {
        queue.pgtask().enqueue(NewTask.of("start.tx", Map.of("i", i), TaskOptions.defaults().withTenant("t" + (i % 5))));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> done.size() == n);
      await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
          "SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == n);
    }
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE attempt <> 1")).as("tasks run more than once").isZero();
    assertThat(queue.sql().rows("SELECT state FROM pg_stat_activity WHERE datname = current_database() "
        + "AND state LIKE 'idle in transaction%'")).as("sessions left in a transaction").isEmpty();
    Leaks.assertNoAdvisoryLocks(queue.database());
    Leaks.assertPoolConnectionsClean(queue.pool(), 6);
  }

  /**
   * The re-lock sent after the claim finds the head by its primary key: it reads the hand-over's
   * currval() once, not per row (a volatile function compared with the id directly cannot be an
   * index key, and every start into an idle worker scanned the whole task table). Seen from the
   * head's transaction, which holds nothing but that re-lock: no sequential scan of pgtask.task.
   */
  @Test
  void theClaimsHeadIsReLockedThroughThePrimaryKeyNotByScanningTheTable() throws Exception {
    java.util.List<NewTask> others = new java.util.ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      others.add(NewTask.of("start.other", null));
    }
    queue.pgtask().enqueueAll(others);
    long id = queue.pgtask().enqueue(NewTask.of("start.tx", null, TaskOptions.defaults().withTenant("acme")));
    queue.sql().exec("ANALYZE pgtask.task");
    int namespace = (int) queue.sql().count("SELECT lock_namespace FROM pgtask.settings");
    org.postgresql.util.PGobject timeouts = new org.postgresql.util.PGobject();
    timeouts.setType("jsonb");
    timeouts.setValue("{\"start.tx\": \"30000\"}");
    dev.pgtask.internal.sql.ClaimQueries.StartedClaim started = dev.pgtask.internal.sql.ClaimQueries.claimAndStart(
        queue.pool(), List.of("default"), List.of("start.tx"), List.of(), 1, "relock-test", Duration.ofSeconds(30),
        timeouts, namespace, false);
    assertThat(started.headId()).isEqualTo(id);
    assertThat(started.headLock()).isEqualTo(dev.pgtask.internal.sql.ExecuteQueries.LockResult.LOCKED);
    try (Connection tx = started.transaction(); Statement st = tx.createStatement();
        ResultSet rs = st.executeQuery("SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables "
            + "WHERE relid = 'pgtask.task'::regclass")) {
      rs.next();
      assertThat(rs.getLong(1)).as("sequential scans of pgtask.task by the re-lock").isZero();
      assertThat(rs.getLong(2)).as("index scans of pgtask.task by the re-lock").isPositive();
      tx.rollback();
      tx.setAutoCommit(true);
    }
  }

  @Test
  void noPooledConnectionKeepsTheClaimsHandOverSettingAfterClaimAndStart() throws Exception {
    Map<Long, String> handOverSeen = new ConcurrentHashMap<>();
    java.util.concurrent.CountDownLatch holding = new java.util.concurrent.CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
        .handler("start.tx", JsonNode.class, (ctx, p) -> handOverSeen.put(ctx.taskId(), look(ctx.connection(), ctx.taskId()).handOver()))
        .handler("start.hold", JsonNode.class, (ctx, p) -> {
          holding.countDown();
          Thread.sleep(30_000); // interrupted by the cancellation
        })
        .build().start()) {
      // one task at a time into the idle worker: each is claimed and started in one round trip,
      // on whichever pooled connection the claim got. A task enqueued while the worker is still busy
      // after the previous one (a claim for more work in flight, on a loaded machine) is claimed by
      // that claim and started by a plain re-lock instead: its session shows an older claim's
      // hand-over, which nothing reads. Most must go through the claim-and-start, or this test
      // proves nothing about it.
      int throughClaimAndStart = 0;
      for (int i = 0; i < 12; i++) {
        long id = queue.pgtask().enqueue(NewTask.of("start.tx", null, TaskOptions.defaults().withTenant("t" + (i % 3))));
        await().atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.task WHERE id = " + id)));
        if ((id + ":1").equals(handOverSeen.get(id))) {
          throughClaimAndStart++;
        }
      }
      assertThat(throughClaimAndStart).as("tasks of 12 whose handler's session held their own claim's hand-over: %s", handOverSeen)
          .isGreaterThanOrEqualTo(6);
      // a head whose transaction rolls back as a whole: cancelled while it runs
      long held = queue.pgtask().enqueue(NewTask.of("start.hold", null));
      assertThat(holding.await(10, java.util.concurrent.TimeUnit.SECONDS)).as("the held task started").isTrue();
      queue.pgtask().cancel(held);
      await().atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(queue.sql().text("SELECT state FROM pgtask.task WHERE id = " + held)));
    }
    Leaks.assertPoolConnectionsClean(queue.pool(), 6);
  }
}
