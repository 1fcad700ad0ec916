package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.PgTaskException;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskExplanation;
import dev.pgtask.TaskState;
import dev.pgtask.testsupport.TestDatabase;
import java.lang.reflect.RecordComponent;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The public read path for operators ({@link PgTaskOperations}): what each read reports, against
 * the views of a real database. The command line and the Spring health indicator read through it.
 */
class PgTaskOperationsTest {

  private static TestDatabase db;
  private static PgTaskOperations ops;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("operations");
    ops = PgTaskOperations.create(db.dataSource());
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @BeforeEach
  void noTasksNoPauses() throws Exception {
    exec("DELETE FROM pgtask.task", "DELETE FROM pgtask.paused_queue");
  }

  @Test
  void everyRecordHoldsEveryColumnOfItsViewInTheViewsOrder() throws Exception {
    Map<String, Class<? extends Record>> views = Map.ofEntries(Map.entry("queue_summary", QueueSummary.class),
        Map.entry("health", Health.class), Map.entry("unrunnable", Unrunnable.class),
        Map.entry("running", RunningTask.class), Map.entry("tenant_locks", TenantLock.class),
        Map.entry("workers", LiveWorker.class), Map.entry("paused_queues", PausedQueueStatus.class),
        Map.entry("tenant_load", TenantLoad.class), Map.entry("schedules", ScheduleStatus.class),
        Map.entry("maintenance_leader", MaintenanceLeader.class), Map.entry("tasks", TaskSummary.class),
        Map.entry("limits", LimitStatus.class));
    for (var view : views.entrySet()) {
      List<String> columns = new ArrayList<>();
      try (Connection c = db.connect(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT column_name FROM information_schema.columns WHERE table_schema = 'pgtask'"
              + " AND table_name = '" + view.getKey() + "' ORDER BY ordinal_position")) {
        while (rs.next()) {
          columns.add(rs.getString("column_name"));
        }
      }
      List<String> components = new ArrayList<>();
      for (RecordComponent rc : view.getValue().getRecordComponents()) {
        components.add(rc.getName().replaceAll("([A-Z])", "_$1").toLowerCase(java.util.Locale.ROOT));
      }
      assertThat(components).as("the components of %s, as column names", view.getValue().getSimpleName())
          .isEqualTo(columns);
    }
  }

  @Test
  void theQueueSummaryCountsATaskWaitingForItsTenantOnlyAsWaiting() throws Exception {
    exec("SELECT pgtask.enqueue('ops.count', '{}', 'counted', 'acme')",
        "SELECT pgtask.enqueue('ops.count', '{}', 'counted', 'acme')",
        "SELECT pgtask.enqueue('ops.count', '{}', 'counted', NULL, now() + interval '1 hour')");
    QueueSummary q = ops.queueSummary().stream().filter(s -> s.queue().equals("counted")).findFirst().orElseThrow();
    assertThat(q.available()).as("available: acme's head").isEqualTo(1);
    assertThat(q.waitingForTenant()).as("waiting behind acme's head").isEqualTo(1);
    assertThat(q.scheduled()).as("due in an hour").isEqualTo(1);
    assertThat(q.running()).isZero();
    assertThat(q.paused()).isFalse();
    assertThat(q.lag()).as("the head has been due since its enqueue").isNotNull().matches(d -> !d.isNegative());
  }

  @Test
  void theQueueDepthCountsTheUnfinishedTasksAsTheQueueSummaryDoesWithoutTheFinishedOnes() throws Exception {
    exec("SELECT pgtask.enqueue('ops.depth', '{}', 'deep', 'acme')",
        "SELECT pgtask.enqueue('ops.depth', '{}', 'deep', 'acme')",
        "SELECT pgtask.enqueue('ops.depth', '{}', 'deep', NULL, now() + interval '1 hour')",
        "SELECT pgtask.enqueue('ops.depth', '{}', 'deep', NULL, now() - interval '5 minutes')",
        "UPDATE pgtask.task SET state = 'retryable' WHERE id = (SELECT max(id) FROM pgtask.task WHERE queue = 'deep')",
        "SELECT pgtask.enqueue('ops.depth', '{}', 'deep', depends_on => ARRAY[(SELECT min(id) FROM pgtask.task"
            + " WHERE queue = 'deep')])",
        "INSERT INTO pgtask.task (kind, queue, state, finished_at) VALUES ('ops.depth', 'deep', 'completed', now())");
    QueueSummary s = ops.queueSummary().stream().filter(q -> q.queue().equals("deep")).findFirst().orElseThrow();
    QueueDepth d = ops.queueDepth().stream().filter(q -> q.queue().equals("deep")).findFirst().orElseThrow();
    assertThat(List.of(d.available(), d.scheduled(), d.running(), d.claimedAhead(), d.retryable(), d.waitingForTenant(),
        d.pending())).as("available, scheduled, running, claimed ahead, retryable, waiting, pending")
        .containsExactly(1L, 1L, 0L, 0L, 1L, 1L, 1L)
        .isEqualTo(List.of(s.available(), s.scheduled(), s.running(), s.claimedAhead(), s.retryable(),
            s.waitingForTenant(), s.pending()));
    assertThat(d.lag()).as("the retryable task has been due five minutes").isGreaterThanOrEqualTo(Duration.ofMinutes(4));
    assertThat(s.completed()).as("the summary counts the finished task; the depth has no column for it").isEqualTo(1);
    exec("SELECT pgtask.pause_queue('idle-and-paused')");
    assertThat(ops.queueDepth()).filteredOn(q -> q.queue().equals("idle-and-paused")).singleElement()
        .extracting(QueueDepth::paused).isEqualTo(true);
  }

  @Test
  void healthReportsTheOldestTransactionOfThisDatabaseOnly() throws Exception {
    Properties p = new Properties();
    p.setProperty("user", db.user());
    if (db.password() != null) {
      p.setProperty("password", db.password());
    }
    String otherDatabase = db.url().substring(0, db.url().lastIndexOf('/') + 1) + "postgres";
    try (Connection other = DriverManager.getConnection(otherDatabase, p); Connection here = db.connect()) {
      // the older transaction is in another database: it does not hold back this database's vacuum
      other.setAutoCommit(false);
      try (Statement st = other.createStatement()) {
        st.execute("SELECT txid_current()");
      }
      here.setAutoCommit(false);
      int herePid;
      try (Statement st = here.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid() AS pid, txid_current()")) {
        rs.next();
        herePid = rs.getInt("pid");
      }
      Health h = ops.health();
      assertThat(h.oldestXactPid()).as("the oldest transaction of this database").isEqualTo(herePid);
      assertThat(h.oldestXactAge()).isNotNull().matches(d -> !d.isNegative());
      assertThat(h.taskTableBytes()).isPositive();
      other.rollback();
      here.rollback();
    }
  }

  @Test
  void unrunnableNamesWhyNoLiveWorkerRunsTheTasks() throws Exception {
    exec("SELECT pgtask.enqueue('ops.nobody', '{}', 'nobody-serves-this')",
        "SELECT pgtask.enqueue('ops.held', '{}', 'held-back')", "SELECT pgtask.pause_queue('held-back')");
    assertThat(ops.unrunnable()).extracting(Unrunnable::queue, Unrunnable::reason, Unrunnable::tasks)
        .contains(org.assertj.core.groups.Tuple.tuple("nobody-serves-this", "unserved_queue", 1L),
            org.assertj.core.groups.Tuple.tuple("held-back", "paused_queue", 1L));
    Health h = ops.health();
    assertThat(h.unservedTasks()).as("unserved").isEqualTo(1);
    assertThat(h.pausedTasks()).as("held back by the pause, not counted as unserved").isEqualTo(1);
    assertThat(ops.pausedQueues()).extracting(PausedQueueStatus::queue, PausedQueueStatus::due)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("held-back", 1L));
  }

  @Test
  void runningTenantLocksAndWorkersShowATaskWhileItRuns() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(db.dataSource()).concurrency(1).workerId("ops-worker")
        .handler("ops.hold", (ctx, payload) -> {
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
        }).build().start()) {
      long id = enqueue("SELECT pgtask.enqueue('ops.hold', '{}', 'default', 'acme')");
      assertThat(started.await(30, TimeUnit.SECONDS)).as("the task started").isTrue();
      try {
        assertThat(ops.running()).singleElement().satisfies(r -> {
          assertThat(r.taskId()).isEqualTo(id);
          assertThat(r.worker()).isEqualTo("ops-worker");
          assertThat(r.backendPid()).as("the backend executing its transaction").isNotNull();
          assertThat(r.holdsTenantLock()).as("holds acme's lock").isTrue();
          assertThat(r.claimedAhead()).isFalse();
        });
        assertThat(ops.runningWithTenant()).extracting(RunningTask::taskId).containsExactly(id);
        assertThat(ops.tenantLocks()).singleElement().satisfies(l -> {
          assertThat(l.tenant()).isEqualTo("acme");
          assertThat(l.applicationName()).startsWith("pgtask task " + id);
          assertThat(l.waitingPids()).isEmpty();
        });
        assertThat(ops.workers()).filteredOn(w -> w.id().equals("ops-worker")).singleElement()
            .as("the worker, listening (its LISTEN session connected)").extracting(LiveWorker::listening).isEqualTo(true);
        assertThat(ops.tasks(TaskState.RUNNING, null, "ops.hold", 10)).extracting(TaskSummary::id).containsExactly(id);
      } finally {
        release.countDown();
      }
    }
  }

  @Test
  void explainSaysWhyATaskIsNotRunningAndThatAMissingTaskIsMissing() throws Exception {
    long id = enqueue("SELECT pgtask.enqueue('ops.later', '{}', 'default', NULL, now() + interval '1 day')");
    TaskExplanation e = ops.explain(id);
    assertThat(e.reason()).isEqualTo("scheduled");
    assertThat(e.sentence()).contains(Long.toString(id));
    assertThat(ops.explain(id + 1_000_000).notFound()).isTrue();
  }

  @Test
  void aReadLeavesThePooledConnectionAsItFoundIt() throws Exception {
    try (var pool = db.pool(1)) {
      PgTaskOperations pooled = PgTaskOperations.create(pool);
      pooled.queueSummary();
      pooled.health();
      try (Connection c = pool.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT current_setting('statement_timeout') AS statement_timeout,"
              + " current_setting('transaction_read_only') AS read_only")) {
        assertThat(c.getAutoCommit()).as("autocommit").isTrue();
        assertThat(c.isReadOnly()).as("read-only").isFalse();
        rs.next();
        assertThat(rs.getString("read_only")).isEqualTo("off");
        assertThat(rs.getString("statement_timeout")).as("the read's bound was transaction-local").isEqualTo("0");
      }
    }
  }

  @Test
  void aReadThatWaitsIsEndedByItsServerSideStatementTimeout() throws Exception {
    try (Connection locker = db.connect()) {
      locker.setAutoCommit(false);
      try (Statement st = locker.createStatement()) {
        st.execute("LOCK TABLE pgtask.task IN ACCESS EXCLUSIVE MODE");
      }
      // the read of pgtask.tasks waits for the table; its statement_timeout (300 ms, below the
      // 5 s lock_timeout) ends it on the server: SQLSTATE 57014, not lock_timeout's 55P03
      assertThatThrownBy(() -> ops.withTimeout(Duration.ofMillis(300)).tasks(null, null, null, 10))
          .isInstanceOf(PgTaskException.class)
          .hasMessageContaining("pgtask.tasks")
          .hasMessageContaining("57014");
      locker.rollback();
    }
    assertThatThrownBy(() -> ops.withTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theOperationsGuideExampleRuns() throws Exception {
    exec("SELECT pgtask.enqueue('ops.example', '{}', 'example')");
    DataSource dataSource = db.dataSource();
    // docs/operations.md, "Reading the views from Java"
    PgTaskOperations ops = PgTaskOperations.create(dataSource);
    List<String> alerts = new ArrayList<>();
    for (QueueSummary q : ops.queueSummary()) {
      if (q.lag() != null && q.lag().compareTo(Duration.ofMinutes(5)) > 0) {
        alerts.add(q.queue() + " lags " + q.lag());
      }
    }
    for (Unrunnable u : ops.unrunnable()) {
      alerts.add(u.tasks() + " task(s) of " + u.kind() + " in " + u.queue() + ": " + u.reason());
    }
    Health health = ops.health();
    if (health.notificationQueueUsage() > 0.5) {
      alerts.add("notification queue " + Math.round(health.notificationQueueUsage() * 100) + "% full");
    }
    // end of the example
    assertThat(alerts).containsExactly("1 task(s) of ops.example in example: unserved_queue");
  }

  @Test
  void aDatabaseWithoutThePgtaskSchemaFailsWithTheDatabasesError() {
    try (TestDatabase empty = TestDatabase.create("operations_empty", false)) {
      assertThatThrownBy(() -> PgTaskOperations.create(empty.dataSource()).queueSummary())
          .isInstanceOf(PgTaskException.class)
          .hasMessageContaining("pgtask.queue_summary")
          .hasMessageContaining("42P01");
    }
  }

  private static long enqueue(String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void exec(String... statements) {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      for (String s : statements) {
        st.execute(s);
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
