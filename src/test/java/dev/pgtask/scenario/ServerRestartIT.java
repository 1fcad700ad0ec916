package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
import static dev.pgtask.scenario.Faults.RESCUE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A PostgreSQL restart in the middle of a run: every connection dies, open task transactions roll
 * back, notifications in flight are lost. The workers are not restarted: their pools and LISTEN
 * sessions reconnect by themselves, the interrupted tasks are rescued after their lease, and
 * everything drains, exactly once.
 *
 * <p>Restarts the local cluster with {@code pg_ctlcluster --skip-systemctl-redirect 15 main restart
 * -m fast} (override: {@code -Dpgtask.restart.command="..."}). Skipped, with the reason printed, when
 * the test server is not local ({@code PGTASK_TEST_URL}/{@code -Dpgtask.test.url} set), when
 * {@code pg_ctlcluster} is missing, or with {@code -Dpgtask.restart.skip=true}. Other suites running
 * against the same server at that moment see their connections drop: keep it to this one test.
 */
class ServerRestartIT {

  static final String DEFAULT_RESTART = "pg_ctlcluster --skip-systemctl-redirect 15 main restart -m fast";

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("server_restart");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    // the pool may hold connections from before the restart; close() drops the database anyway
    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> sql.count("SELECT 1") == 1);
    db.close();
  }

  static String restartCommandOrSkip() {
    String command = System.getProperty("pgtask.restart.command");
    String reason = null;
    if (Boolean.getBoolean("pgtask.restart.skip")) {
      reason = "-Dpgtask.restart.skip=true";
    } else if (command == null) {
      String explicitServer = System.getProperty("pgtask.test.url", System.getenv("PGTASK_TEST_URL"));
      if (explicitServer != null && !explicitServer.isBlank()) {
        reason = "the test server is given by PGTASK_TEST_URL/pgtask.test.url: not known to be this machine's cluster"
            + " (set -Dpgtask.restart.command to restart it)";
      } else if (!new File("/usr/bin/pg_ctlcluster").canExecute()) {
        reason = "pg_ctlcluster is not installed (set -Dpgtask.restart.command to restart the server)";
      } else {
        command = DEFAULT_RESTART;
      }
    }
    if (reason != null) {
      System.out.println("ServerRestartIT skipped: " + reason);
      Assumptions.abort(reason);
    }
    return command;
  }

  @Test
  void workersRecoverFromAServerRestartByThemselvesAndDrainEverythingExactlyOnce() throws Exception {
    String restart = restartCommandOrSkip();
    try {
      Faults.enqueueRecords(sql, 150, 12, 300);
      for (String id : List.of("restart-a", "restart-b")) {
        workers.add(WorkerProcess.start(db, id, Faults.args(id)));
      }
      await("both workers executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
          .until(() -> Faults.executingOn(sql, "restart-a") >= 1 && Faults.executingOn(sql, "restart-b") >= 1);
      long completedBefore = sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'");

      long t0 = System.nanoTime();
      Process p = new ProcessBuilder("sh", "-c", restart).redirectErrorStream(true).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("server restart did not finish within 60 s: " + restart);
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        System.out.println("ServerRestartIT skipped: '" + restart + "' failed (" + p.exitValue() + "): " + out);
        Assumptions.abort("cannot restart the server: " + out);
      }
      double restartSeconds = (System.nanoTime() - t0) / 1e9;
      await("server back").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> sql.count("SELECT 1") == 1);
      double back = Faults.dbNow(sql);
      long interrupted = sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'running'");

      await("both workers reconnected their LISTEN sessions").atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> Faults.listenerPid(sql, "restart-a") != null && Faults.listenerPid(sql, "restart-b") != null);
      await("a task completes after the restart").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .ignoreExceptions()
          .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE finished_at > to_timestamp(" + back + ")") > 0);
      double firstCompletion = Faults.dbNow(sql) - back;
      await("tasks interrupted by the restart claimable again").atMost(LEASE.plus(RESCUE).plus(Duration.ofSeconds(15)))
          .pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'running' "
              + "AND attempted_at < to_timestamp(" + back + ")") == 0);
      double rescued = Faults.dbNow(sql) - back;
      Faults.awaitAllFinal(sql, Duration.ofSeconds(120));
      System.out.printf("server restart: took %s; %d task(s) completed before, %d running at the restart; "
              + "after the server was back: first completion within %s, interrupted tasks claimable within %s%n",
          Faults.seconds(restartSeconds), completedBefore, interrupted, Faults.seconds(firstCompletion),
          Faults.seconds(rescued));

      for (WorkerProcess w : workers) {
        assertThat(w.isAlive()).as("worker %s survived the restart without being restarted", w.pid()).isTrue();
      }
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.assertNoTenantOverlap(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      Faults.closeAll(workers);
    }
  }
}
