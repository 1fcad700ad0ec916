package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Worker processes killed (SIGKILL) at a schedule's fire times: the other workers fire it, and
 * every fire instant has exactly one task, none lost, none doubled.
 */
class ScheduleCrashIT {

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("schedule_crash");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  /** Waits until the database clock is just before a whole second (a fire time of "* * * * * *"). */
  static void awaitJustBeforeAFire() {
    await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(5))
        .until(() -> Double.parseDouble(sql.text("SELECT extract(epoch FROM clock_timestamp())::numeric % 1")) > 0.97);
  }

  long tasks() throws Exception {
    return sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'every-second'");
  }

  @Test
  void workersKilledAtFireTimesLoseNoFireAndDoubleNone() throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    try {
      for (int i = 1; i <= 3; i++) {
        workers.add(WorkerProcess.start(db, "w" + i, Faults.args("w" + i)));
      }
      for (int i = 1; i <= 3; i++) {
        Faults.awaitUp(sql, "w" + i);
      }
      sql.exec("SELECT pgtask.schedule('every-second', '* * * * * *', 'demo.noop', allow_overlap => true)");
      await("the first fires").atMost(Duration.ofSeconds(30)).until(() -> tasks() >= 3);

      awaitJustBeforeAFire();
      workers.get(0).kill();
      long afterFirstKill = tasks();
      await("fires go on without w1").atMost(Duration.ofSeconds(10)).until(() -> tasks() >= afterFirstKill + 3);
      workers.add(WorkerProcess.start(db, "w4", Faults.args("w4")));

      awaitJustBeforeAFire();
      workers.get(1).kill();
      long afterSecondKill = tasks();
      await("fires go on without w2").atMost(Duration.ofSeconds(10)).until(() -> tasks() >= afterSecondKill + 3);
      Faults.awaitUp(sql, "w4");
      awaitJustBeforeAFire();
      workers.get(2).kill(); // only w4 is left
      long afterThirdKill = tasks();
      await("fires go on with w4 alone").atMost(Duration.ofSeconds(10)).until(() -> tasks() >= afterThirdKill + 3);

      sql.exec("SELECT pgtask.pause_schedule('every-second')");
      long n = tasks();
      long span = sql.count("SELECT extract(epoch FROM max(schedule_fire_at) - min(schedule_fire_at))::bigint + 1 "
          + "FROM pgtask.task WHERE schedule_name = 'every-second'");
      long distinct = sql.count("SELECT count(DISTINCT schedule_fire_at) FROM pgtask.task WHERE schedule_name = 'every-second'");
      assertThat(distinct).as("distinct fire instants").isEqualTo(n);
      assertThat(n).as("tasks, one per second from the first fire to the last").isEqualTo(span);
      assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'every-second' "
          + "AND created_at - schedule_fire_at > interval '3 seconds'")).as("fires more than 3 s late").isZero();
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      for (WorkerProcess w : workers) {
        w.close();
      }
    }
  }
}
