package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;

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
 * Weighted fair share across worker processes (pgtask.set_limit('tenant', k, weight => w)): two
 * tenants with weights 3 and 1, each allowed 4 running, both backlogged in one queue, worked by two
 * processes of two executors each (four executors for eight heads): of the first 240 committed
 * starts, three in four are the heavy tenant's, although every task of the light one was enqueued
 * first. Every task completes exactly once.
 */
class WeightedFairnessIT {

  static final int EACH = 300;
  static final int WINDOW = 240;

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("weighted_fairness");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void twoTenantsWeightedThreeAndOneStartThreeToOneAcrossWorkerProcesses() throws Exception {
    try {
      sql.exec("SELECT pgtask.set_limit('tenant', 'heavy', max_running => 4, weight => 3)");
      sql.exec("SELECT pgtask.set_limit('tenant', 'light', max_running => 4, weight => 1)");
      sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 20}', queue => 'fairq', tenant => 'light')"
          + " FROM generate_series(1, " + EACH + ")");
      sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 20}', queue => 'fairq', tenant => 'heavy')"
          + " FROM generate_series(1, " + EACH + ")");
      for (String name : List.of("w1", "w2")) {
        workers.add(WorkerProcess.start(db, name, Faults.args(name, "--queue", "fairq", "--concurrency", "2")));
      }
      Faults.awaitAllFinal(sql, Duration.ofSeconds(120));

      long heavy = sql.count("SELECT count(*) FROM (SELECT tenant FROM pgtask_demo.execution"
          + " ORDER BY started_at LIMIT " + WINDOW + ") s WHERE tenant = 'heavy'");
      System.out.printf("weights 3:1 across 2 processes: heavy started %d of the first %d%n", heavy, WINDOW);
      // on failure, the order of starts the share came from: tenant, pass and attempt of the first 40
      sql.rows("SELECT e.tenant || ' ' || t.pass || ' ' || e.attempt || ' ' || e.worker FROM pgtask_demo.execution e"
          + " JOIN pgtask.task t ON t.id = e.task_id ORDER BY e.started_at LIMIT 40").forEach(System.out::println);
      assertThat(heavy / (double) WINDOW).as("the heavy tenant's share of the first %d starts (weights 3:1)", WINDOW)
          .isBetween(0.70, 0.80);
      assertThat(sql.count("SELECT count(DISTINCT worker) FROM pgtask_demo.execution"))
          .as("workers that ran the tasks").isEqualTo(2);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      Faults.closeAll(workers);
    }
  }
}
