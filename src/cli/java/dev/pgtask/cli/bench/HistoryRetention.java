package dev.pgtask.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 31: do the leader's retention and vacuum keep up with {@value #RATE} tasks/s beside a long
 * history? The table starts with {@code rows} completed tasks whose {@code finished_at} is spaced
 * evenly over the last {@code rows / RATE} seconds, and the worker's completed retention is that
 * span: the history is the steady state of a queue that has run at this rate under this retention,
 * and the retention pass must delete {@value #RATE} old tasks a second as the worker completes
 * {@value #RATE} new ones. A producer enqueues {@value #RATE}/s (10 every 10 ms, over 2,000 tenants)
 * into one worker on the defaults; every {@value #SAMPLE_SECONDS} s the size of the table and of each
 * of its indexes is read. Flat: every size at the end at most {@value #FLAT} times its size at the
 * first minute.
 */
final class HistoryRetention {

  static final int RATE = 1_000;
  static final int TENANTS = 2_000;
  static final int SAMPLE_SECONDS = 30;
  static final double FLAT = 1.1;
  private static final int SEED_CHUNK = 500_000;

  private final long rows;
  private final Duration length;
  private final PrintStream out;

  HistoryRetention(boolean quick, PrintStream out) {
    this.rows = quick ? 500_000 : 5_000_000;
    this.length = quick ? Duration.ofMinutes(2) : Duration.ofMinutes(10);
    this.out = out;
  }

  /** Runs it, prints the samples and the line {@code pgtask bench history: ...}; empties the task table after. */
  void run(HikariDataSource pool, PgTask pgtask) throws Exception {
    Duration retention = Duration.ofSeconds(rows / RATE);
    BenchDatabase.resetTasks(pool);
    long seedStart = System.nanoTime();
    seed(pool);
    out.printf(Locale.ROOT, "%nhistory: %d completed tasks, finished over the last %d s (seeded, vacuumed, analyzed in %.0f s); "
        + "%d tasks/s into one worker on the defaults with retention(%d s) for %d s; sizes every %d s%n", rows,
        retention.toSeconds(), (System.nanoTime() - seedStart) / 1e9, RATE, retention.toSeconds(), length.toSeconds(),
        SAMPLE_SECONDS);
    List<Sample> samples = new ArrayList<>();
    AtomicLong completed = new AtomicLong();
    try (PgTaskWorker worker = PgTaskWorker.builder(pool)
        .retention(retention, retention)
        .handler("bench.history", JsonNode.class, (ctx, p) -> completed.incrementAndGet())
        .build().start()) {
      BenchDatabase.waitForListener(pool);
      samples.add(Sample.read(pool, 0, 0, 0));
      long start = System.nanoTime();
      long end = start + length.toNanos();
      long nextSample = start + TimeUnit.SECONDS.toNanos(SAMPLE_SECONDS);
      long enqueued = 0;
      while (System.nanoTime() < end) {
        long due = (System.nanoTime() - start) / 1_000_000 * RATE / 1_000; // enqueued 10 at a time
        while (enqueued + 10 <= due) {
          List<NewTask> tick = new ArrayList<>(10);
          for (int i = 0; i < 10; i++) {
            tick.add(NewTask.of("bench.history", null, TaskOptions.defaults().withTenant("tenant-" + ((enqueued + i) % TENANTS))));
          }
          pgtask.enqueueAll(tick);
          enqueued += 10;
        }
        if (System.nanoTime() >= nextSample) {
          samples.add(Sample.read(pool, (nextSample - start) / 1_000_000_000L, enqueued, completed.get()));
          nextSample += TimeUnit.SECONDS.toNanos(SAMPLE_SECONDS);
        }
        Thread.sleep(1);
      }
    } finally {
      BenchDatabase.resetTasks(pool);
    }
    print(samples);
  }

  /** The history: {@code rows} completed tasks, oldest first in the heap, one per 1/RATE s back. */
  private void seed(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("SELECT pgtask.tenant_id('tenant-' || g) FROM generate_series(0, " + (TENANTS - 1) + ") g");
    }
    String sql = "INSERT INTO pgtask.task (kind, queue, payload, tenant_id, state, attempt, run_at, created_at, attempted_at, "
        + "finished_at) "
        + "SELECT 'bench.history', 'default', '{}', t.id, 'completed', 1, at, at, at, at + interval '20 ms' "
        + "FROM generate_series(?::bigint, ?::bigint, -1) i "
        + "CROSS JOIN LATERAL (SELECT now() - make_interval(secs => i::float8 / " + RATE + ") AS at) a "
        + "JOIN pgtask.tenant t ON t.name = 'tenant-' || (i % " + TENANTS + ") "
        + "ORDER BY i DESC";
    try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      for (long hi = rows; hi >= 1; hi -= SEED_CHUNK) {
        ps.setLong(1, hi);
        ps.setLong(2, Math.max(1, hi - SEED_CHUNK + 1));
        ps.executeUpdate();
      }
    }
    BenchDatabase.vacuumAnalyze(pool);
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      try {
        st.execute("CHECKPOINT");
      } catch (SQLException e) {
        // a role without pg_checkpoint: the writes then go out in the server's own time
      }
    }
  }

  /** One reading: sizes in bytes (table with its indexes, the heap, each index), rows and vacuums. */
  record Sample(long second, long enqueued, long completed, long total, long heap, Map<String, Long> indexes, long live,
      long dead, long vacuums) {

    static Sample read(HikariDataSource pool, long second, long enqueued, long completed) throws SQLException {
      Map<String, Long> indexes = new LinkedHashMap<>();
      try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT i.indexrelid::regclass::text AS name, pg_relation_size(i.indexrelid) AS bytes "
            + "FROM pg_index i WHERE i.indrelid = 'pgtask.task'::regclass ORDER BY 1")) {
          while (rs.next()) {
            indexes.put(rs.getString("name").replace("pgtask.", ""), rs.getLong("bytes"));
          }
        }
        try (ResultSet rs = st.executeQuery("SELECT pg_total_relation_size('pgtask.task') AS total, "
            + "pg_relation_size('pgtask.task') AS heap, s.n_live_tup, s.n_dead_tup, s.vacuum_count + s.autovacuum_count AS vacuums "
            + "FROM pg_stat_user_tables s WHERE s.relid = 'pgtask.task'::regclass")) {
          rs.next();
          return new Sample(second, enqueued, completed, rs.getLong("total"), rs.getLong("heap"), indexes, rs.getLong("n_live_tup"),
              rs.getLong("n_dead_tup"), rs.getLong("vacuums"));
        }
      }
    }
  }

  private void print(List<Sample> samples) {
    List<String> names = new ArrayList<>(samples.get(0).indexes().keySet());
    StringBuilder head = new StringBuilder("| t (s) | enqueued | completed | live rows | dead rows | vacuums | table + indexes (MB) | heap (MB)");
    StringBuilder rule = new StringBuilder("|---|---|---|---|---|---|---|---");
    for (String n : names) {
      head.append(" | ").append(n).append(" (MB)");
      rule.append("|---");
    }
    out.println(head.append(" |"));
    out.println(rule.append("|"));
    for (Sample s : samples) {
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| %d | %d | %d | %d | %d | %d | %.1f | %.1f", s.second(),
          s.enqueued(), s.completed(), s.live(), s.dead(), s.vacuums(), mb(s.total()), mb(s.heap())));
      for (String n : names) {
        row.append(String.format(Locale.ROOT, " | %.1f", mb(s.indexes().getOrDefault(n, 0L))));
      }
      out.println(row.append(" |"));
    }
    Sample minute = samples.stream().filter(s -> s.second() >= 60).findFirst().orElse(null);
    Sample last = samples.get(samples.size() - 1);
    if (minute == null || minute == last) {
      out.println("pgtask bench history: too short to compare with the first minute");
      return;
    }
    double growth = (double) last.total() / minute.total();
    String worst = "table";
    double worstGrowth = growth;
    for (String n : names) {
      double g = (double) last.indexes().getOrDefault(n, 0L) / Math.max(1, minute.indexes().getOrDefault(n, 0L));
      if (minute.indexes().getOrDefault(n, 0L) >= 1 << 20 && g > worstGrowth) { // an index under 1 MB is noise
        worstGrowth = g;
        worst = n;
      }
    }
    double heapGrowth = (double) last.heap() / minute.heap();
    if (heapGrowth > worstGrowth) {
      worstGrowth = heapGrowth;
      worst = "heap";
    }
    out.printf(Locale.ROOT, "pgtask bench history: rows=%d seconds=%d rate=%d completed=%d total_mb_1m=%.1f total_mb_end=%.1f "
        + "total_growth=%.2f worst=%s worst_growth=%.2f flat=%s%n", rows, last.second(), RATE, last.completed(), mb(minute.total()),
        mb(last.total()), growth, worst, worstGrowth, worstGrowth <= FLAT ? "yes" : "no");
  }

  private static double mb(long bytes) {
    return bytes / 1048576.0;
  }
}
