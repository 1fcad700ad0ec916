package dev.pgtask.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.migrate.Migrations;
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
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code bin/pgtask bench}: pgtask's speed measured side by side with a raw-SQL floor, in one
 * process, against one database. Every figure is the median of 3 runs with its spread.
 *
 * <p>The raw-SQL floor runs the statements a minimal queue needs (claim 50 with SKIP LOCKED and
 * delete them, 8 connections) on a scratch table, with no pgtask code: it is what this machine's
 * PostgreSQL can do, and pgtask's figures are read against it. The benchmark drops and recreates
 * the {@code pgtask_bench} schema and empties {@code pgtask.task}: run it on a scratch database.
 */
public final class Benchmark {

  /** Benchmark sizes. */
  public record Sizes(int drainTasks, int runs, int latencyTasks, Duration sustained) {
    static Sizes full() {
      return new Sizes(20_000, 3, 300, Duration.ofMinutes(10));
    }

    static Sizes quick() {
      return new Sizes(4_000, 3, 150, Duration.ZERO);
    }
  }

  // the JIT keeps compiling the worker's hot path for the first few tens of thousands of tasks
  private static final int WARM_UP_TASKS = 20_000;

  private final String url;
  private final Properties props;
  private final Sizes sizes;
  private final PrintStream out;
  private final List<String[]> table = new ArrayList<>();

  public Benchmark(String url, Properties props, boolean quick, PrintStream out) {
    this.url = url;
    this.props = props;
    this.sizes = quick ? Sizes.quick() : Sizes.full();
    this.out = out;
  }

  /** Runs everything and prints the table and the summary line. */
  public void run() throws Exception {
    try (HikariDataSource pool = pool(60)) {
      Migrations.apply(pool);
      printMachine(pool);
      PgTask pgtask = PgTask.create(pool);

      // untimed drains first: a long-running worker has its hot path compiled; a fresh JVM has not
      out.printf(Locale.ROOT, "warm-up: untimed drains of %d tasks, two per mode%n", WARM_UP_TASKS);
      for (int i = 0; i < 2; i++) {
        out.printf(Locale.ROOT, "  warm-up %d: plain %.0f/s, transactional batched %.0f/s%n", i + 1,
            drain(pool, pgtask, 10, Mode.PLAIN, WARM_UP_TASKS), drain(pool, pgtask, 10, Mode.TRANSACTIONAL_BATCHED, WARM_UP_TASKS));
      }

      Stat floor = measure("raw SQL floor: claim 50 SKIP LOCKED + delete, 8 connections", "tasks/s",
          run -> rawFloor(pool));
      Stat rawTx = measure("raw SQL: one transaction per task (claim 1 + complete), 8 connections", "tasks/s",
          run -> rawOnePerTransaction(pool));
      Stat plain10 = measure("pgtask plain mode, concurrency 10", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.PLAIN));
      Stat plain50 = measure("pgtask plain mode, concurrency 50", "tasks/s",
          run -> drain(pool, pgtask, 50, Mode.PLAIN));
      Stat tx10 = measure("pgtask transactional + tenants, commit batching, concurrency 10", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.TRANSACTIONAL_BATCHED));
      Stat tx50 = measure("pgtask transactional + tenants, commit batching, concurrency 50", "tasks/s",
          run -> drain(pool, pgtask, 50, Mode.TRANSACTIONAL_BATCHED));
      measure("pgtask transactional + tenants, one transaction per task (defaults), concurrency 10", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.TRANSACTIONAL_DEFAULT));
      measure("enqueue: Java batch of 10000 (enqueueAll)", "tasks/s", run -> enqueueBatch(pool, pgtask));
      Stat[] singles = singleEnqueues(pool);
      Stat single = singles[SingleEnqueue.FUNCTION.ordinal()];
      Stat bare = singles[SingleEnqueue.BARE_TABLE.ordinal()];
      Stat direct = singles[SingleEnqueue.DIRECT_INSERT.ordinal()];
      Stat[] latency = idleLatencies(pool, pgtask);
      if (!sizes.sustained().isZero()) {
        sustained(pool, pgtask);
      }

      printTable();
      out.printf(Locale.ROOT, "%nsingle enqueue vs bare INSERT + NOTIFY: %.2f (1.00 = as fast); vs INSERT into pgtask.task: %.2f%n",
          single.median / bare.median, single.median / direct.median);
      out.printf(Locale.ROOT, "raw one-transaction-per-task: %.0f/s; idle enqueue-to-start p50 / p99: %.2f / %.2f ms "
          + "by LISTEN/NOTIFY, %.2f / %.2f ms woken in-process%n",
          rawTx.median, latency[0].median, latency[1].median, latency[2].median, latency[3].median);
      double plain = Math.max(plain10.median, plain50.median);
      double tx = Math.max(tx10.median, tx50.median);
      out.printf(Locale.ROOT, "pgtask bench: plain drain %d/s, transactional drain %d/s, floor %d/s, plain/floor %.2f%n",
          Math.round(plain), Math.round(tx), Math.round(floor.median), plain / floor.median);
    }
  }

  // ---- measurements ----

  private enum Mode { PLAIN, TRANSACTIONAL_BATCHED, TRANSACTIONAL_DEFAULT }

  /** Drains {@code drainTasks} no-op tasks; returns tasks/s from the worker's start to the last completion. */
  private double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode) throws Exception {
    return drain(pool, pgtask, concurrency, mode, sizes.drainTasks());
  }

  private double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode, int n) throws Exception {
    resetTasks(pool);
    List<NewTask> tasks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      TaskOptions o = mode == Mode.PLAIN ? TaskOptions.defaults() : TaskOptions.defaults().withTenant("tenant-" + (i % 2_000));
      tasks.add(NewTask.of("bench.noop", null, o));
    }
    for (int from = 0; from < n; from += 10_000) {
      pgtask.enqueueAll(tasks.subList(from, Math.min(n, from + 10_000)));
    }
    vacuumAnalyze(pool);
    CountDownLatch done = new CountDownLatch(n);
    HandlerOptions options = mode == Mode.PLAIN
        ? HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN) : HandlerOptions.defaults();
    PgTaskWorker.Builder b = PgTaskWorker.builder(pool).concurrency(concurrency)
        .handler("bench.noop", JsonNode.class, (ctx, p) -> done.countDown(), options);
    if (mode != Mode.TRANSACTIONAL_DEFAULT) {
      b.batchSize(200).prefetch(400);
    }
    if (mode == Mode.TRANSACTIONAL_BATCHED) {
      b.commitBatch(32, Duration.ofMillis(50));
    }
    long start = System.nanoTime();
    try (PgTaskWorker worker = b.build().start()) {
      if (!done.await(10, TimeUnit.MINUTES)) {
        throw new IllegalStateException("drain did not finish: " + done.getCount() + " handlers left");
      }
      // the last completions are written after the handlers return
      while (countCompleted(pool) < n) {
        Thread.sleep(2);
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  private double rawFloor(HikariDataSource pool) throws Exception {
    int n = sizes.drainTasks();
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS pgtask_bench CASCADE");
      st.execute("CREATE SCHEMA pgtask_bench");
      st.execute("CREATE TABLE pgtask_bench.raw (id bigserial PRIMARY KEY, kind text NOT NULL, payload jsonb NOT NULL, "
          + "run_at timestamptz NOT NULL DEFAULT now())");
      st.execute("INSERT INTO pgtask_bench.raw (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, " + n + ")");
      st.execute("VACUUM ANALYZE pgtask_bench.raw");
    }
    return parallel(pool, 8, worker -> {
      int taken = 0;
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement("WITH c AS (SELECT id FROM pgtask_bench.raw ORDER BY id LIMIT 50 "
              + "FOR UPDATE SKIP LOCKED) DELETE FROM pgtask_bench.raw r USING c WHERE r.id = c.id RETURNING r.id")) {
        while (true) {
          int got = 0;
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              got++;
            }
          }
          if (got == 0) {
            return taken;
          }
          taken += got;
        }
      }
    });
  }

  private double rawOnePerTransaction(HikariDataSource pool) throws Exception {
    int n = Math.min(sizes.drainTasks(), 5_000);
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS pgtask_bench CASCADE");
      st.execute("CREATE SCHEMA pgtask_bench");
      st.execute("CREATE TABLE pgtask_bench.raw (id bigserial PRIMARY KEY, state int NOT NULL DEFAULT 0, payload jsonb NOT NULL)");
      st.execute("CREATE INDEX ON pgtask_bench.raw (id) WHERE state = 0");
      st.execute("INSERT INTO pgtask_bench.raw (payload) SELECT '{}' FROM generate_series(1, " + n + ")");
      st.execute("VACUUM ANALYZE pgtask_bench.raw");
    }
    return parallel(pool, 8, worker -> {
      int taken = 0;
      try (Connection c = pool.getConnection();
          PreparedStatement claim = c.prepareStatement("UPDATE pgtask_bench.raw SET state = 1 WHERE id = (SELECT id "
              + "FROM pgtask_bench.raw WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id");
          PreparedStatement complete = c.prepareStatement("UPDATE pgtask_bench.raw SET state = 2 WHERE id = ?")) {
        while (true) {
          long id;
          try (ResultSet rs = claim.executeQuery()) {
            if (!rs.next()) {
              return taken;
            }
            id = rs.getLong(1);
          }
          complete.setLong(1, id);
          complete.executeUpdate();
          taken++;
        }
      }
    });
  }

  private double enqueueBatch(HikariDataSource pool, PgTask pgtask) throws Exception {
    resetTasks(pool);
    List<NewTask> tasks = new ArrayList<>(10_000);
    for (int i = 0; i < 10_000; i++) {
      tasks.add(NewTask.of("bench.noop", null));
    }
    long start = System.nanoTime();
    pgtask.enqueueAll(tasks);
    return 10_000 / ((System.nanoTime() - start) / 1e9);
  }

  private enum SingleEnqueue {
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
  private Stat[] singleEnqueues(HikariDataSource pool) throws Exception {
    SingleEnqueue[] ways = SingleEnqueue.values();
    List<List<Double>> rates = new ArrayList<>();
    for (int i = 0; i < ways.length; i++) {
      rates.add(new ArrayList<>());
    }
    for (int run = 0; run < sizes.runs(); run++) {
      resetTasks(pool);
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
      stats[w] = report(ways[w].label, "tasks/s", rates.get(w));
    }
    return stats;
  }

  /**
   * Enqueue-to-start latency into an idle worker, two ways: enqueued through another pool, as by
   * another process, so the worker learns of it from LISTEN/NOTIFY; and through the worker's own
   * DataSource, which wakes it in-process. Returns {p50, p99} in ms of each, in that order.
   */
  private Stat[] idleLatencies(HikariDataSource pool, PgTask pgtask) throws Exception {
    Stat[] notified;
    try (HikariDataSource other = pool(2)) {
      notified = idleLatency(pool, PgTask.create(other), "LISTEN/NOTIFY: enqueued through another pool");
    }
    Stat[] local = idleLatency(pool, pgtask, "in-process wake: enqueued through the worker's DataSource");
    return new Stat[] {notified[0], notified[1], local[0], local[1]};
  }

  /** Enqueue-to-start latency into an idle worker, one task at a time; returns {p50, p99} in ms. */
  private Stat[] idleLatency(HikariDataSource pool, PgTask pgtask, String how) throws Exception {
    List<Double> p50s = new ArrayList<>();
    List<Double> p99s = new ArrayList<>();
    for (int run = 0; run < sizes.runs(); run++) {
      resetTasks(pool);
      // a blocking hand-off, as an application would wait: a spinning thread here would take one
      // of the machine's cores from the worker and the server it measures
      java.util.concurrent.LinkedBlockingQueue<Long> starts = new java.util.concurrent.LinkedBlockingQueue<>();
      try (PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(10)
          .handler("bench.latency", JsonNode.class, (ctx, p) -> starts.add(System.nanoTime()))
          .build().start()) {
        waitForListener(pool);
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < sizes.latencyTasks() + 20; i++) {
          long t0 = System.nanoTime();
          pgtask.enqueue(NewTask.of("bench.latency", null));
          Long started = starts.poll(10, TimeUnit.SECONDS);
          if (i >= 20 && started != null) { // the first 20 warm up the JIT and the pool
            ms.add((started - t0) / 1e6);
          }
          Thread.sleep(5);
        }
        Collections.sort(ms);
        p50s.add(quantile(ms, 0.50));
        p99s.add(quantile(ms, 0.99));
      }
    }
    Stat p50 = Stat.of(p50s);
    Stat p99 = Stat.of(p99s);
    row("idle enqueue-to-start latency p50 (" + how + ")", "ms", p50);
    row("idle enqueue-to-start latency p99 (" + how + ")", "ms", p99);
    return new Stat[] {p50, p99};
  }

  /** 1,000 tasks/s in for the configured time; samples latency and table size every 10 s. */
  private void sustained(HikariDataSource pool, PgTask pgtask) throws Exception {
    resetTasks(pool);
    out.printf("%nsustained: 1000 tasks/s (batches of 10 every 10 ms) for %d s into one worker (concurrency 10,"
        + " prefetch 100, commit batching 16/20 ms, retention 30 s); samples every 10 s%n", sizes.sustained().toSeconds());
    out.println("| t (s) | enqueued | completed | p99 start latency (ms) | task table + indexes (kB) | dead tuples |");
    out.println("|---|---|---|---|---|---|");
    ConcurrentLinkedQueue<Double> latencies = new ConcurrentLinkedQueue<>();
    AtomicInteger completed = new AtomicInteger();
    try (PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(10).prefetch(100)
        .commitBatch(16, Duration.ofMillis(20))
        .retention(Duration.ofSeconds(30), Duration.ofSeconds(30))
        .handler("bench.sustained", JsonNode.class, (ctx, p) -> {
          latencies.add((System.currentTimeMillis() - p.path("t").asLong()) * 1.0);
          completed.incrementAndGet();
        }).build().start()) {
      waitForListener(pool);
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
            tick.add(NewTask.of("bench.sustained", java.util.Map.of("t", System.currentTimeMillis())));
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
          double p99 = quantile(window, 0.99);
          allP99.add(p99);
          long[] size = tableSize(pool);
          out.printf(Locale.ROOT, "| %d | %d | %d | %.1f | %d | %d |%n", (nextSample - start) / 1_000_000_000L,
              enqueued, completed.get(), p99, size[0] / 1024, size[1]);
          nextSample += TimeUnit.SECONDS.toNanos(10);
        }
        Thread.sleep(1);
      }
      Collections.sort(allP99);
      row("sustained 1000/s: worst 10-s window p99 start latency", "ms", Stat.of(List.of(allP99.get(allP99.size() - 1))));
    }
  }

  // ---- helpers ----

  private interface Run {
    double apply(int run) throws Exception;
  }

  private Stat measure(String name, String unit, Run run) throws Exception {
    List<Double> values = new ArrayList<>();
    for (int i = 0; i < sizes.runs(); i++) {
      values.add(run.apply(i));
    }
    return report(name, unit, values);
  }

  /** Adds a table row for the runs' values and prints them as they come. */
  private Stat report(String name, String unit, List<Double> values) {
    Stat s = Stat.of(values);
    row(name, unit, s);
    out.printf(Locale.ROOT, "  %-90s %10.0f %s (runs: %s)%n", name, s.median, unit, values.stream()
        .map(v -> String.format(Locale.ROOT, "%.0f", v)).toList());
    out.flush();
    return s;
  }

  private void row(String name, String unit, Stat s) {
    table.add(new String[] {name, String.format(Locale.ROOT, s.median >= 100 ? "%.0f" : "%.2f", s.median), unit,
        String.format(Locale.ROOT, s.median >= 100 ? "%.0f–%.0f" : "%.2f–%.2f", s.min, s.max)});
  }

  private void printTable() {
    out.println();
    out.println("| measurement | median | unit | spread (min–max of " + sizes.runs() + ") |");
    out.println("|---|---|---|---|");
    for (String[] r : table) {
      out.printf("| %s | %s | %s | %s |%n", r[0], r[1], r[2], r[3]);
    }
  }

  private void printMachine(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT version(), current_setting('synchronous_commit'), "
            + "current_setting('shared_buffers'), current_setting('max_connections')")) {
      rs.next();
      out.printf("machine: %d cores, Java %s; %s; synchronous_commit=%s, shared_buffers=%s, max_connections=%s%n",
          Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
          rs.getString(1).replaceAll(" on .*", ""), rs.getString(2), rs.getString(3), rs.getString(4));
    }
  }

  private double parallel(HikariDataSource pool, int threads, IntFunctionWithException body) throws Exception {
    ExecutorService ex = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> fs = new ArrayList<>();
      long start = System.nanoTime();
      for (int i = 0; i < threads; i++) {
        int w = i;
        fs.add(ex.submit(() -> body.apply(w)));
      }
      int total = 0;
      for (Future<Integer> f : fs) {
        total += f.get();
      }
      return total / ((System.nanoTime() - start) / 1e9);
    } finally {
      ex.shutdownNow();
    }
  }

  private interface IntFunctionWithException {
    int apply(int worker) throws Exception;
  }

  private HikariDataSource pool(int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setDataSourceProperties(props);
    config.setMaximumPoolSize(size);
    config.setPoolName("pgtask-bench");
    config.addDataSourceProperty("ApplicationName", "pgtask bench");
    return new HikariDataSource(config);
  }

  private static void resetTasks(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("TRUNCATE pgtask.task");
      st.execute("DELETE FROM pgtask.worker");
    }
  }

  private static void vacuumAnalyze(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("VACUUM ANALYZE pgtask.task");
    }
  }

  private static long countCompleted(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM pgtask.task WHERE state = 'completed'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long[] tableSize(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_total_relation_size('pgtask.task'), "
            + "coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'pgtask.task'::regclass), 0)")) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }

  private static void waitForListener(HikariDataSource pool) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try (Connection c = pool.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgtask listen %' "
              + "AND datname = current_database()")) {
        rs.next();
        if (rs.getLong(1) > 0) {
          Thread.sleep(200);
          return;
        }
      }
      Thread.sleep(20);
    }
  }

  static double quantile(List<Double> sorted, double q) {
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  /** Median and spread of runs. */
  record Stat(double median, double min, double max) {
    static Stat of(List<Double> values) {
      List<Double> v = new ArrayList<>(values);
      Collections.sort(v);
      return new Stat(v.get(v.size() / 2), v.get(0), v.get(v.size() - 1));
    }
  }
}
