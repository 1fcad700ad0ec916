package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.internal.embedded.EmbeddedPostgres;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A server restart at a schedule's fire time: every connection dies, a firing transaction in
 * flight rolls back. The workers reconnect by themselves and fire on; with a catch-up that covers
 * the outage, every fire instant from the first to the last has exactly one task. The server restarted is an embedded PostgreSQL this test
 * starts for itself (as {@link ServerRestartIT} does), never the suite's own.
 */
class ScheduleServerRestartIT {

  static EmbeddedPostgres own;
  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() throws IOException {
    if (Boolean.getBoolean("pgtask.restart.skip")) {
      Assumptions.abort("-Dpgtask.restart.skip=true");
    }
    own = EmbeddedPostgres.start(TestDatabase.embeddedBinaries());
    db = TestDatabase.createOn(own, "schedule_restart");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() throws IOException {
    try {
      if (db != null) {
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> sql.count("SELECT 1") == 1);
        db.close();
      }
    } finally {
      if (own != null) {
        own.close();
      }
    }
  }

  long tasks() throws Exception {
    return sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'every-second'");
  }

  @Test
  void aServerRestartAtAFireTimeLosesNoFireAndDoublesNone() throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    try {
      for (String id : List.of("r1", "r2")) {
        workers.add(WorkerProcess.start(db, id, Faults.args(id)));
      }
      Faults.awaitUp(sql, "r1");
      Faults.awaitUp(sql, "r2");
      // catch_up covers the outage: the fires due while the server is down (the one in flight at the
      // restart included) are missed fires, which a schedule without catch_up drops by design once a
      // later fire is due (a restart that takes more than a second on a loaded machine did so)
      sql.exec("SELECT pgtask.schedule('every-second', '* * * * * *', 'demo.noop', catch_up => 30, allow_overlap => true)");
      await("the first fires").atMost(Duration.ofSeconds(30)).until(() -> tasks() >= 3);

      // just before a whole second, a fire time of "* * * * * *"
      await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(5))
          .until(() -> Double.parseDouble(sql.text("SELECT extract(epoch FROM clock_timestamp())::numeric % 1")) > 0.97);
      own.restart();
      await("server back").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> sql.count("SELECT 1") == 1);
      long afterRestart = tasks();
      await("fires go on after the restart").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .ignoreExceptions().until(() -> tasks() >= afterRestart + 3);

      sql.exec("SELECT pgtask.pause_schedule('every-second')");
      long n = tasks();
      long span = sql.count("SELECT extract(epoch FROM max(schedule_fire_at) - min(schedule_fire_at))::bigint + 1 "
          + "FROM pgtask.task WHERE schedule_name = 'every-second'");
      long distinct = sql.count("SELECT count(DISTINCT schedule_fire_at) FROM pgtask.task WHERE schedule_name = 'every-second'");
      assertThat(distinct).as("distinct fire instants").isEqualTo(n);
      assertThat(n).as("tasks, one per second from the first fire to the last, the restart's included").isEqualTo(span);
      for (WorkerProcess w : workers) {
        assertThat(w.isAlive()).as("worker %s survived the restart", w.pid()).isTrue();
      }
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      for (WorkerProcess w : workers) {
        w.close();
      }
    }
  }
}
