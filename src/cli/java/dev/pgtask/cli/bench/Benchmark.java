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

  /** The measurements, by the keys of {@code --only} (and of the summary line, where they appear in it). */
  public static final List<String> KEYS = List.of("warmup", "plain_floor", "tx_floor", "batched_floor", "plain",
      "defaults", "batched", "enqueue", "notify", "idle", "delayed", "sustained");

  // the JIT keeps compiling the worker's hot path for the first few tens of thousands of tasks
  private static final int WARM_UP_TASKS = 20_000;

  private final String url;
  private final Properties props;
  private final Sizes sizes;
  private final PrintStream out;
  private final List<String[]> table = new ArrayList<>();

  private final java.util.Set<String> only;

  /** {@code only}: the measurements to run, by key (empty: all); see {@link #KEYS}. */
  public Benchmark(String url, Properties props, boolean quick, java.util.Set<String> only, PrintStream out) {
    this.only = java.util.Set.copyOf(only);
    for (String key : only) {
      if (!KEYS.contains(key)) {
        throw new IllegalArgumentException("unknown measurement '" + key + "'; known: " + String.join(", ", KEYS));
      }
    }
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
      for (int i = 0; i < (selected("warmup") ? 2 : 0); i++) {
        out.printf(Locale.ROOT, "  warm-up %d: plain %.0f/s, transactional batched %.0f/s%n", i + 1,
            drain(pool, pgtask, 10, Mode.PLAIN, WARM_UP_TASKS), drain(pool, pgtask, 10, Mode.TRANSACTIONAL_BATCHED, WARM_UP_TASKS));
      }

      // the floors: raw SQL on a scratch table, no pgtask code (see the methods)
      Stat plainFloor = measure("plain_floor", "at-least-once floor: claim 50 SKIP LOCKED marking running, commit; complete them in one "
          + "statement, commit; 8 connections", "tasks/s", run -> plainFloor(pool));
      Stat txFloor = measure("tx_floor", "per-task transaction floor: claim 50, commit; per task: re-lock, tenant advisory lock, "
          + "complete, commit; concurrency 10", "tasks/s", run -> transactionFloor(pool, 1));
      Stat batchedFloor = measure("batched_floor", "batched transaction floor: as above, 32 tasks per transaction, a savepoint each; "
          + "concurrency 10", "tasks/s", run -> transactionFloor(pool, 32));

      Stat plain10 = measure("plain", "pgtask plain mode, concurrency 10", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.PLAIN));
      Stat plain50 = measure("plain", "pgtask plain mode, concurrency 50", "tasks/s",
          run -> drain(pool, pgtask, 50, Mode.PLAIN));
      Stat defaults = measure("defaults", "pgtask defaults: transactional + tenants, nothing configured (concurrency 10)", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.TRANSACTIONAL_DEFAULT));
      Stat batched10 = measure("batched", "pgtask transactional + tenants, commit batching 32, concurrency 10", "tasks/s",
          run -> drain(pool, pgtask, 10, Mode.TRANSACTIONAL_BATCHED));
      Stat batched50 = measure("batched", "pgtask transactional + tenants, commit batching 32, concurrency 50", "tasks/s",
          run -> drain(pool, pgtask, 50, Mode.TRANSACTIONAL_BATCHED));

      measure("enqueue", "enqueue: Java batch of 10000 (enqueueAll)", "tasks/s", run -> enqueueBatch(pool, pgtask, run == 0));
      Stat[] singles = selected("enqueue") ? singleEnqueues(pool) : new Stat[] {SKIPPED, SKIPPED, SKIPPED};
      Stat single = singles[SingleEnqueue.FUNCTION.ordinal()];
      Stat bare = singles[SingleEnqueue.BARE_TABLE.ordinal()];
      Stat direct = singles[SingleEnqueue.DIRECT_INSERT.ordinal()];

      List<Double> notifyP50 = new ArrayList<>();
      List<Double> notifyP99 = new ArrayList<>();
      List<Double> durableP50 = new ArrayList<>();
      List<Double> durableP99 = new ArrayList<>();
      for (int run = 0; run < (selected("notify") ? sizes.runs() : 0); run++) {
        double[] q = notifyFloor(pool, false);
        notifyP50.add(q[0]);
        notifyP99.add(q[1]);
        double[] d = notifyFloor(pool, true);
        durableP50.add(d[0]);
        durableP99.add(d[1]);
      }
      Stat notifyFloorP50 = SKIPPED;
      if (!notifyP50.isEmpty()) {
        notifyFloorP50 = Stat.of(notifyP50);
        row("notification floor p50: bare pg_notify, COMMIT to receipt by a LISTENing connection", "ms", notifyFloorP50);
        row("notification floor p99", "ms", Stat.of(notifyP99));
        row("notification after a durable write p50: INSERT into a bare table + pg_notify, COMMIT to receipt", "ms",
            Stat.of(durableP50));
        row("notification after a durable write p99", "ms", Stat.of(durableP99));
      }
      Stat[] latency = selected("idle") ? idleLatencies(pool, pgtask) : new Stat[] {SKIPPED, SKIPPED, SKIPPED, SKIPPED, SKIPPED, SKIPPED};
      Stat delayed = selected("delayed") ? delayedStarts(pool) : SKIPPED;
      if (!sizes.sustained().isZero() && selected("sustained")) {
        sustained(pool, pgtask);
      }

      printTable();
      double plain = Math.max(plain10.median, plain50.median);
      double batched = Math.max(batched10.median, batched50.median);
      out.printf(Locale.ROOT, "%nratios: plain/plain_floor %.2f, defaults/tx_floor %.2f, batched/batched_floor %.2f; "
          + "single enqueue vs INSERT into pgtask.task %.2f (vs a bare table %.2f)%n",
          plain / plainFloor.median, defaults.median / txFloor.median, batched / batchedFloor.median,
          single.median / direct.median, single.median / bare.median);
      out.printf(Locale.ROOT, "idle start latency by NOTIFY from the enqueue call: p50 %.2f ms, p99 %.2f ms; in-process wake: "
          + "p50 %.2f ms, p99 %.2f ms%n", latency[4].median, latency[5].median, latency[2].median, latency[3].median);
      out.printf(Locale.ROOT, "pgtask bench: plain=%d plain_floor=%d defaults=%d tx_floor=%d batched=%d batched_floor=%d "
          + "idle_p50_ms=%.2f idle_p99_ms=%.2f notify_p50_ms=%.2f delayed_p99_ms=%.2f%n",
          Math.round(plain), Math.round(plainFloor.median), Math.round(defaults.median), Math.round(txFloor.median),
          Math.round(batched), Math.round(batchedFloor.median), latency[0].median, latency[1].median,
          notifyFloorP50.median, delayed.median);
    }
  }

  // ---- measurements ----

  private enum Mode { PLAIN, TRANSACTIONAL_BATCHED, TRANSACTIONAL_DEFAULT }

  /**
   * Drains {@code drainTasks} no-op tasks; returns tasks/s from the enqueue's COMMIT to the last
   * completion. The worker is started and idle first, as the floors' connections are open before
   * their clock starts: a worker's start (its pool, listener and capacity check: 70–210 ms here)
   * is not throughput, and in a 4,000-task drain it was a third of the time. The tasks are
   * committed in one transaction, whose notification wakes the worker.
   */
  private double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode) throws Exception {
    return drain(pool, pgtask, concurrency, mode, sizes.drainTasks());
  }

  private double drain(HikariDataSource pool, PgTask pgtask, int concurrency, Mode mode, int n) throws Exception {
    resetTasks(pool);
    vacuumAnalyze(pool);
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
      while (countCompleted(pool) < n) {
        Thread.sleep(2);
      }
      double rate = n / ((System.nanoTime() - start) / 1e9);
      lastCpu = perTask(cpu.stopMillis(), n);
      return rate;
    }
  }

  // ---- floors: raw SQL, no pgtask code, what a correct queue of each kind must at least cost ----

  private static final int FLOOR_CLAIM = 50;
  private static final int FLOOR_TENANTS = 2_000;
  private static final int FLOOR_LOCK_NAMESPACE = 4242;

  /** A scratch task table of {@code n} available rows (state 0), each with a tenant. */
  private void floorTable(HikariDataSource pool, int n) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS pgtask_bench CASCADE");
      st.execute("CREATE SCHEMA pgtask_bench");
      st.execute("CREATE TABLE pgtask_bench.raw (id bigserial PRIMARY KEY, state int NOT NULL DEFAULT 0, "
          + "tenant int NOT NULL, kind text NOT NULL DEFAULT 'noop', payload jsonb NOT NULL DEFAULT '{}', "
          + "run_at timestamptz NOT NULL DEFAULT now(), attempt int NOT NULL DEFAULT 0)");
      st.execute("CREATE INDEX ON pgtask_bench.raw (run_at, id) WHERE state = 0");
      st.execute("INSERT INTO pgtask_bench.raw (tenant) SELECT i % " + FLOOR_TENANTS + " FROM generate_series(1, " + n + ") i");
      st.execute("VACUUM ANALYZE pgtask_bench.raw");
    }
  }

  private static final String FLOOR_CLAIM_SQL = "UPDATE pgtask_bench.raw r SET state = 1, attempt = r.attempt + 1 "
      + "FROM (SELECT id FROM pgtask_bench.raw WHERE state = 0 AND run_at <= now() ORDER BY run_at, id LIMIT "
      + FLOOR_CLAIM + " FOR UPDATE SKIP LOCKED) c WHERE r.id = c.id RETURNING r.id, r.tenant";

  /** Claims up to 50 rows (marking them running) and commits; returns {id, tenant} pairs. */
  private static List<long[]> floorClaim(Connection c, PreparedStatement claim) throws SQLException {
    List<long[]> got = new ArrayList<>(FLOOR_CLAIM);
    try (ResultSet rs = claim.executeQuery()) {
      while (rs.next()) {
        got.add(new long[] {rs.getLong("id"), rs.getLong("tenant")});
      }
    }
    if (!c.getAutoCommit()) {
      c.commit();
    }
    return got;
  }

  /**
   * The at-least-once floor (what plain mode must cost): claim 50 per statement with SKIP LOCKED,
   * marking them running, commit; complete them in one statement, commit. Two row writes per task,
   * 8 connections.
   */
  private double plainFloor(HikariDataSource pool) throws Exception {
    int n = sizes.drainTasks();
    floorTable(pool, n);
    return parallel(pool, 8, worker -> {
      int taken = 0;
      try (Connection c = pool.getConnection();
          PreparedStatement claim = c.prepareStatement(FLOOR_CLAIM_SQL);
          PreparedStatement complete = c.prepareStatement("UPDATE pgtask_bench.raw SET state = 2 WHERE id = ANY (?)")) {
        c.setAutoCommit(true);
        while (true) {
          List<long[]> got = floorClaim(c, claim);
          if (got.isEmpty()) {
            return taken;
          }
          Long[] ids = new Long[got.size()];
          for (int i = 0; i < ids.length; i++) {
            ids[i] = got.get(i)[0];
          }
          complete.setArray(1, c.createArrayOf("bigint", ids));
          complete.executeUpdate();
          taken += got.size();
        }
      }
    });
  }

  /**
   * The per-task transaction floor (what the defaults must cost) and, with {@code perTransaction}
   * above 1, the batched transaction floor: claim 50 per statement and commit; then per task, in a
   * transaction (or a savepoint of one of {@code perTransaction} tasks): re-lock its row, take
   * {@code pg_try_advisory_xact_lock} on its tenant, mark it completed; commit. Two round trips per
   * task, as few as a transaction that runs code between its lock and its completion can take:
   * the lock (with BEGIN, or the savepoint), then the completion (with COMMIT, or the release).
   * Concurrency 10.
   */
  private double transactionFloor(HikariDataSource pool, int perTransaction) throws Exception {
    int n = sizes.drainTasks();
    floorTable(pool, n);
    String lock = "SELECT r.id, pg_try_advisory_xact_lock(" + FLOOR_LOCK_NAMESPACE + ", r.tenant) FROM pgtask_bench.raw r "
        + "WHERE r.id = ? AND r.state = 1 FOR UPDATE";
    String savepointLock = "SAVEPOINT t; " + lock;
    String complete = "UPDATE pgtask_bench.raw SET state = 2 WHERE id = ?; " + (perTransaction == 1 ? "COMMIT" : "RELEASE SAVEPOINT t");
    return parallel(pool, 10, worker -> {
      int taken = 0;
      try (Connection claimConn = pool.getConnection(); Connection c = pool.getConnection();
          PreparedStatement claim = claimConn.prepareStatement(FLOOR_CLAIM_SQL);
          PreparedStatement lockPs = c.prepareStatement(perTransaction == 1 ? lock : savepointLock);
          PreparedStatement completePs = c.prepareStatement(complete)) {
        claimConn.setAutoCommit(true);
        c.setAutoCommit(false);
        while (true) {
          List<long[]> got = floorClaim(claimConn, claim);
          if (got.isEmpty()) {
            return taken;
          }
          int inTransaction = 0;
          for (long[] task : got) {
            lockPs.setLong(1, task[0]);
            lockPs.execute();
            drainResults(lockPs);
            completePs.setLong(1, task[0]);
            completePs.execute();
            drainResults(completePs);
            taken++;
            if (perTransaction > 1 && ++inTransaction == perTransaction) {
              c.commit();
              inTransaction = 0;
            }
          }
          if (perTransaction > 1) {
            c.commit();
          }
        }
      }
    });
  }

  private static void drainResults(PreparedStatement ps) throws SQLException {
    do {
      ResultSet rs = ps.getResultSet();
      if (rs != null) {
        try (rs) {
          while (rs.next()) {
            // the lock's row and result
          }
        }
      }
    } while (ps.getMoreResults() || ps.getUpdateCount() != -1);
  }

  /**
   * The notification floor: a bare {@code pg_notify} in a transaction on one connection, received by
   * a LISTENing connection blocked in pgjdbc's {@code getNotifications(timeout)}; from the
   * {@code COMMIT} to receipt (a notification is sent at commit). Returns {p50, p99} in ms.
   */
  private double[] notifyFloor(HikariDataSource pool, boolean durable) throws Exception {
    if (durable) {
      try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
        st.execute("CREATE SCHEMA IF NOT EXISTS pgtask_bench");
        st.execute("DROP TABLE IF EXISTS pgtask_bench.notify_write");
        st.execute("CREATE TABLE pgtask_bench.notify_write (id bigserial PRIMARY KEY, payload text NOT NULL)");
      }
    }
    // durable: the notification's transaction also inserts a row, so its commit waits for the WAL
    // flush before the notification goes out, as an enqueue's does; a transaction that only
    // notifies writes no WAL before its commit record and commits without waiting for the flush
    String sql = durable
        ? "WITH w AS (INSERT INTO pgtask_bench.notify_write (payload) VALUES (?) RETURNING payload) "
            + "SELECT pg_notify('pgtask_bench_floor', payload) FROM w"
        : "SELECT pg_notify('pgtask_bench_floor', ?)";
    try (Connection listen = pool.getConnection(); Connection send = pool.getConnection();
        PreparedStatement notify = send.prepareStatement(sql)) {
      try (Statement st = listen.createStatement()) {
        st.execute("LISTEN pgtask_bench_floor");
      }
      send.setAutoCommit(false);
      org.postgresql.PGConnection pg = listen.unwrap(org.postgresql.PGConnection.class);
      List<Double> ms = new ArrayList<>();
      for (int i = 0; i < sizes.latencyTasks() + 20; i++) {
        notify.setString(1, Integer.toString(i));
        try (ResultSet rs = notify.executeQuery()) {
          rs.next();
        }
        long t0 = System.nanoTime();
        send.commit();
        boolean received = false;
        while (!received) {
          org.postgresql.PGNotification[] got = pg.getNotifications(10_000);
          if (got == null) {
            throw new IllegalStateException("the notification floor's NOTIFY did not arrive within 10 s");
          }
          for (org.postgresql.PGNotification g : got) {
            received |= g.getParameter().equals(Integer.toString(i));
          }
        }
        if (i >= 20) {
          ms.add((System.nanoTime() - t0) / 1e6);
        }
        Thread.sleep(5);
      }
      send.setAutoCommit(true);
      try (Statement st = listen.createStatement()) {
        st.execute("UNLISTEN *");
      }
      Collections.sort(ms);
      return new double[] {quantile(ms, 0.50), quantile(ms, 0.99)};
    }
  }

  private double enqueueBatch(HikariDataSource pool, PgTask pgtask, boolean warmUp) throws Exception {
    List<NewTask> tasks = new ArrayList<>(10_000);
    for (int i = 0; i < 10_000; i++) {
      tasks.add(NewTask.of("bench.noop", null));
    }
    if (warmUp) {
      // the first batches of a JVM run interpreted code and plan the function's statements
      for (int i = 0; i < 3; i++) {
        resetTasks(pool);
        pgtask.enqueueAll(tasks);
      }
    }
    resetTasks(pool);
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
   * Start latency into an idle worker, two ways. Enqueued through another pool, as by another
   * process, so the worker learns of the task only by LISTEN/NOTIFY: timed from the enqueuing
   * transaction's {@code COMMIT}, the instant the notification floor is timed from (the task does
   * not exist for anyone before it), and also from just before the {@code enqueue} call. And
   * enqueued through the worker's own DataSource, which wakes it in-process after its commit: timed
   * from just before the {@code enqueue} call. Returns {p50, p99} in ms: by NOTIFY from the commit,
   * in-process, by NOTIFY from the call.
   */
  private Stat[] idleLatencies(HikariDataSource pool, PgTask pgtask) throws Exception {
    Stat[] notified;
    try (HikariDataSource other = pool(2)) {
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
    row("idle wake-up p50 (LISTEN/NOTIFY: enqueued through another pool; COMMIT to the handler's first line)", "ms", notified[0]);
    row("idle wake-up p99 (LISTEN/NOTIFY; COMMIT to the handler's first line)", "ms", notified[1]);
    row("idle enqueue-to-start p50 (LISTEN/NOTIFY; from just before the enqueue call)", "ms", notified[2]);
    row("idle enqueue-to-start p99 (LISTEN/NOTIFY; from just before the enqueue call)", "ms", notified[3]);
    Stat[] local = idleLatency(pool, () -> {
      long call = System.nanoTime();
      pgtask.enqueue(NewTask.of("bench.latency", null));
      return new long[] {call, call};
    });
    row("idle enqueue-to-start p50 (in-process wake: enqueued through the worker's DataSource)", "ms", local[0]);
    row("idle enqueue-to-start p99 (in-process wake: enqueued through the worker's DataSource)", "ms", local[1]);
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
      resetTasks(pool);
      // a blocking hand-off, as an application would wait: a spinning thread here would take one
      // of the machine's cores from the worker and the server it measures
      java.util.concurrent.LinkedBlockingQueue<Long> starts = new java.util.concurrent.LinkedBlockingQueue<>();
      try (PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(10)
          .handler("bench.latency", JsonNode.class, (ctx, p) -> starts.add(System.nanoTime()))
          .build().start()) {
        waitForListener(pool);
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
        quantiles.get(0).add(quantile(first, 0.50));
        quantiles.get(1).add(quantile(first, 0.99));
        quantiles.get(2).add(quantile(second, 0.50));
        quantiles.get(3).add(quantile(second, 0.99));
      }
    }
    return new Stat[] {Stat.of(quantiles.get(0)), Stat.of(quantiles.get(1)), Stat.of(quantiles.get(2)), Stat.of(quantiles.get(3))};
  }

  /**
   * Delayed tasks start on time: tasks enqueued through another pool (as by another process) with
   * {@code run_at} 2 s ahead, into an otherwise idle worker, 100 ms apart; lateness = the handler's
   * first line minus {@code run_at}. Returns the p99 lateness in ms (median and spread of the runs).
   */
  private Stat delayedStarts(HikariDataSource pool) throws Exception {
    List<Double> p50s = new ArrayList<>();
    List<Double> p99s = new ArrayList<>();
    int n = Math.max(20, sizes.latencyTasks() / 5);
    for (int run = 0; run < sizes.runs(); run++) {
      resetTasks(pool);
      java.util.concurrent.LinkedBlockingQueue<Double> lateness = new java.util.concurrent.LinkedBlockingQueue<>();
      try (HikariDataSource other = pool(2);
          PgTaskWorker worker = PgTaskWorker.builder(pool)
              .handler("bench.delayed", JsonNode.class, (ctx, p) -> {
                java.time.Instant now = java.time.Instant.now();
                lateness.add(java.time.Duration.between(java.time.Instant.parse(p.path("runAt").asText()), now).toNanos() / 1e6);
              }).build().start()) {
        waitForListener(pool);
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
        p50s.add(quantile(ms, 0.50));
        p99s.add(quantile(ms, 0.99));
      }
    }
    row("delayed task (run_at 2 s ahead, enqueued by another pool) start lateness p50", "ms", Stat.of(p50s));
    Stat p99 = Stat.of(p99s);
    row("delayed task start lateness p99", "ms", p99);
    return p99;
  }

  /** 1,000 tasks/s in for the configured time; samples latency and table size every 10 s. */
  private void sustained(HikariDataSource pool, PgTask pgtask) throws Exception {
    resetTasks(pool);
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
          double p99 = quantile(window, 0.99);
          if (nextSample - start > TimeUnit.SECONDS.toNanos(60)) {
            allP99.add(p99); // the target holds after the first minute
          }
          long[] size = tableSize(pool);
          out.printf(Locale.ROOT, "| %d | %d | %d | %.1f | %d | %d |%n", (nextSample - start) / 1_000_000_000L,
              enqueued, completed.get(), p99, size[0] / 1024, size[1]);
          nextSample += TimeUnit.SECONDS.toNanos(10);
        }
        Thread.sleep(1);
      }
      Collections.sort(allP99);
      row("sustained 1000/s: worst 10-s window p99 start latency after the first minute", "ms",
          allP99.isEmpty() ? SKIPPED : Stat.of(List.of(allP99.get(allP99.size() - 1))));
    }
  }

  // ---- helpers ----

  private interface Run {
    double apply(int run) throws Exception;
  }

  private static final Stat SKIPPED = new Stat(Double.NaN, Double.NaN, Double.NaN);

  private boolean selected(String key) {
    return only.isEmpty() || only.contains(key);
  }

  private Stat measure(String key, String name, String unit, Run run) throws Exception {
    if (!selected(key)) {
      return SKIPPED;
    }
    List<Double> values = new ArrayList<>();
    List<Double> clientCpu = new ArrayList<>();
    List<Double> serverCpu = new ArrayList<>();
    for (int i = 0; i < sizes.runs(); i++) {
      lastCpu = null;
      values.add(run.apply(i));
      if (lastCpu != null) {
        clientCpu.add(lastCpu[0]);
        serverCpu.add(lastCpu[1]);
      }
    }
    Stat s = report(name, unit, values);
    if (!clientCpu.isEmpty()) {
      Stat client = Stat.of(clientCpu);
      Stat server = Stat.of(serverCpu);
      cpuRows.add(new String[] {name, String.format(Locale.ROOT, "%.0f", client.median),
          String.format(Locale.ROOT, "%.0f", server.median), String.format(Locale.ROOT, "%.0f", client.median + server.median)});
      out.printf(Locale.ROOT, "  %-90s CPU per task: %.0f µs client + %.0f µs server%n", "", client.median, server.median);
    }
    return s;
  }

  // CPU µs per task of the last timed run, {client, server}; null if the run did not measure it
  private double[] lastCpu;
  private final List<String[]> cpuRows = new ArrayList<>();

  private static double[] perTask(double[] millis, int tasks) {
    return new double[] {millis[0] * 1000 / Math.max(1, tasks), millis[1] * 1000 / Math.max(1, tasks)};
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
    if (!cpuRows.isEmpty()) {
      out.println();
      out.println("| CPU per task (median of " + sizes.runs() + ") | client µs | server µs | total µs |");
      out.println("|---|---|---|---|");
      for (String[] r : cpuRows) {
        out.printf("| %s | %s | %s | %s |%n", r[0], r[1], r[2], r[3]);
      }
    }
  }

  private void printMachine(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT version() AS version, current_setting('synchronous_commit') AS synchronous_commit, "
            + "current_setting('shared_buffers') AS shared_buffers, current_setting('max_connections') AS max_connections")) {
      rs.next();
      out.printf("machine: %d cores, Java %s; %s; synchronous_commit=%s, shared_buffers=%s, max_connections=%s%n",
          Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
          rs.getString("version").replaceAll(" on .*", ""), rs.getString("synchronous_commit"), rs.getString("shared_buffers"),
          rs.getString("max_connections"));
    }
  }

  private double parallel(HikariDataSource pool, int threads, IntFunctionWithException body) throws Exception {
    ExecutorService ex = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> fs = new ArrayList<>();
      CpuProbe cpu = CpuProbe.start(pool);
      long start = System.nanoTime();
      for (int i = 0; i < threads; i++) {
        int w = i;
        fs.add(ex.submit(() -> body.apply(w)));
      }
      int total = 0;
      for (Future<Integer> f : fs) {
        total += f.get();
      }
      double rate = total / ((System.nanoTime() - start) / 1e9);
      lastCpu = perTask(cpu.stopMillis(), total);
      return rate;
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
        ResultSet rs = st.executeQuery("SELECT count(*) AS completed FROM pgtask.task WHERE state = 'completed'")) {
      rs.next();
      return rs.getLong("completed");
    }
  }

  private static long[] tableSize(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_total_relation_size('pgtask.task') AS bytes, "
            + "coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'pgtask.task'::regclass), 0) AS dead")) {
      rs.next();
      return new long[] {rs.getLong("bytes"), rs.getLong("dead")};
    }
  }

  private static void waitForListener(HikariDataSource pool) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try (Connection c = pool.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) AS listeners FROM pg_stat_activity WHERE application_name LIKE 'pgtask listen %' "
              + "AND datname = current_database()")) {
        rs.next();
        if (rs.getLong("listeners") > 0) {
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
