package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Wake-ups of one worker process: LISTEN latency, polling when the listener is killed, and
 * transaction visibility of enqueues (rolled back: never runs; committed late: not before commit).
 */
class WakeUpIT {

  static TestDatabase db;
  static Db sql;
  static WorkerProcess worker;

  @BeforeAll
  static void setUp() throws Exception {
    db = TestDatabase.create("wakeup");
    sql = new Db(db);
    worker = WorkerProcess.start(db, "w", "--concurrency", "4", "--poll-interval", "1s");
    await().atMost(Duration.ofSeconds(60)).until(() -> listenerPid() != null);
    // warm up the worker's JIT and pool
    sql.exec("SELECT pgtask.enqueue('demo.record') FROM generate_series(1, 200)");
    await().atMost(Duration.ofSeconds(60)).until(() -> sql.count("SELECT count(*) FROM pgtask_demo.execution") == 200);
    sql.exec("TRUNCATE pgtask_demo.execution");
  }

  @AfterAll
  static void tearDown() throws Exception {
    try {
      assertThat(worker.terminate(Duration.ofSeconds(30))).as("worker exit code after SIGTERM").isZero();
      Leaks.assertNoAdvisoryLocks(db);
    } finally {
      worker.close();
      db.close();
    }
  }

  static String listenerPid() throws Exception {
    return sql.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        + "AND application_name LIKE 'pgtask listen %'");
  }

  @Test
  void listenWakesTheWorkerWithinMilliseconds() throws Exception {
    int n = 200;
    for (int i = 0; i < n; i++) {
      sql.exec("SELECT pgtask.enqueue('demo.record', jsonb_build_object('seq', " + i + "))");
      Thread.sleep(10); // pacing of the scenario: one task at a time into an idle worker
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> sql.count("SELECT count(*) FROM pgtask_demo.execution") == n);
    List<Double> ms = sql.doubles("SELECT extract(epoch FROM e.started_at - t.created_at) * 1000 "
        + "FROM pgtask_demo.execution e JOIN pgtask.task t ON t.id = e.task_id");
    double p50 = Db.quantile(ms, 0.5);
    double p99 = Db.quantile(ms, 0.99);
    System.out.printf("enqueue-to-start latency over LISTEN, %d tasks: p50 %.1f ms, p99 %.1f ms%n", n, p50, p99);
    assertThat(p99).as("p99 enqueue-to-start latency (ms), generous bound").isLessThan(1_000);
  }

  @Test
  void tasksStillStartWhenTheListenerIsKilledAndTheListenerComesBack() throws Exception {
    String before = listenerPid();
    sql.exec("SELECT pg_terminate_backend(" + before + ")");
    long startNanos = System.nanoTime();
    sql.exec("SELECT pgtask.enqueue('demo.record', jsonb_build_object('after_kill', true)) FROM generate_series(1, 20)");
    await().atMost(Duration.ofSeconds(5)).until(() ->
        sql.count("SELECT count(*) FROM pgtask_demo.execution e JOIN pgtask.task t ON t.id = e.task_id "
            + "WHERE t.payload ? 'after_kill'") == 20);
    System.out.printf("tasks enqueued after the listener was killed started within %d ms%n",
        Duration.ofNanos(System.nanoTime() - startNanos).toMillis());
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      String now = listenerPid();
      return now != null && !now.equals(before);
    });
    assertThat(worker.log()).contains("listener reconnected");
  }

  @Test
  void rolledBackEnqueueNeverRunsAndALateCommitNeverStartsEarly() throws Exception {
    long rolledBack;
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      try (ResultSet rs = st.executeQuery("SELECT pgtask.enqueue('demo.record', '{\"case\": \"rollback\"}')")) {
        rs.next();
        rolledBack = rs.getLong(1);
      }
      c.rollback();
    }
    long late;
    String committedAt;
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      try (ResultSet rs = st.executeQuery("SELECT pgtask.enqueue('demo.record', '{\"case\": \"late\"}')")) {
        rs.next();
        late = rs.getLong(1);
      }
      Thread.sleep(1_500); // the scenario: the producer's transaction stays open past several polls
      try (ResultSet rs = st.executeQuery("SELECT clock_timestamp()::text")) {
        rs.next();
        committedAt = rs.getString(1);
      }
      c.commit();
    }
    await().atMost(Duration.ofSeconds(5)).until(() ->
        sql.count("SELECT count(*) FROM pgtask_demo.execution WHERE task_id = " + late) == 1);
    assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution WHERE task_id = " + late
        + " AND started_at > '" + committedAt + "'::timestamptz")).as("late-committed task started after its commit").isEqualTo(1);
    // the rolled-back one: it does not exist, and nothing ever ran it
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE id = " + rolledBack)).isZero();
    assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution WHERE task_id = " + rolledBack)).isZero();
  }
}
