package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several worker processes (separate JVMs) × several executors drain thousands of demo.record tasks
 * over dozens of tenants: every task runs exactly once, and no two executions of one tenant overlap.
 */
class ExactlyOnceIT {

  static final int TASKS = 3_000;
  static final int TENANTS = 30;

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("exactly_once");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void everyTaskExecutesExactlyOnceAcrossProcessesAndTenantsNeverOverlap() throws Exception {
    // every 10th task has no tenant; the rest spread over the tenants
    sql.exec("SELECT pgtask.enqueue('demo.record', jsonb_build_object('ms', i % 3), "
        + "tenant => CASE WHEN i % 10 = 0 THEN NULL ELSE 'tenant-' || (i % " + TENANTS + ") END) "
        + "FROM generate_series(1, " + TASKS + ") i");
    List<WorkerProcess> workers = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        workers.add(WorkerProcess.start(db, "w" + i, "--concurrency", "4", "--poll-interval", "1s"));
      }
      await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofMillis(500))
          .until(() -> sql.count("SELECT count(*) FROM pgtask.tasks WHERE state = 'completed'") == TASKS);
      for (WorkerProcess w : workers) {
        assertThat(w.terminate(Duration.ofSeconds(30))).as("exit code after SIGTERM of " + w.pid()).isZero();
      }
    } finally {
      for (WorkerProcess w : workers) {
        w.close();
      }
    }
    System.out.println("executions per worker: " + sql.rows("SELECT worker, count(*) FROM pgtask_demo.execution GROUP BY 1 ORDER BY 1"));
    assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution")).as("executions recorded").isEqualTo(TASKS);
    assertThat(sql.count("SELECT count(DISTINCT task_id) FROM pgtask_demo.execution")).as("distinct tasks executed").isEqualTo(TASKS);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task t LEFT JOIN pgtask_demo.execution e ON e.task_id = t.id WHERE e.task_id IS NULL"))
        .as("tasks lost").isZero();
    assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution a JOIN pgtask_demo.execution b "
        + "ON a.tenant = b.tenant AND a.task_id < b.task_id "
        + "AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)"))
        .as("overlapping executions of one tenant").isZero();
    assertThat(sql.count("SELECT count(DISTINCT worker) FROM pgtask_demo.execution")).as("workers that executed tasks").isGreaterThan(1);
    Leaks.assertNoAdvisoryLocks(db);
  }
}
