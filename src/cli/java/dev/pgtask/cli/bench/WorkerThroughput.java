package dev.pgtask.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * pgtask's own throughput: draining a queue in each handler mode, enqueueing in batches and one by
 * one, and a sustained load.
 */
final class WorkerThroughput {

  private final Benchmark.Sizes sizes;
  private final BenchReport report;
  private final PrintStream out;

  WorkerThroughput(Benchmark.Sizes sizes, BenchReport report, PrintStream out) {
    this.sizes = sizes;
    this.report = report;
    this.out = out;
  }

  enum Mode { PLAIN, TRANSACTIONAL_BATCHED, TRANSACTIONAL_DEFAULT }

  /**
   * Drains {@code drainTasks} no-op tasks; returns tasks/s from the enqueue's COMMIT to the last
   * completion. The worker is started and idle first, as the floors' connections are open before
   * their clock starts: a worker's start (its pool, listener and capacity check: 70–210 ms here)
   * is not throughput, and in a 4,000-task drain it was a third of the time. The tasks are
   * committed in one transaction, whose notification wakes the worker.
   */
  double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode) throws Exception {
    return drain(pool, pgtask, concurrency, mode, sizes.drainTasks());
  }

  double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode, int n) throws Exception {
    return drain(pool, pgtask, concurrency, mode, n, DrainTable.EMPTIED);
  }

  /**
   * The task table a drain runs on, and how the drain's own tasks are told from other rows in it:
   * {@link #EMPTIED}, or the rows a backlog measurement seeded kept ({@link #above}).
   */
  interface DrainTable {
    /** Empties the table, as every drain of the main bench does. */
    DrainTable EMPTIED = new DrainTable() {
      @Override
      public void prepare(HikariDataSource pool) throws SQLException {
        BenchDatabase.resetTasks(pool);
        BenchDatabase.vacuumAnalyze(pool);
      }

      @Override
      public long completed(HikariDataSource pool) throws SQLException {
        return BenchDatabase.countCompleted(pool);
      }
    };

    /** Keeps the tasks up to {@code seeded} (their ids); deletes only the ones above, which are the drains'. */
    static DrainTable above(long seeded) {
      return new DrainTable() {
        @Override
        public void prepare(HikariDataSource pool) throws SQLException {
          BenchDatabase.deleteTasksAbove(pool, seeded);
          BenchDatabase.vacuumAnalyze(pool);
        }

        @Override
        public long completed(HikariDataSource pool) throws SQLException {
          return BenchDatabase.countCompletedAbove(pool, seeded);
        }
      };
    }

    /** Before the drain's worker starts: the table as the drain expects it, vacuumed and analyzed. */
    void prepare(HikariDataSource pool) throws SQLException;

    /** The drain's completed tasks. */
    long completed(HikariDataSource pool) throws SQLException;
  }

  double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode, int n, DrainTable table) throws Exception {
    table.prepare(pool);
    List<NewTask> tasks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      TaskOptions o = mode == Mode.PLAIN ? TaskOptions.defaults() : TaskOptions.defaults().withTenant("tenant-" + (i % 2_000));
      tasks.add(NewTask.of("bench.noop", null, o));
    }
    CountDownLatch done = new CountDownLatch(n);
    HandlerOptions options = mode == Mode.PLAIN ? HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)
        : mode == Mode.TRANSACTIONAL_BATCHED ? HandlerOptions.defaults().withSharedTransaction() : HandlerOptions.defaults();
    PgTaskWorker.Builder b = PgTaskWorker.builder(pool).concurrency(concurrency)
        .handler("bench.noop", JsonNode.class, (ctx, p) -> done.countDown(), options);
    if (mode != Mode.TRANSACTIONAL_DEFAULT) {
      b.batchSize(200).prefetch(400);
    }
    if (mode == Mode.TRANSACTIONAL_BATCHED) {
      b.commitBatch(32, Duration.ofMillis(50));
    }
    try (PgTaskWorker worker = b.build().start()) {
      // idle: its first claim (a poll) has returned empty, and it waits for a notification
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (worker.lastClaimAt() == null) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("the worker made no claim within 30 s of its start");
        }
        Thread.sleep(1);
      }
      CpuProbe cpu;
      long start;
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        for (int from = 0; from < n; from += 10_000) {
          pgtask.enqueueAll(c, tasks.subList(from, Math.min(n, from + 10_000)));
        }
        cpu = CpuProbe.start(pool);
        start = System.nanoTime();
        c.commit();
        c.setAutoCommit(true);
      }
      if (!done.await(10, TimeUnit.MINUTES)) {
        throw new IllegalStateException("drain did not finish: " + done.getCount() + " handlers left");
      }
      // the last completions are written after the handlers return
      while (table.completed(pool) < n) {
        Thread.sleep(2);
      }
      double rate = n / ((System.nanoTime() - start) / 1e9);
      report.cpuOfRun(cpu.stopMillis(), n);
      return rate;
    }
  }

  double enqueueBatch(HikariDataSource pool, PgTask pgtask, boolean warmUp) throws Exception {
    List<NewTask> tasks = new ArrayList<>(10_000);
    for (int i = 0; i < 10_000; i++) {
      tasks.add(NewTask.of("bench.noop", null));
    }
    if (warmUp) {
      // the first batches of a JVM run interpreted code and plan the function's statements
      for (int i = 0; i < 3; i++) {
        BenchDatabase.resetTasks(pool);
        pgtask.enqueueAll(tasks);
      }
    }
    BenchDatabase.resetTasks(pool);
    long start = System.nanoTime();
    pgtask.enqueueAll(tasks);
    return 10_000 / ((System.nanoTime() - start) / 1e9);
  }

  enum SingleEnqueue {
    FUNCTION("enqueue: single SELECT pgtask.enqueue, autocommit, 1 connection", "SELECT pgtask.enqueue(?, ?::jsonb)"),
    BARE_TABLE("enqueue: bare INSERT + pg_notify, autocommit, 1 connection",
        "WITH i AS (INSERT INTO pgtask_bench.bare (kind, queue, payload) VALUES (?, 'default', ?::jsonb) "
            + "RETURNING id) SELECT i.id, pg_notify('pgtask_bench', 'default') FROM i"),
    // the task table with its constraints, indexes and triggers, without pgtask.enqueue's checks
    DIRECT_INSERT("enqueue: INSERT into pgtask.task + pg_notify (no function), autocommit, 1 connection",
        "WITH i AS (INSERT INTO pgtask.task (kind, queue, payload) VALUES (?, 'default', ?::jsonb) "
            + "RETURNING id) SELECT i.id, pg_notify('pgtask_bench', 'default') FROM i");

    final String label;
    final String sql;

    SingleEnqueue(String label, String sql) {
      this.label = label;
      this.sql = sql;
    }
  }

  /**
   * Single autocommit enqueues on one connection, the three ways interleaved in rounds of 100, so
   * that the commit latency's drift over time (the WAL flush on this machine varies by a factor of
   * two from minute to minute) falls on all three alike. Returns tasks/s per way.
   */
  Stat[] singleEnqueues(HikariDataSource pool) throws Exception {
    SingleEnqueue[] ways = SingleEnqueue.values();
    List<List<Double>> rates = new ArrayList<>();
    for (int i = 0; i < ways.length; i++) {
      rates.add(new ArrayList<>());
    }
    for (int run = 0; run < sizes.runs(); run++) {
      BenchDatabase.resetTasks(pool);
      try (Connection c = pool.getConnection()) {
        try (Statement st = c.createStatement()) {
          st.execute("DROP SCHEMA IF EXISTS pgtask_bench CASCADE");
          st.execute("CREATE SCHEMA pgtask_bench");
          st.execute("CREATE TABLE pgtask_bench.bare (id bigserial PRIMARY KEY, kind text NOT NULL, queue text NOT NULL, "
              + "payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now())");
        }
        PreparedStatement[] statements = new PreparedStatement[ways.length];
        long[] nanos = new long[ways.length];
        int rounds = 20;
        int perRound = 100;
        try {
          for (int w = 0; w < ways.length; w++) {
            statements[w] = c.prepareStatement(ways[w].sql);
          }
          for (int round = 0; round < rounds; round++) {
            for (int w = 0; w < ways.length; w++) {
              long start = System.nanoTime();
              for (int i = 0; i < perRound; i++) {
                statements[w].setString(1, "bench.noop");
                statements[w].setString(2, "{\"i\": " + i + "}");
                try (ResultSet rs = statements[w].executeQuery()) {
                  rs.next();
                }
              }
              nanos[w] += System.nanoTime() - start;
            }
          }
        } finally {
          for (PreparedStatement ps : statements) {
            if (ps != null) {
              ps.close();
            }
          }
        }
        for (int w = 0; w < ways.length; w++) {
          rates.get(w).add(rounds * perRound / (nanos[w] / 1e9));
        }
      }
    }
    Stat[] stats = new Stat[ways.length];
    for (int w = 0; w < ways.length; w++) {
      stats[w] = report.report(ways[w].label, "tasks/s", rates.get(w));
    }
    return stats;
  }

  /** 1,000 tasks/s in for the configured time; samples latency and table size every 10 s. */
  void sustained(HikariDataSource pool, PgTask pgtask) throws Exception {
    BenchDatabase.resetTasks(pool);
    out.printf("%nsustained: 1000 tasks/s (batches of 10 every 10 ms, over 2,000 tenants) for %d s into one worker"
        + " on the defaults (transactional handler; only the retention set: 30 s, so finished tasks leave the"
        + " table); samples every 10 s%n", sizes.sustained().toSeconds());
    out.println("| t (s) | enqueued | completed | p99 start latency (ms) | task table + indexes (kB) | dead tuples |");
    out.println("|---|---|---|---|---|---|");
    ConcurrentLinkedQueue<Double> latencies = new ConcurrentLinkedQueue<>();
    AtomicInteger completed = new AtomicInteger();
    try (PgTaskWorker worker = PgTaskWorker.builder(pool)
        .retention(Duration.ofSeconds(30), Duration.ofSeconds(30))
        .handler("bench.sustained", JsonNode.class, (ctx, p) -> {
          latencies.add((System.currentTimeMillis() - p.path("t").asLong()) * 1.0);
          completed.incrementAndGet();
        }).build().start()) {
      BenchDatabase.waitForListener(pool);
      long start = System.nanoTime();
      long end = start + sizes.sustained().toNanos();
      long nextSample = start + TimeUnit.SECONDS.toNanos(10);
      int enqueued = 0;
      List<Double> allP99 = new ArrayList<>();
      while (System.nanoTime() < end) {
        long due = (System.nanoTime() - start) / 1_000_000; // 1 task per ms, enqueued 10 at a time
        while (enqueued + 10 <= due) {
          List<NewTask> tick = new ArrayList<>(10);
          for (int i = 0; i < 10; i++) {
            tick.add(NewTask.of("bench.sustained", java.util.Map.of("t", System.currentTimeMillis()),
                TaskOptions.defaults().withTenant("tenant-" + ((enqueued + i) % 2_000))));
          }
          pgtask.enqueueAll(tick);
          enqueued += 10;
        }
        if (System.nanoTime() >= nextSample) {
          List<Double> window = new ArrayList<>();
          Double d;
          while ((d = latencies.poll()) != null) {
            window.add(d);
          }
          Collections.sort(window);
          double p99 = Stat.quantile(window, 0.99);
          if (nextSample - start > TimeUnit.SECONDS.toNanos(60)) {
            allP99.add(p99); // the target holds after the first minute
          }
          long[] size = BenchDatabase.tableSize(pool);
          out.printf(Locale.ROOT, "| %d | %d | %d | %.1f | %d | %d |%n", (nextSample - start) / 1_000_000_000L,
              enqueued, completed.get(), p99, size[0] / 1024, size[1]);
          nextSample += TimeUnit.SECONDS.toNanos(10);
        }
        Thread.sleep(1);
      }
      Collections.sort(allP99);
      report.row("sustained 1000/s: worst 10-s window p99 start latency after the first minute", "ms",
          allP99.isEmpty() ? Stat.SKIPPED : Stat.of(List.of(allP99.get(allP99.size() - 1))));
    }
  }
}
