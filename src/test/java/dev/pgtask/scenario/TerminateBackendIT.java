package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
import static dev.pgtask.scenario.Faults.RESCUE;
import static dev.pgtask.scenario.Faults.SLACK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code pg_terminate_backend} of a worker's sessions while the worker stays alive: of a session
 * executing a task (found through {@code pgtask.running.backend_pid}), and of the LISTEN session.
 */
class TerminateBackendIT {

  TestDatabase db;
  Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeEach
  void setUp() {
    db = TestDatabase.create("terminate_backend");
    sql = new Db(db);
  }

  @AfterEach
  void tearDown() throws Exception {
    try {
      Faults.closeAll(workers);
    } finally {
      db.close();
    }
  }

  @Test
  void terminatingAnExecutingSessionRollsTheAttemptBackAndTheTaskRunsAgainExactlyOnce() throws Exception {
    Faults.enqueueRecords(sql, 40, 8, 200);
    long victim = Long.parseLong(sql.text(
        "SELECT pgtask.enqueue('demo.record', '{\"ms\": 3000}', tenant => 'terminated-tenant')"));
    WorkerProcess w = WorkerProcess.start(db, "w", Faults.args("term-w"));
    workers.add(w);
    await("task " + victim + " executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
        .until(() -> sql.text("SELECT backend_pid FROM pgtask.running WHERE task_id = " + victim) != null);
    String app = sql.text("SELECT a.application_name FROM pgtask.running r JOIN pg_stat_activity a ON a.pid = r.backend_pid "
        + "WHERE r.task_id = " + victim);
    assertThat(app).as("application_name of the executing session").isEqualTo("pgtask task " + victim + " term-w");

    sql.exec("SELECT pg_terminate_backend(backend_pid) FROM pgtask.running WHERE task_id = " + victim);
    double terminated = Faults.dbNow(sql);
    await("task " + victim + " claimable again").atMost(LEASE.plus(RESCUE).plus(SLACK)).pollInterval(Duration.ofMillis(50))
        .until(() -> !"running".equals(sql.text("SELECT state FROM pgtask.task WHERE id = " + victim))
            || sql.count("SELECT attempt FROM pgtask.task WHERE id = " + victim) > 1);
    double recovery = Faults.dbNow(sql) - terminated;
    Faults.awaitAllFinal(sql, Duration.ofSeconds(90));
    System.out.printf("pg_terminate_backend of an executing session: task claimable again after about %s "
        + "(bound lease %s + rescue interval %s); its error history: %s%n", Faults.seconds(recovery), LEASE, RESCUE,
        sql.text("SELECT errors FROM pgtask.task WHERE id = " + victim));

    assertThat(w.isAlive()).as("the worker survives losing a session").isTrue();
    assertThat(sql.text("SELECT coalesce(errors::text, '') FROM pgtask.task WHERE id = " + victim))
        .as("the error history of the terminated task: a lost session, not the handler's doing")
        .doesNotContain("the handler ended the task's transaction");
    assertThat(sql.rows("SELECT attempt FROM pgtask_demo.execution WHERE task_id = " + victim))
        .as("committed executions of the terminated task: its second attempt only").containsExactly("2");
    Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
    Faults.assertNoTenantOverlap(sql);
    Faults.stopAllAndAssertNoLocks(db, workers);
  }

  @Test
  void terminatingTheListenSessionMidRunLosesNothingAndNotificationsWakeTheWorkerAgain() throws Exception {
    // a poll interval far above every wait below: a prompt start after the reconnect proves LISTEN is back
    WorkerProcess w = WorkerProcess.start(db, "w", Faults.args("listen-w", "--poll-interval", "60s"));
    workers.add(w);
    Faults.awaitUp(sql, "listen-w");
    Faults.enqueueRecords(sql, 60, 8, 100);
    await("tasks executing").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
        .until(() -> Faults.executingOn(sql, "listen-w") >= 1);

    String before = Faults.listenerPid(sql, "listen-w");
    sql.exec("SELECT pg_terminate_backend(" + before + ")");
    double terminated = Faults.dbNow(sql);
    await("a new LISTEN session").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).ignoreExceptions()
        .until(() -> {
          String now = Faults.listenerPid(sql, "listen-w");
          return now != null && !now.equals(before);
        });
    double reconnect = Faults.dbNow(sql) - terminated;
    Faults.awaitAllFinal(sql, Duration.ofSeconds(30));

    double enqueued = Faults.dbNow(sql);
    sql.exec("SELECT pgtask.enqueue('demo.record', '{\"after_reconnect\": true}')");
    await("the notified task starts without waiting for a poll").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> sql.count("SELECT count(*) FROM pgtask_demo.execution e JOIN pgtask.task t ON t.id = e.task_id "
            + "WHERE t.payload ? 'after_reconnect'") == 1);
    double wake = Double.parseDouble(sql.text("SELECT extract(epoch FROM e.started_at) FROM pgtask_demo.execution e "
        + "JOIN pgtask.task t ON t.id = e.task_id WHERE t.payload ? 'after_reconnect'")) - enqueued;
    System.out.printf("pg_terminate_backend of the LISTEN session: reconnected after %s; "
        + "next notified task started %s after its enqueue (poll interval 60 s)%n",
        Faults.seconds(reconnect), Faults.seconds(wake));
    assertThat(wake).as("seconds from enqueue to start after the reconnect (poll interval is 60 s)").isLessThan(5);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE errors IS NOT NULL"))
        .as("tasks that saw an error: losing the listener touches no task").isZero();
    Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
    Faults.assertNoTenantOverlap(sql);
    Faults.stopAllAndAssertNoLocks(db, workers);
  }
}
