package dev.pgtask.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * How soon a task starts: into an idle worker (woken by LISTEN/NOTIFY or in-process) and, for a
 * delayed task, after its {@code run_at}.
 */
final class StartLatencies {

  private final Benchmark.Sizes sizes;
  private final BenchReport report;
  private final BenchDatabase db;

  StartLatencies(Benchmark.Sizes sizes, BenchReport report, BenchDatabase db) {
    this.sizes = sizes;
    this.report = report;
    this.db = db;
  }

  /**
   * Start latency into an idle worker, two ways. Enqueued through another pool, as by another
   * process, so the worker learns of the task only by LISTEN/NOTIFY: timed from the enqueuing
   * transaction's {@code COMMIT}, the instant the notification floor is timed from (the task does
   * not exist for anyone before it), and also from just before the {@code enqueue} call. And
   * enqueued through the worker's own DataSource, which wakes it in-process after its commit: timed
   * from just before the {@code enqueue} call. Returns {p50, p99} in ms: by NOTIFY from the commit,
   * in-process, by NOTIFY from the call.
   */
  Stat[] idleLatencies(HikariDataSource pool, PgTask pgtask) throws Exception {
    Stat[] notified;
    try (HikariDataSource other = db.pool(2)) {
      PgTask producer = PgTask.create(other);
      notified = idleLatency(pool, () -> {
        try (Connection tx = other.getConnection()) {
          tx.setAutoCommit(false);
          long call = System.nanoTime();
          producer.enqueue(tx, NewTask.of("bench.latency", null));
          long commit = System.nanoTime();
          tx.commit();
          tx.setAutoCommit(true);
          return new long[] {commit, call};
        }
      });
    }
    report.row("idle wake-up p50 (LISTEN/NOTIFY: enqueued through another pool; COMMIT to the handler's first line)", "ms", notified[0]);
    report.row("idle wake-up p99 (LISTEN/NOTIFY; COMMIT to the handler's first line)", "ms", notified[1]);
    report.row("idle enqueue-to-start p50 (LISTEN/NOTIFY; from just before the enqueue call)", "ms", notified[2]);
    report.row("idle enqueue-to-start p99 (LISTEN/NOTIFY; from just before the enqueue call)", "ms", notified[3]);
    Stat[] local = idleLatency(pool, () -> {
      long call = System.nanoTime();
      pgtask.enqueue(NewTask.of("bench.latency", null));
      return new long[] {call, call};
    });
    report.row("idle enqueue-to-start p50 (in-process wake: enqueued through the worker's DataSource)", "ms", local[0]);
    report.row("idle enqueue-to-start p99 (in-process wake: enqueued through the worker's DataSource)", "ms", local[1]);
    return new Stat[] {notified[0], notified[1], local[0], local[1], notified[2], notified[3]};
  }

  /** Enqueues one task and returns two instants (nanoTime) to time its start from. */
  private interface TimedEnqueue {
    long[] enqueue() throws Exception;
  }

  /**
   * Start latency into an idle worker, one task at a time, 5 ms apart; returns {p50, p99} from the
   * enqueue's first instant, then {p50, p99} from its second, in ms.
   */
  private Stat[] idleLatency(HikariDataSource pool, TimedEnqueue enqueue) throws Exception {
    List<List<Double>> quantiles = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    for (int run = 0; run < sizes.runs(); run++) {
      BenchDatabase.resetTasks(pool);
      // a blocking hand-off, as an application would wait: a spinning thread here would take one
      // of the machine's cores from the worker and the server it measures
      java.util.concurrent.LinkedBlockingQueue<Long> starts = new java.util.concurrent.LinkedBlockingQueue<>();
      try (PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(10)
          .handler("bench.latency", JsonNode.class, (ctx, p) -> starts.add(System.nanoTime()))
          .build().start()) {
        BenchDatabase.waitForListener(pool);
        List<Double> first = new ArrayList<>();
        List<Double> second = new ArrayList<>();
        for (int i = 0; i < sizes.latencyTasks() + 20; i++) {
          long[] t0 = enqueue.enqueue();
          Long started = starts.poll(10, TimeUnit.SECONDS);
          if (i >= 20 && started != null) {
            first.add((started - t0[0]) / 1e6);
            second.add((started - t0[1]) / 1e6);
          }
          Thread.sleep(5);
        }
        Collections.sort(first);
        Collections.sort(second);
        quantiles.get(0).add(Stat.quantile(first, 0.50));
        quantiles.get(1).add(Stat.quantile(first, 0.99));
        quantiles.get(2).add(Stat.quantile(second, 0.50));
        quantiles.get(3).add(Stat.quantile(second, 0.99));
      }
    }
    return new Stat[] {Stat.of(quantiles.get(0)), Stat.of(quantiles.get(1)), Stat.of(quantiles.get(2)), Stat.of(quantiles.get(3))};
  }

  /**
   * Delayed tasks start on time: tasks enqueued through another pool (as by another process) with
   * {@code run_at} 2 s ahead, into an otherwise idle worker, 100 ms apart; lateness = the handler's
   * first line minus {@code run_at}. Returns the p99 lateness in ms (median and spread of the runs).
   */
  Stat delayedStarts(HikariDataSource pool) throws Exception {
    List<Double> p50s = new ArrayList<>();
    List<Double> p99s = new ArrayList<>();
    int n = Math.max(20, sizes.latencyTasks() / 5);
    for (int run = 0; run < sizes.runs(); run++) {
      BenchDatabase.resetTasks(pool);
      java.util.concurrent.LinkedBlockingQueue<Double> lateness = new java.util.concurrent.LinkedBlockingQueue<>();
      try (HikariDataSource other = db.pool(2);
          PgTaskWorker worker = PgTaskWorker.builder(pool)
              .handler("bench.delayed", JsonNode.class, (ctx, p) -> {
                java.time.Instant now = java.time.Instant.now();
                lateness.add(java.time.Duration.between(java.time.Instant.parse(p.path("runAt").asText()), now).toNanos() / 1e6);
              }).build().start()) {
        BenchDatabase.waitForListener(pool);
        PgTask producer = PgTask.create(other);
        for (int i = 0; i < n; i++) {
          java.time.Instant runAt = java.time.Instant.now().plusSeconds(2);
          producer.enqueue(NewTask.of("bench.delayed", java.util.Map.of("runAt", runAt.toString()),
              TaskOptions.defaults().withRunAt(runAt)));
          Thread.sleep(100);
        }
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          Double d = lateness.poll(30, TimeUnit.SECONDS);
          if (d == null) {
            throw new IllegalStateException("delayed tasks did not start within 30 s of their time");
          }
          ms.add(d);
        }
        Collections.sort(ms);
        p50s.add(Stat.quantile(ms, 0.50));
        p99s.add(Stat.quantile(ms, 0.99));
      }
    }
    report.row("delayed task (run_at 2 s ahead, enqueued by another pool) start lateness p50", "ms", Stat.of(p50s));
    Stat p99 = Stat.of(p99s);
    report.row("delayed task start lateness p99", "ms", p99);
    return p99;
  }
}
