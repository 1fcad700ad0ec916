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
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Pausing a queue under load, with worker processes: busy workers stop claiming from it within 1 s
 * of the pause (on the database clock); a worker that starts while it is paused claims nothing from
 * it; after the resume, the workers (the late one too) claim again within 1 s, woken by the
 * resume's notification (their poll interval is 30 minutes). Every task completes once.
 */
class QueuePauseIT {

  @Test
  void workersStopWithinASecondOfThePauseALateWorkerRespectsItAndAllResumeWithinASecond() throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    try (TestDatabase db = TestDatabase.create("pause_it")) {
      Db sql = new Db(db);
      try {
        for (String id : List.of("busy-1", "busy-2")) {
          workers.add(WorkerProcess.start(db, id, "--worker-id", id, "--queue", "pq", "--concurrency", "4",
              "--poll-interval", "30m"));
        }
        await("both workers listen").atMost(Duration.ofSeconds(90)).until(() -> sql.count(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'pgtask listen %'") == 2);
        int total = 4000;
        sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 10}', 'pq') FROM generate_series(1, " + total + ")");
        await("the workers are busy").atMost(Duration.ofSeconds(60))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") >= 200);

        String pausedAt;
        try (Connection c = db.connect(); Statement st = c.createStatement()) {
          st.execute("SELECT pgtask.pause_queue('pq')"); // autocommit: committed when it returns
          pausedAt = single(st, "SELECT clock_timestamp()");
        }
        await("running tasks finish after the pause").atMost(Duration.ofSeconds(30))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'running'") == 0);
        String lastClaimAfterPause = sql.text("SELECT coalesce(max(attempted_at) - '" + pausedAt + "'::timestamptz, interval '0')"
            + " FROM pgtask.task WHERE attempted_at > '" + pausedAt + "'");
        System.out.println("last claim after the pause: " + lastClaimAfterPause);
        assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE attempted_at > '" + pausedAt + "'::timestamptz + interval '1 second'"))
            .as("tasks claimed more than 1 s after the pause committed").isZero();
        long queued = sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'available'");
        assertThat(queued).as("tasks left queued by the pause").isPositive();

        // a worker started while the queue is paused claims nothing from it
        workers.add(WorkerProcess.start(db, "late", "--worker-id", "late", "--queue", "pq", "--concurrency", "4",
            "--poll-interval", "30m"));
        await("the late worker listens").atMost(Duration.ofSeconds(90)).until(() -> sql.count(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'pgtask listen late'") == 1);
        await("nothing is claimed while paused").during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'available'") == queued);

        String resumedAt;
        try (Connection c = db.connect(); Statement st = c.createStatement()) {
          st.execute("SELECT pgtask.resume_queue('pq')");
          resumedAt = single(st, "SELECT clock_timestamp()");
        }
        await("claims start again after the resume").atMost(Duration.ofSeconds(10))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE attempted_at > '" + resumedAt + "'") > 0);
        String firstClaim = sql.text("SELECT min(attempted_at) - '" + resumedAt + "'::timestamptz FROM pgtask.task"
            + " WHERE attempted_at > '" + resumedAt + "'");
        System.out.println("first claim after the resume: " + firstClaim);
        assertThat(sql.text("SELECT min(attempted_at) - '" + resumedAt + "'::timestamptz < interval '1 second'"
            + " FROM pgtask.task WHERE attempted_at > '" + resumedAt + "'"))
            .as("first claim within 1 s of the resume (poll interval 30 min), took %s", firstClaim).isEqualTo("t");
        await("every task completes").atMost(Duration.ofSeconds(120))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == total);
        assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE owner = 'late'"))
            .as("tasks the late worker ran after the resume").isPositive();
        assertThat(sql.count("SELECT count(*) FROM (SELECT task_id FROM pgtask_demo.execution GROUP BY task_id HAVING count(*) > 1) d"))
            .as("tasks executed twice").isZero();
        for (WorkerProcess w : workers) {
          assertThat(w.terminate(Duration.ofSeconds(30))).as("exit code of a worker after SIGTERM").isZero();
        }
        Leaks.assertNoAdvisoryLocks(db);
      } finally {
        for (WorkerProcess w : workers) {
          w.close();
        }
      }
    }
  }

  private static String single(Statement st, String query) throws Exception {
    try (ResultSet rs = st.executeQuery(query)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
