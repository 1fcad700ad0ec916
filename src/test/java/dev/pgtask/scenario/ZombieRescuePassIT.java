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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker frozen (SIGSTOP, GC death spiral, network black hole) while it runs a rescue pass must
 * not stop everyone else's rescue: the pass's transaction holds the cluster-wide rescue lock
 * {@code (namespace, -1)}, and like a task transaction it carries a server-side timeout
 * ({@code Maintenance.PASS_SERVER_TIMEOUT}), so the server ends the frozen session and its lock.
 */
class ZombieRescuePassIT {

  /** What a frozen pass adds at most: its transaction's server-side timeout. */
  static final Duration PASS_TIMEOUT = Duration.ofSeconds(5);

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("zombie_rescue_pass");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aWorkerFrozenInsideARescuePassDoesNotStopOtherWorkersRescuing() throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    try {
      // "stuck" claims nothing (its own queue) and runs a rescue pass every 50 ms: we freeze it inside one
      WorkerProcess stuck = WorkerProcess.start(db, "stuck", Faults.args("stuck", "--queue", "elsewhere",
          "--rescue-interval", "50ms"));
      WorkerProcess victim = WorkerProcess.start(db, "victim", Faults.args("victim"));
      workers.addAll(List.of(stuck, victim));
      long task = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 2000}')"));
      await("victim executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
          .until(() -> Faults.executingOn(sql, "victim") == 1);
      victim.kill();
      double death = Faults.dbNow(sql);
      WorkerProcess rescuer = WorkerProcess.start(db, "rescuer", Faults.args("rescuer"));
      workers.add(rescuer);

      String holder = "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
          + "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.objid = 4294967295 "
          + "AND a.application_name = 'pgtask stuck'";
      boolean caught = false;
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!caught && System.nanoTime() < deadline) {
        if (sql.count(holder) == 1) {
          stuck.signal("STOP");
          caught = sql.count(holder) == 1;
          if (!caught) {
            stuck.signal("CONT");
          }
        }
      }
      assertThat(caught).as("froze 'stuck' inside a rescue pass within 60 s").isTrue();
      System.out.println("zombie rescue pass: 'stuck' frozen while holding the rescue lock");

      Faults.awaitUp(sql, "rescuer");
      double recovery = Faults.awaitRescued(sql, "victim", death, LEASE.plus(RESCUE).plus(PASS_TIMEOUT).plus(SLACK)
          .plus(Duration.ofSeconds(10)));
      System.out.printf("zombie rescue pass: victim's task claimable again after %s%n", Faults.seconds(recovery));
      await().atMost(Duration.ofSeconds(30)).until(() ->
          "completed".equals(sql.text("SELECT state FROM pgtask.task WHERE id = " + task)));
    } finally {
      for (WorkerProcess w : workers) {
        if (w.isAlive()) {
          w.signal("CONT");
        }
      }
      Faults.closeAll(workers);
    }
  }
}
