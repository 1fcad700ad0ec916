package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Rescue passes run by several worker processes at once, every 100 ms each, when a killed worker's
 * claims expire together: each orphan is rescued exactly once (one "worker lost" entry), and the
 * rescues the workers report add up to the number of orphans.
 */
class ConcurrentRescueIT {

  static final int ORPHANS = 30;
  /** The victim's lease: long enough for the rescuers to be up before its claims expire. */
  static final Duration VICTIM_LEASE = Duration.ofSeconds(12);
  static final Pattern RESCUED = Pattern.compile("rescued (\\d+) task\\(s\\) of lost workers");

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("concurrent_rescue");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void rescuePassesOfSeveralWorkerProcessesAtOnceRescueEachOrphanExactlyOnce() throws Exception {
    sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 2000}', tenant => CASE WHEN i % 2 = 0 THEN 'tenant-' || i END) "
        + "FROM generate_series(1, " + ORPHANS + ") i");
    List<WorkerProcess> workers = new ArrayList<>();
    List<WorkerProcess> rescuers = new ArrayList<>();
    try {
      WorkerProcess victim = WorkerProcess.start(db, "victim", "--worker-id", "victim",
          "--concurrency", Integer.toString(ORPHANS), "--lease-duration", VICTIM_LEASE.toMillis() + "ms");
      workers.add(victim);
      await("the victim executing every task").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
          .until(() -> Faults.executingOn(sql, "victim") == ORPHANS);
      victim.kill();
      double death = Faults.dbNow(sql);
      assertThat(Faults.runningOwnedBy(sql, "victim")).as("orphans of the killed victim").hasSize(ORPHANS);

      for (int i = 0; i < 3; i++) {
        String id = "rescuer-" + i;
        WorkerProcess r = WorkerProcess.start(db, id, Faults.args(id, "--rescue-interval", "100ms",
            "--lease-duration", "30s"));
        rescuers.add(r);
        workers.add(r);
      }
      for (int i = 0; i < 3; i++) {
        Faults.awaitUp(sql, "rescuer-" + i);
      }
      boolean upBeforeExpiry = sql.count("SELECT count(*) FROM pgtask.task WHERE owner = 'victim' AND state = 'running' "
          + "AND lease_until > now()") == ORPHANS;
      double recovery = Faults.awaitRescued(sql, "victim", death, VICTIM_LEASE.plus(Duration.ofSeconds(10)));
      Faults.awaitAllFinal(sql, Duration.ofSeconds(90));
      Faults.stopAllAndAssertNoLocks(db, workers);

      List<Integer> reported = new ArrayList<>();
      for (WorkerProcess r : rescuers) {
        int n = 0;
        Matcher m = RESCUED.matcher(r.log());
        while (m.find()) {
          n += Integer.parseInt(m.group(1));
        }
        reported.add(n);
      }
      System.out.printf("concurrent rescue: 3 workers passing every 100 ms (all up before the claims expired: %s); "
          + "rescued per worker %s; death -> claimable again %s (victim's lease %s)%n",
          upBeforeExpiry, reported, Faults.seconds(recovery), VICTIM_LEASE);

      assertThat(sql.rows("SELECT t.id || ': ' || count(*) FROM pgtask.task t, jsonb_array_elements(t.errors) e "
          + "WHERE e ->> 'error' LIKE 'worker lost%' GROUP BY t.id HAVING count(*) <> 1"))
          .as("tasks rescued more than once").isEmpty();
      assertThat(sql.count("SELECT count(*) FROM pgtask.task t, jsonb_array_elements(t.errors) e "
          + "WHERE e ->> 'error' LIKE 'worker lost: victim%'")).as("'worker lost' entries").isEqualTo(ORPHANS);
      assertThat(reported.stream().mapToInt(Integer::intValue).sum()).as("rescues reported by the workers' logs")
          .isEqualTo(ORPHANS);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.assertNoTenantOverlap(sql);
    } finally {
      Faults.closeAll(workers);
    }
  }
}
