package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
import static dev.pgtask.scenario.Faults.RESCUE;
import static dev.pgtask.scenario.Faults.SLACK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.sql.Connection;
import java.sql.Statement;
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
 * ({@code TxBounds}, set by every maintenance transaction: {@code PassTransaction}), so the server
 * ends the frozen session and its lock.
 *
 * <p>The freeze lands inside a pass by construction, not by chance: "stuck" is made the
 * maintenance leader before any other worker starts (only the leader runs rescue rounds, on its
 * listener's session or on the pool), and the test then holds a SHARE lock on
 * {@code pgtask.cancel_request}, which the rescue round's DELETE of stale cancel requests waits
 * for, after the round took the rescue lock (and rescued what it found, which rolls back with it).
 * Once the leader's session is seen holding the rescue lock while it waits for the test, the worker
 * is frozen and the test's lock released: the frozen session finishes its statement and then sits
 * idle inside the pass's transaction, holding the rescue lock and the lease row, as a worker frozen
 * between two statements of a pass does.
 */
class ZombieRescuePassIT {

  /** What a frozen pass adds at most: its transaction's server-side timeout. */
  static final Duration PASS_TIMEOUT = Duration.ofSeconds(5);

  /** Sessions of worker "stuck" (pool or listener) holding the rescue lock {@code (namespace, -1)}. */
  static final String STUCK_HOLDS_RESCUE_LOCK = "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
      + "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.objid = 4294967295 "
      + "AND a.application_name IN ('pgtask stuck', 'pgtask listen stuck')";

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
      // "stuck" claims nothing (its own queue); started alone, it takes the maintenance lease and
      // keeps it (it renews every beat, 1 s, for three beats)
      WorkerProcess stuck = WorkerProcess.start(db, "stuck", Faults.args("stuck", "--queue", "elsewhere"));
      workers.add(stuck);
      await("'stuck' leads maintenance").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
          .ignoreExceptions()
          .until(() -> "stuck".equals(sql.text("SELECT holder FROM pgtask.maintenance_lease WHERE lease_until > clock_timestamp()")));
      WorkerProcess victim = WorkerProcess.start(db, "victim", Faults.args("victim"));
      workers.add(victim);
      long task = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 2000}')"));
      await("victim executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
          .until(() -> Faults.executingOn(sql, "victim") == 1);
      victim.kill();
      double death = Faults.dbNow(sql);
      WorkerProcess rescuer = WorkerProcess.start(db, "rescuer", Faults.args("rescuer"));
      workers.add(rescuer);

      try (Connection gate = db.connect(); Statement st = gate.createStatement()) {
        gate.setAutoCommit(false);
        st.execute("LOCK TABLE pgtask.cancel_request IN SHARE MODE");
        long gatePid;
        try (var rs = st.executeQuery("SELECT pg_backend_pid()")) {
          rs.next();
          gatePid = rs.getLong(1);
        }
        String waiting = "SELECT count(*) " + STUCK_HOLDS_RESCUE_LOCK + " AND " + gatePid + " = ANY (pg_blocking_pids(a.pid))";
        // the leader's next rescue round (within a beat) takes the rescue lock and then waits for the gate
        await("'stuck' inside a rescue pass, holding the rescue lock").atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(20)).until(() -> sql.count(waiting) == 1);
        stuck.signal("STOP");
        assertThat(sql.count(waiting)).as("'stuck' frozen while its pass holds the rescue lock").isEqualTo(1);
        gate.commit();
      }
      System.out.println("zombie rescue pass: 'stuck' frozen while holding the rescue lock");

      await("the server ends the frozen pass's session").atMost(PASS_TIMEOUT.plus(SLACK)).pollInterval(Duration.ofMillis(100))
          .until(() -> sql.count("SELECT count(*) " + STUCK_HOLDS_RESCUE_LOCK) == 0);
      assertThat(stuck.isAlive()).as("'stuck' still frozen, not dead").isTrue();
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
