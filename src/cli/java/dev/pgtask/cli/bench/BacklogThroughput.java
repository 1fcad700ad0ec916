package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTask;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Issue 31: a user's task table is not empty. The defaults and plain mode drain tasks, and single
 * enqueues run, beside 0 and then more other rows in {@code pgtask.task}, in one run: half of them
 * completed history of the drained queue ({@code finished_at} spread over the default retention of
 * 24 hours, so the retention pass finds a few to delete as it would), half a due backlog in a queue
 * the measured worker does not serve (a queue whose workers are down: its tasks are due, each of its
 * tenants has one head and the rest wait behind it, as the hand-off leaves them). The backlog is
 * in another queue because a backlog in the drained queue would be drained with the measured tasks:
 * the figure would then be the backlog's drain, not the cost of its presence.
 *
 * <p>The rows are added by set-based {@code INSERT ... SELECT generate_series} statements straight
 * into the table (with its triggers and constraints), the table grows from one size to the next,
 * and each size is vacuumed, analyzed and checkpointed before it is measured. Each drain deletes
 * only its own tasks (ids above the seeded ones). The table is emptied at the end.
 */
final class BacklogThroughput {

  static final String BACKLOG_QUEUE = "backlog";
  static final int TENANTS = 2_000;
  static final int CONCURRENCY = 10;
  private static final int SEED_CHUNK = 500_000;
  // single enqueues per run, interleaved with the bare-table control in rounds
  private static final int ENQUEUE_ROUNDS = 20;
  private static final int ENQUEUE_PER_ROUND = 100;
  // the completed history's finished_at is spread over this many seconds back: just under the
  // default 24-hour retention, so the pass deletes a few as the run goes on, as it would
  private static final int HISTORY_SECONDS = 86_000;
  // the backlog's run_at: an outage of an hour
  private static final int BACKLOG_SECONDS = 3_600;

  private final Benchmark.Sizes sizes;
  private final BenchReport report;
  private final PrintStream out;
  private final WorkerThroughput throughput;
  private final List<Long> tableSizes;

  BacklogThroughput(Benchmark.Sizes sizes, boolean quick, BenchReport report, WorkerThroughput throughput, PrintStream out) {
    this.sizes = sizes;
    this.report = report;
    this.out = out;
    this.throughput = throughput;
    this.tableSizes = quick ? List.of(0L, 200_000L, 1_000_000L) : List.of(0L, 1_000_000L, 5_000_000L);
  }

  /** Short names of the table sizes, for the summary line: 0, 200k, 1m, 5m. */
  static String label(long rows) {
    if (rows == 0) {
      return "0";
    }
    return rows % 1_000_000 == 0 ? rows / 1_000_000 + "m" : rows % 1_000 == 0 ? rows / 1_000 + "k" : Long.toString(rows);
  }

  // the figures by size label, in the order measured; empty until run
  private final Map<String, Stat> defaults = new LinkedHashMap<>();
  private final Map<String, Stat> plain = new LinkedHashMap<>();
  private final Map<String, Stat[]> enqueue = new LinkedHashMap<>();
  // server CPU µs per task of the defaults and of plain mode, by size label
  private final Map<String, double[]> serverCpu = new LinkedHashMap<>();

  /** Measures every size (see {@link #printSummary}) and empties the task table. */
  void run(HikariDataSource pool, PgTask pgtask) throws Exception {
    int n = sizes.drainTasks();
    out.printf(Locale.ROOT, "%nbacklog: %d-task drains (concurrency %d) and single enqueues beside %s other rows (half completed "
        + "history of the drained queue, half a due backlog in queue '%s', which the worker does not serve)%n", n, CONCURRENCY,
        tableSizes.stream().map(BacklogThroughput::label).toList(), BACKLOG_QUEUE);
    BenchDatabase.resetTasks(pool);
    registerTenants(pool);
    // untimed: the smallest size comes first and must not pay the JIT's compilation of the hot path
    out.printf(Locale.ROOT, "  warm-up (untimed): defaults %.0f/s, plain %.0f/s%n",
        throughput.drain(pool, pgtask, CONCURRENCY, WorkerThroughput.Mode.TRANSACTIONAL_DEFAULT, n),
        throughput.drain(pool, pgtask, CONCURRENCY, WorkerThroughput.Mode.PLAIN, n));
    BenchDatabase.resetTasks(pool);
    long seededRows = 0;
    try {
      for (long rows : tableSizes) {
        long start = System.nanoTime();
        seed(pool, seededRows, rows);
        seededRows = rows;
        long seeded = settle(pool);
        out.printf(Locale.ROOT, "  %d other rows in pgtask.task (added, vacuumed, analyzed, checkpointed in %.0f s)%n", rows,
            (System.nanoTime() - start) / 1e9);
        WorkerThroughput.DrainTable table = WorkerThroughput.DrainTable.above(seeded);
        String l = label(rows);
        defaults.put(l, report.measure("backlog", "backlog " + l + ": defaults (transactional + tenants), " + n + " tasks", "tasks/s",
            run -> throughput.drain(pool, pgtask, CONCURRENCY, WorkerThroughput.Mode.TRANSACTIONAL_DEFAULT, n, table)));
        double defaultsCpu = serverCpu(report.lastMeasuredCpu());
        plain.put(l, report.measure("backlog", "backlog " + l + ": plain mode, " + n + " tasks", "tasks/s",
            run -> throughput.drain(pool, pgtask, CONCURRENCY, WorkerThroughput.Mode.PLAIN, n, table)));
        serverCpu.put(l, new double[] {defaultsCpu, serverCpu(report.lastMeasuredCpu())});
        enqueue.put(l, singleEnqueues(pool, l, table));
      }
    } finally {
      BenchDatabase.resetTasks(pool);
    }
  }

  private static double serverCpu(double[] cpu) {
    return cpu == null ? Double.NaN : cpu[1];
  }

  private static void registerTenants(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("SELECT pgtask.tenant_id('tenant-' || g) FROM generate_series(0, " + (TENANTS - 1) + ") g");
    }
  }

  /**
   * Adds rows {@code from + 1} to {@code to}: even ones completed history of queue 'default', odd
   * ones the backlog, each of the {@value #TENANTS} tenants' first backlog task its head (when the
   * backlog has none yet), the others waiting behind it.
   */
  private static void seed(HikariDataSource pool, long from, long to) throws SQLException {
    boolean firstBacklog = from == 0;
    String sql = "INSERT INTO pgtask.task (kind, queue, payload, tenant_id, state, blocked, attempt, run_at, created_at, "
        + "attempted_at, finished_at) "
        + "SELECT CASE WHEN h THEN 'bench.history' ELSE 'bench.backlog' END, CASE WHEN h THEN 'default' ELSE '" + BACKLOG_QUEUE
        + "' END, jsonb_build_object('n', i), t.id, CASE WHEN h THEN 'completed' ELSE 'available' END::pgtask.task_state, "
        + "NOT h AND NOT (? AND i / 2 < " + TENANTS + "), CASE WHEN h THEN 1 ELSE 0 END, at, at, "
        + "CASE WHEN h THEN at END, CASE WHEN h THEN at + interval '20 ms' END "
        + "FROM generate_series(?::bigint, ?::bigint) i "
        + "CROSS JOIN LATERAL (SELECT i % 2 = 0 AS h) k "
        + "CROSS JOIN LATERAL (SELECT now() - make_interval(secs => CASE WHEN h THEN (i * 7919) % " + HISTORY_SECONDS
        + " ELSE (i * 7919) % " + BACKLOG_SECONDS + " END) AS at) a "
        + "JOIN pgtask.tenant t ON t.name = 'tenant-' || (i / 2 % " + TENANTS + ")";
    try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      for (long a = from + 1; a <= to; a += SEED_CHUNK) {
        ps.setBoolean(1, firstBacklog);
        ps.setLong(2, a);
        ps.setLong(3, Math.min(to, a + SEED_CHUNK - 1));
        ps.executeUpdate();
      }
    }
  }

  /** VACUUM ANALYZE and a checkpoint (the seeding's writes out of the way of the timing); returns the highest id. */
  private static long settle(HikariDataSource pool) throws SQLException {
    BenchDatabase.vacuumAnalyze(pool);
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      try {
        st.execute("CHECKPOINT");
      } catch (SQLException e) {
        // a role without pg_checkpoint: the writes then go out in the server's own time
      }
      try (ResultSet rs = st.executeQuery("SELECT coalesce(max(id), 0) AS seeded FROM pgtask.task")) {
        rs.next();
        return rs.getLong("seeded");
      }
    }
  }

  /**
   * Single {@code SELECT pgtask.enqueue(...)} in autocommit on one connection, as the enqueue key
   * runs them, interleaved in rounds with an INSERT + pg_notify into a bare table: the control,
   * which moves with the machine's commit latency (the WAL flush) and not with the task table.
   * Returns {enqueue, bare} in calls/s.
   */
  private Stat[] singleEnqueues(HikariDataSource pool, String label, WorkerThroughput.DrainTable table) throws Exception {
    List<Double> function = new ArrayList<>();
    List<Double> bare = new ArrayList<>();
    for (int run = 0; run < sizes.runs(); run++) {
      table.prepare(pool);
      try (Connection c = pool.getConnection()) {
        try (Statement st = c.createStatement()) {
          st.execute("CREATE SCHEMA IF NOT EXISTS pgtask_bench");
          st.execute("DROP TABLE IF EXISTS pgtask_bench.backlog_bare");
          st.execute("CREATE TABLE pgtask_bench.backlog_bare (id bigserial PRIMARY KEY, kind text NOT NULL, queue text NOT NULL, "
              + "payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now())");
        }
        c.setAutoCommit(true);
        long[] nanos = new long[2];
        try (PreparedStatement f = c.prepareStatement("SELECT pgtask.enqueue(?, ?::jsonb)");
            PreparedStatement b = c.prepareStatement("WITH i AS (INSERT INTO pgtask_bench.backlog_bare (kind, queue, payload) "
                + "VALUES (?, 'default', ?::jsonb) RETURNING id) SELECT i.id, pg_notify('pgtask_bench', 'default') FROM i")) {
          PreparedStatement[] ways = {f, b};
          for (int round = 0; round < ENQUEUE_ROUNDS; round++) {
            for (int w = 0; w < ways.length; w++) {
              long start = System.nanoTime();
              for (int i = 0; i < ENQUEUE_PER_ROUND; i++) {
                ways[w].setString(1, "bench.noop");
                ways[w].setString(2, "{\"i\": " + i + "}");
                try (ResultSet rs = ways[w].executeQuery()) {
                  rs.next();
                }
              }
              nanos[w] += System.nanoTime() - start;
            }
          }
        }
        function.add(ENQUEUE_ROUNDS * ENQUEUE_PER_ROUND / (nanos[0] / 1e9));
        bare.add(ENQUEUE_ROUNDS * ENQUEUE_PER_ROUND / (nanos[1] / 1e9));
      }
    }
    return new Stat[] {report.report("backlog " + label + ": single SELECT pgtask.enqueue, autocommit, 1 connection", "tasks/s", function),
        report.report("backlog " + label + ": (control) INSERT + pg_notify into a bare table, interleaved", "rows/s", bare)};
  }

  /** The table of the figures and the line {@code pgtask bench backlog: ...}; nothing before {@link #run}. */
  void printSummary() {
    if (defaults.isEmpty()) {
      return;
    }
    out.printf("%n| other rows in pgtask.task | defaults (tasks/s) | plain (tasks/s) | single enqueue (tasks/s) | "
        + "control: bare INSERT (rows/s) | server CPU per task, defaults / plain (µs) |%n|---|---|---|---|---|---|%n");
    for (String l : defaults.keySet()) {
      out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %.0f / %.0f |%n", l, cell(defaults.get(l)), cell(plain.get(l)),
          cell(enqueue.get(l)[0]), cell(enqueue.get(l)[1]), serverCpu.get(l)[0], serverCpu.get(l)[1]);
    }
    String first = defaults.keySet().iterator().next();
    String last = label(tableSizes.get(tableSizes.size() - 1));
    StringBuilder line = new StringBuilder("pgtask bench backlog:");
    for (Map.Entry<String, Stat> e : defaults.entrySet()) {
      line.append(String.format(Locale.ROOT, " defaults_%s=%d", e.getKey(), Math.round(e.getValue().median())));
    }
    for (Map.Entry<String, Stat> e : plain.entrySet()) {
      line.append(String.format(Locale.ROOT, " plain_%s=%d", e.getKey(), Math.round(e.getValue().median())));
    }
    for (Map.Entry<String, Stat[]> e : enqueue.entrySet()) {
      line.append(String.format(Locale.ROOT, " enqueue_%s=%d", e.getKey(), Math.round(e.getValue()[0].median())));
    }
    line.append(String.format(Locale.ROOT, " defaults_ratio_%s=%.2f plain_ratio_%s=%.2f enqueue_ratio_%s=%.2f", last,
        defaults.get(last).median() / defaults.get(first).median(), last, plain.get(last).median() / plain.get(first).median(),
        last, enqueue.get(last)[0].median() / enqueue.get(first)[0].median()));
    out.printf(Locale.ROOT, "control (bare INSERT) ratio %s/%s: %.2f%n", last, first,
        enqueue.get(last)[1].median() / enqueue.get(first)[1].median());
    out.println(line);
  }

  private static String cell(Stat s) {
    return String.format(Locale.ROOT, "%,.0f (%,.0f–%,.0f)", s.median(), s.min(), s.max());
  }
}
