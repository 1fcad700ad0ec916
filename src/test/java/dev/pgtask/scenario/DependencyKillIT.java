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
 * A worker process killed ({@code kill -9}) while a parent task runs: the parent is rescued and
 * runs again elsewhere, and its child, pending all along, runs after the parent completes (the
 * rescue and the parent's second run resolve it; nothing waits on the dead worker).
 */
class DependencyKillIT {

  TestDatabase db;
  Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeEach
  void setUp() {
    db = TestDatabase.create("dependency_kill");
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
  void aChildWhoseParentsWorkerIsKilledMidTaskRunsAfterTheRescuedParentCompletesElsewhere() throws Exception {
    long parent = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 4000}')"));
    long child = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 10}', depends_on => ARRAY["
        + parent + "]::bigint[])"));
    assertThat(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + child)).isEqualTo("pending");
    WorkerProcess a = WorkerProcess.start(db, "a", Faults.args("dep-a"));
    workers.add(a);
    await("dep-a executing the parent").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
        .until(() -> Faults.executingOn(sql, "dep-a") >= 1);
    WorkerProcess b = WorkerProcess.start(db, "b", Faults.args("dep-b"));
    workers.add(b);
    a.kill();
    assertThat(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + child)).as("child while its parent's worker is dead")
        .isEqualTo("pending");

    await("parent completed after rescue").atMost(LEASE.plus(RESCUE).plus(SLACK).plus(Duration.ofSeconds(60)))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> "completed".equals(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + parent)));
    await("child completed").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
        .until(() -> "completed".equals(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + child)));
    assertThat(Faults.workerLostEntries(sql, parent)).as("the parent's 'worker lost' entries").isEqualTo(1);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE id = " + child + " AND attempt = 1"))
        .as("the child ran once").isEqualTo(1);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task c, pgtask.task p WHERE c.id = " + child + " AND p.id = " + parent
        + " AND c.attempted_at >= p.finished_at")).as("the child started after its parent finished").isEqualTo(1);
    Faults.stopAllAndAssertNoLocks(db, workers);
  }
}
