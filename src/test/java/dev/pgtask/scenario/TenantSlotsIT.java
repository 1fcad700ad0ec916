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
 * A tenant limited to N = 3 (pgtask.set_limit) under three worker processes of four executors
 * each, while one is killed (SIGKILL) and another frozen (SIGSTOP past its task timeout, then
 * SIGCONT): never more than 3 of its tasks run at once (its slots sampled from pg_locks every 10
 * ms, and the committed executions' overlap), 3 are reached before and after the faults (no slot
 * leaks), every task completes exactly once, and no lock is left after the workers stop.
 */
class TenantSlotsIT {

  static final int N = 3;
  static final Duration TASK_TIMEOUT = Duration.ofSeconds(2);

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("tenant_slots");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  /** The index of a worker other than {@code except} that runs a task of the tenant now. */
  private static int awaitHolder(List<String> names, int except) {
    int[] found = {-1};
    await("a worker holding a slot").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10))
        .until(() -> {
          for (int i = 0; i < names.size(); i++) {
            if (i != except && Faults.executingOn(sql, names.get(i)) > 0) {
              found[0] = i;
              return true;
            }
          }
          return false;
        });
    return found[0];
  }

  @Test
  void aTenantLimitedToThreeNeverRunsFourAndReachesThreeAgainAfterKillAndFreeze() throws Exception {
    SlotSampler sampler = null;
    try {
      sql.exec("SELECT pgtask.set_limit('tenant', 'acme', max_running => " + N + ")");
      sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 400}', tenant => 'acme') FROM generate_series(1, 120)");
      sampler = SlotSampler.start(db, "tenant", "acme");
      SlotSampler slots = sampler;
      List<String> names = List.of("w1", "w2", "w3");
      for (String name : names) {
        workers.add(WorkerProcess.start(db, name, Faults.args(name, "--task-timeout", TASK_TIMEOUT.toMillis() + "ms")));
      }
      await("the tenant reaches its 3 slots").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(10))
          .until(() -> slots.current() == N);
      // a worker's completions hand the tenant's next task to that worker first, so the slots
      // stay where they are: the faults hit whichever workers hold them
      int killed = awaitHolder(names, -1);
      workers.get(killed).kill();
      int frozen = awaitHolder(names, killed);
      workers.get(frozen).signal("STOP");
      // frozen past its sessions' server-side bound (task timeout + 5 s): the server ends them
      double frozenAt = Faults.dbNow(sql);
      await("the frozen worker's sessions ended by the server").atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> Faults.executingOn(sql, names.get(frozen)) == 0 && Faults.dbNow(sql) - frozenAt > 8);
      workers.get(frozen).signal("CONT");
      long reachedAfter = System.nanoTime();
      await("the tenant reaches its 3 slots again after the faults").atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(10)).until(() -> slots.current() == N);
      System.out.printf("tenant slots: 3 held again %.1f s after the freeze ended%n",
          (System.nanoTime() - reachedAfter) / 1e9);
      Faults.awaitAllFinal(sql, Duration.ofSeconds(120));
      sampler.close();

      assertThat(sampler.max()).as("most slots of tenant acme held at once (sampled)").isEqualTo(N);
      long overlap = sql.count("SELECT max((SELECT count(*) FROM pgtask_demo.execution b "
          + "WHERE b.tenant = 'acme' AND b.started_at <= a.started_at AND b.finished_at > a.started_at)) "
          + "FROM pgtask_demo.execution a WHERE a.tenant = 'acme'");
      assertThat(overlap).as("most committed executions of tenant acme overlapping").isEqualTo(N);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      if (sampler != null) {
        sampler.close();
      }
      for (WorkerProcess w : workers) {
        if (w.isAlive()) {
          w.signal("CONT");
        }
      }
      Faults.closeAll(workers);
    }
  }
}
