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
 * A queue capped at 2 across the cluster (pgtask.set_limit('queue', 'capq', 2)) under three worker
 * processes of four executors each, with tasks of several tenants and tasks without one: never more
 * than 2 of the queue's tasks run at once (its slots sampled from pg_locks every 10 ms, and the
 * committed executions' overlap), 2 are reached, every task completes exactly once, and no lock is
 * left after the workers stop. Twelve executors against a cap of 2: the cap, not the workers, is
 * what bounds the queue.
 */
class QueueCapIT {

  static final int CAP = 2;
  static final int TASKS = 90;

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("queue_cap");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aQueueCappedAtTwoNeverRunsThreeAcrossThreeWorkerProcessesAndReachesTwo() throws Exception {
    SlotSampler sampler = null;
    try {
      sql.exec("SELECT pgtask.set_limit('queue', 'capq', max_running => " + CAP + ")");
      // a third without a tenant, the rest spread over four tenants (each of which runs one at a time)
      sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 200}', queue => 'capq',"
          + " tenant => CASE WHEN i % 3 = 0 THEN NULL ELSE 'tenant-' || (i % 4) END)"
          + " FROM generate_series(1, " + TASKS + ") i");
      sampler = SlotSampler.start(db, "queue", "capq");
      for (String name : List.of("w1", "w2", "w3")) {
        workers.add(WorkerProcess.start(db, name, Faults.args(name, "--queue", "capq")));
      }
      Faults.awaitAllFinal(sql, Duration.ofSeconds(120));
      sampler.close();

      long overlap = sql.count("SELECT max((SELECT count(*) FROM pgtask_demo.execution b "
          + "WHERE b.started_at <= a.started_at AND b.finished_at > a.started_at)) FROM pgtask_demo.execution a");
      System.out.printf("queue cap %d: most slots held (sampled) %d, most committed executions overlapping %d%n",
          CAP, sampler.max(), overlap);
      assertThat(List.of(sampler.max(), overlap))
          .as("most slots of queue capq held at once (sampled every 10 ms), most of its committed executions overlapping")
          .containsExactly((long) CAP, (long) CAP);
      assertThat(sql.count("SELECT count(DISTINCT worker) FROM pgtask_demo.execution"))
          .as("workers that ran the queue's tasks").isGreaterThan(1);
      assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution WHERE tenant IS NULL"))
          .as("executions without a tenant").isEqualTo(TASKS / 3);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      if (sampler != null) {
        sampler.close();
      }
      Faults.closeAll(workers);
    }
  }
}
