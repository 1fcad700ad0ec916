package dev.pgtask.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.Limit;
import dev.pgtask.LimitScope;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What a cluster-wide cap costs when it is as large as the cluster: four workers of ten executors
 * drain tasks of 20 ms each, without a limit and with their kind capped at 40 (all the executors
 * there are). A cap that costs nothing keeps the throughput (ratio 1); one whose slots leak, are
 * hoarded by prefetching workers or are lost in slot races loses it (a peer's tracker reports half
 * with this very setup).
 */
final class CappedThroughput {

  static final int WORKERS = 4;
  static final int CONCURRENCY = 10;
  static final int TASK_MILLIS = 20;
  static final String KIND = "bench.capped";

  private final int tasks;

  CappedThroughput(int tasks) {
    this.tasks = tasks;
  }

  /** Tasks/s of one drain of the kind, capped at {@code cap} (0: no limit). */
  double drain(HikariDataSource pool, PgTask pgtask, int cap) throws Exception {
    BenchDatabase.resetTasks(pool);
    if (cap > 0) {
      pgtask.limits().set(LimitScope.KIND, KIND, Limit.maxRunning(cap));
    } else {
      pgtask.limits().clear(LimitScope.KIND, KIND);
    }
    BenchDatabase.vacuumAnalyze(pool);
    CountDownLatch done = new CountDownLatch(tasks);
    List<PgTaskWorker> workers = new ArrayList<>();
    try {
      for (int w = 0; w < WORKERS; w++) {
        workers.add(PgTaskWorker.builder(pool).workerId("bench-capped-" + w).concurrency(CONCURRENCY)
            .handler(KIND, JsonNode.class, (ctx, p) -> {
              Thread.sleep(TASK_MILLIS); // the task's simulated work
              done.countDown();
            })
            .build().start());
      }
      for (PgTaskWorker w : workers) {
        while (w.lastClaimAt() == null) {
          Thread.sleep(1);
        }
      }
      List<NewTask> batch = new ArrayList<>(tasks);
      for (int i = 0; i < tasks; i++) {
        batch.add(NewTask.of(KIND, null));
      }
      long start;
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        pgtask.enqueueAll(c, batch);
        start = System.nanoTime();
        c.commit();
        c.setAutoCommit(true);
      }
      if (!done.await(10, TimeUnit.MINUTES)) {
        throw new IllegalStateException("capped drain did not finish: " + done.getCount() + " left");
      }
      return tasks / ((System.nanoTime() - start) / 1e9);
    } finally {
      for (PgTaskWorker w : workers) {
        w.close();
      }
      pgtask.limits().clear(LimitScope.KIND, KIND);
    }
  }
}
