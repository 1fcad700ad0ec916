package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
import static dev.pgtask.scenario.Faults.RESCUE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import dev.pgtask.internal.embedded.EmbeddedPostgres;
import java.io.IOException;
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
 * <p>The server restarted is one this test starts for itself: an embedded PostgreSQL of the suite's
 * version ({@link TestDatabase#embeddedBinaries()}), on its own port and data directory, restarted
 * with {@code pg_ctl restart -m fast}; the server the rest of the suite uses (possibly the user's)
 * is never touched. Opt-in, to restart the suite's own server instead (e.g. a machine's cluster):
 * {@code -Dpgtask.restart.command="pg_ctlcluster --skip-systemctl-redirect 15 main restart -m fast"};
 * every other client of that server sees its connections drop. {@code -Dpgtask.restart.skip=true}
 * skips the test.
 */
class ServerRestartIT {

  static EmbeddedPostgres own;
  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() throws IOException {
    if (Boolean.getBoolean("pgtask.restart.skip")) {
      System.out.println("ServerRestartIT skipped: -Dpgtask.restart.skip=true");
      Assumptions.abort("-Dpgtask.restart.skip=true");
    }
    if (restartCommand() == null) {
      own = EmbeddedPostgres.start(TestDatabase.embeddedBinaries());
      System.out.println("ServerRestartIT: restarts its own " + own.describe());
      db = TestDatabase.createOn(own, "server_restart");
    } else {
      System.out.println("ServerRestartIT: restarts the suite's server with '" + restartCommand()
          + "' (-Dpgtask.restart.command)");
      db = TestDatabase.create("server_restart");
    }
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() throws IOException {
    try {
      if (db != null) {
        // the pool may hold connections from before the restart; close() drops the database anyway
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> sql.count("SELECT 1") == 1);
        db.close();
      }
    } finally {
      if (own != null) {
        own.close();
      }
    }
  }

  /** The opt-in command that restarts the suite's own server, or null: the test's own server is restarted. */
  static String restartCommand() {
    String command = System.getProperty("pgtask.restart.command");
    return command == null || command.isBlank() ? null : command;
  }

  /** Restarts the server of {@link #db}. */
  static void restart() throws Exception {
    String command = restartCommand();
    if (command == null) {
      own.restart();
      return;
    }
    Process p = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("server restart did not finish within 60 s: " + command);
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("exit status of '%s' (output: %s)", command, out).isZero();
  }

  @Test
  void workersRecoverFromAServerRestartByThemselvesAndDrainEverythingExactlyOnce() throws Exception {
    try {
      Faults.enqueueRecords(sql, 150, 12, 300);
      for (String id : List.of("restart-a", "restart-b")) {
        workers.add(WorkerProcess.start(db, id, Faults.args(id)));
      }
      await("both workers executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
          .until(() -> Faults.executingOn(sql, "restart-a") >= 1 && Faults.executingOn(sql, "restart-b") >= 1);
      long completedBefore = sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'");

      long t0 = System.nanoTime();
      restart();
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
