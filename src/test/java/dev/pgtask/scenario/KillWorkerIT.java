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
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * {@code kill -9} of worker processes while they execute tasks: once, and in a chaos loop that kills
 * a random busy worker and starts a replacement, round after round. The killed worker's open task
 * transactions roll back with its connections; its tasks become claimable again within
 * lease + rescue interval and run to completion elsewhere, their effects committed exactly once.
 */
class KillWorkerIT {

  TestDatabase db;
  Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeEach
  void setUp() {
    db = TestDatabase.create("kill_worker");
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
  void killNineMidTaskTheTasksAreRescuedWithinLeasePlusRescueIntervalAndCompleteExactlyOnce() throws Exception {
    Faults.enqueueRecords(sql, 120, 12, 300);
    WorkerProcess a = WorkerProcess.start(db, "a", Faults.args("kill-a"));
    WorkerProcess b = WorkerProcess.start(db, "b", Faults.args("kill-b"));
    workers.addAll(List.of(a, b));
    await("kill-a executing").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
        .until(() -> Faults.executingOn(sql, "kill-a") >= 1);

    a.kill();
    double death = Faults.dbNow(sql);
    List<String> orphans = Faults.runningOwnedBy(sql, "kill-a");
    double recovery = Faults.awaitRescued(sql, "kill-a", death, LEASE.plus(RESCUE).plus(SLACK));
    System.out.printf("kill -9 once: %d task(s) orphaned; death -> claimable again: %s "
        + "(bound lease %s + rescue interval %s)%n", orphans.size(), Faults.seconds(recovery), LEASE, RESCUE);

    Faults.awaitAllFinal(sql, Duration.ofSeconds(90));
    for (String id : orphans) {
      assertThat(Faults.workerLostEntries(sql, Long.parseLong(id))).as("'worker lost' entries of orphan " + id).isEqualTo(1);
    }
    assertThat(recovery).as("seconds from kill -9 to the orphans being claimable").isLessThanOrEqualTo(
        (LEASE.plus(RESCUE).plus(SLACK)).toMillis() / 1000.0);
    Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
    Faults.assertNoTenantOverlap(sql);
    Faults.stopAllAndAssertNoLocks(db, workers);
  }

  @Test
  void chaosLoopOfKillNineAndRestartsLosesAndDuplicatesNothing() throws Exception {
    runChaos(3, 3, 40);
  }

  /** The long variant: {@code mvn -o verify -Dpgtask.long=true -Dtest=KillWorkerIT}. */
  @Test
  @EnabledIfSystemProperty(named = "pgtask.long", matches = "true")
  void longChaosLoopOfKillNineAndRestartsLosesAndDuplicatesNothing() throws Exception {
    runChaos(4, 15, 80);
  }

  private void runChaos(int workerCount, int rounds, int tasksPerRound) throws Exception {
    Random random = new Random(42);
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < workerCount; i++) {
      String id = "chaos-w" + i;
      ids.add(id);
      workers.add(WorkerProcess.start(db, id, Faults.args(id)));
    }
    for (String id : ids) {
      Faults.awaitUp(sql, id);
    }
    List<Double> recoveries = new ArrayList<>();
    int orphaned = 0;
    for (int round = 1; round <= rounds; round++) {
      Faults.enqueueRecords(sql, tasksPerRound, 15, 400);
      int victim = random.nextInt(workerCount);
      String victimId = ids.get(victim);
      await("round " + round + ": " + victimId + " executing").atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50)).until(() -> Faults.executingOn(sql, victimId) >= 1);
      workers.get(victim).kill();
      double death = Faults.dbNow(sql);
      orphaned += Faults.runningOwnedBy(sql, victimId).size();
      String replacement = "chaos-w" + victim + "-r" + round;
      ids.set(victim, replacement);
      workers.set(victim, WorkerProcess.start(db, replacement, Faults.args(replacement)));
      double recovery = Faults.awaitRescued(sql, victimId, death, LEASE.plus(RESCUE).plus(SLACK));
      recoveries.add(recovery);
      Faults.awaitUp(sql, replacement);
    }
    Faults.awaitAllFinal(sql, Duration.ofSeconds(120));
    System.out.printf("chaos: %d workers, %d rounds of kill -9 + restart, %d task(s) orphaned; "
            + "death -> claimable again per round: %s (max %s; bound lease %s + rescue interval %s)%n",
        workerCount, rounds, orphaned, recoveries.stream().map(Faults::seconds).toList(),
        Faults.seconds(recoveries.stream().mapToDouble(Double::doubleValue).max().orElse(0)), LEASE, RESCUE);
    System.out.println("chaos: executions per worker " + sql.rows(
        "SELECT worker || ' ' || count(*) FROM pgtask_demo.execution GROUP BY worker ORDER BY 1"));
    assertThat(recoveries).as("seconds from each kill -9 to the orphans being claimable")
        .allSatisfy(s -> assertThat(s).isLessThanOrEqualTo(LEASE.plus(RESCUE).plus(SLACK).toMillis() / 1000.0));
    assertThat(sql.count("SELECT count(*) FROM pgtask.task")).as("tasks").isEqualTo((long) rounds * tasksPerRound);
    Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
    Faults.assertNoTenantOverlap(sql);
    Faults.stopAllAndAssertNoLocks(db, workers);
  }
}
