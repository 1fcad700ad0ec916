package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTask;
import dev.pgtask.migrate.Migrations;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Properties;

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
      "defaults", "batched", "enqueue", "notify", "idle", "delayed", "sustained", "capped", "dashboard", "backlog", "history");

  // the JIT keeps compiling the worker's hot path for the first few tens of thousands of tasks
  private static final int WARM_UP_TASKS = 20_000;
  // the durable notification floor's round trips per run (issue 31: at least 300)
  private static final int DURABLE_NOTIFY_SAMPLES = 300;
  // issue 31: the idle wake-up's p50 within this of the durable notification floor's
  private static final double IDLE_OVER_DURABLE_MS = 1.0;
  // the dashboard's pages are measured on a task table of this many rows (issue 29: 1,000,000)
  private static final int DASHBOARD_ROWS = 1_000_000;

  private final BenchDatabase db;
  private final Sizes sizes;
  private final PrintStream out;
  private final BenchReport report;
  private final Floors floors;
  private final WorkerThroughput throughput;
  private final StartLatencies latencies;
  private final BacklogThroughput backlog;
  private final HistoryRetention history;

  /** {@code only}: the measurements to run, by key (empty: all); see {@link #KEYS}. */
  public Benchmark(String url, Properties props, boolean quick, java.util.Set<String> only, PrintStream out) {
    for (String key : only) {
      if (!KEYS.contains(key)) {
        throw new IllegalArgumentException("unknown measurement '" + key + "'; known: " + String.join(", ", KEYS));
      }
    }
    this.db = new BenchDatabase(url, props);
    this.sizes = quick ? Sizes.quick() : Sizes.full();
    this.out = out;
    this.report = new BenchReport(sizes, java.util.Set.copyOf(only), out);
    this.floors = new Floors(sizes, report);
    this.throughput = new WorkerThroughput(sizes, report, out);
    this.latencies = new StartLatencies(sizes, report, db);
    this.backlog = new BacklogThroughput(sizes, quick, report, throughput, out);
    this.history = new HistoryRetention(quick, out);
  }

  public void run() throws Exception {
    try (HikariDataSource pool = db.pool(60)) {
      Migrations.apply(pool);
      report.printMachine(pool);
      PgTask pgtask = PgTask.create(pool);

      // untimed drains first: a long-running worker has its hot path compiled; a fresh JVM has not
      if (report.selected("warmup")) {
        out.printf(Locale.ROOT, "warm-up: untimed drains of %d tasks, two per mode%n", WARM_UP_TASKS);
      }
      for (int i = 0; i < (report.selected("warmup") ? 2 : 0); i++) {
        out.printf(Locale.ROOT, "  warm-up %d: plain %.0f/s, transactional batched %.0f/s%n", i + 1,
            throughput.drain(pool, pgtask, 10, WorkerThroughput.Mode.PLAIN, WARM_UP_TASKS),
            throughput.drain(pool, pgtask, 10, WorkerThroughput.Mode.TRANSACTIONAL_BATCHED, WARM_UP_TASKS));
      }

      // the floors: raw SQL on a scratch table, no pgtask code (see the methods)
      Stat plainFloor = report.measure("plain_floor", "at-least-once floor: claim 50 SKIP LOCKED marking running, commit; complete them in one "
          + "statement, commit; 8 connections", "tasks/s", run -> floors.plainFloor(pool));
      Stat txFloor = report.measure("tx_floor", "per-task transaction floor: claim 50, commit; per task: re-lock, tenant advisory lock, "
          + "complete, commit; concurrency 10", "tasks/s", run -> floors.transactionFloor(pool, 1));
      Stat batchedFloor = report.measure("batched_floor", "batched transaction floor: as above, 32 tasks per transaction, a savepoint each; "
          + "concurrency 10", "tasks/s", run -> floors.transactionFloor(pool, 32));

      Stat plain10 = report.measure("plain", "pgtask plain mode, concurrency 10", "tasks/s",
          run -> throughput.drain(pool, pgtask, 10, WorkerThroughput.Mode.PLAIN));
      Stat plain50 = report.measure("plain", "pgtask plain mode, concurrency 50", "tasks/s",
          run -> throughput.drain(pool, pgtask, 50, WorkerThroughput.Mode.PLAIN));
      Stat defaults = report.measure("defaults", "pgtask defaults: transactional + tenants, nothing configured (concurrency 10)", "tasks/s",
          run -> throughput.drain(pool, pgtask, 10, WorkerThroughput.Mode.TRANSACTIONAL_DEFAULT));
      Stat batched10 = report.measure("batched", "pgtask transactional + tenants, commit batching 32, concurrency 10", "tasks/s",
          run -> throughput.drain(pool, pgtask, 10, WorkerThroughput.Mode.TRANSACTIONAL_BATCHED));
      Stat batched50 = report.measure("batched", "pgtask transactional + tenants, commit batching 32, concurrency 50", "tasks/s",
          run -> throughput.drain(pool, pgtask, 50, WorkerThroughput.Mode.TRANSACTIONAL_BATCHED));

      CappedThroughput capped = new CappedThroughput(sizes.drainTasks());
      Stat uncapped = report.measure("capped", "4 workers x concurrency 10, tasks of 20 ms, no limit", "tasks/s",
          run -> capped.drain(pool, pgtask, 0));
      Stat capped40 = report.measure("capped", "the same, their kind capped at 40 (pgtask.set_limit)", "tasks/s",
          run -> capped.drain(pool, pgtask, 40));

      report.measure("enqueue", "enqueue: Java batch of 10000 (enqueueAll)", "tasks/s", run -> throughput.enqueueBatch(pool, pgtask, run == 0));
      Stat[] singles = report.selected("enqueue") ? throughput.singleEnqueues(pool) : new Stat[] {Stat.SKIPPED, Stat.SKIPPED, Stat.SKIPPED};
      Stat single = singles[WorkerThroughput.SingleEnqueue.FUNCTION.ordinal()];
      Stat bare = singles[WorkerThroughput.SingleEnqueue.BARE_TABLE.ordinal()];
      Stat direct = singles[WorkerThroughput.SingleEnqueue.DIRECT_INSERT.ordinal()];

      List<Double> notifyP50 = new ArrayList<>();
      List<Double> notifyP99 = new ArrayList<>();
      List<Double> durableP50 = new ArrayList<>();
      List<Double> durableP99 = new ArrayList<>();
      List<Double> otherP50 = new ArrayList<>();
      List<Double> otherP99 = new ArrayList<>();
      DurableNotifyFloor durable = new DurableNotifyFloor(db);
      for (int run = 0; run < (report.selected("notify") ? sizes.runs() : 0); run++) {
        double[] q = floors.notifyFloor(pool, false);
        notifyP50.add(q[0]);
        notifyP99.add(q[1]);
        double[] d = floors.notifyFloor(pool, true);
        durableP50.add(d[0]);
        durableP99.add(d[1]);
        double[] o = durable.measure(pool, DURABLE_NOTIFY_SAMPLES);
        otherP50.add(o[0]);
        otherP99.add(o[1]);
      }
      Stat notifyFloorP50 = Stat.SKIPPED;
      Stat notifyDurableP50 = Stat.SKIPPED;
      if (!notifyP50.isEmpty()) {
        notifyFloorP50 = Stat.of(notifyP50);
        notifyDurableP50 = Stat.of(otherP50);
        report.row("notification floor p50: bare pg_notify, COMMIT to receipt by a LISTENing connection", "ms", notifyFloorP50);
        report.row("notification floor p99", "ms", Stat.of(notifyP99));
        report.row("notification after a durable write p50: INSERT into a bare table + pg_notify, COMMIT to receipt", "ms",
            Stat.of(durableP50));
        report.row("notification after a durable write p99", "ms", Stat.of(durableP99));
        report.row("durable notification floor p50 (notify_durable): INSERT + pg_notify, COMMIT to receipt in another process",
            "ms", notifyDurableP50);
        report.row("durable notification floor p99: the same, another process", "ms", Stat.of(otherP99));
      }
      Stat[] latency = report.selected("idle") ? latencies.idleLatencies(pool, pgtask) : new Stat[] {Stat.SKIPPED, Stat.SKIPPED, Stat.SKIPPED, Stat.SKIPPED, Stat.SKIPPED, Stat.SKIPPED};
      Stat delayed = report.selected("delayed") ? latencies.delayedStarts(pool) : Stat.SKIPPED;
      if (!sizes.sustained().isZero() && report.selected("sustained")) {
        throughput.sustained(pool, pgtask);
      }

      Map<String, Double> pages = report.selected("dashboard") ? DashboardPages.measure(pool, DASHBOARD_ROWS) : Map.of();
      if (report.selected("backlog")) {
        backlog.run(pool, pgtask);
      }
      if (report.selected("history")) {
        history.run(pool, pgtask);
      }

      report.printTable();
      double plain = Math.max(plain10.median(), plain50.median());
      double batched = Math.max(batched10.median(), batched50.median());
      out.printf(Locale.ROOT, "%nratios: plain/plain_floor %.2f, defaults/tx_floor %.2f, batched/batched_floor %.2f; "
          + "single enqueue vs INSERT into pgtask.task %.2f (vs a bare table %.2f)%n",
          plain / plainFloor.median(), defaults.median() / txFloor.median(), batched / batchedFloor.median(),
          single.median() / direct.median(), single.median() / bare.median());
      if (!pages.isEmpty()) {
        StringBuilder line = new StringBuilder("pgtask bench dashboard: rows=" + DASHBOARD_ROWS);
        pages.forEach((page, ms) -> line.append(String.format(Locale.ROOT, " %s_ms=%.1f", page, ms)));
        line.append(String.format(Locale.ROOT, " slowest_ms=%.1f",
            pages.values().stream().mapToDouble(Double::doubleValue).max().orElse(0)));
        out.println(line);
      }
      backlog.printSummary();
      if (report.selected("capped")) {
        out.printf(Locale.ROOT, "pgtask bench capped: uncapped=%d capped_40=%d capped_ratio=%.2f%n",
            Math.round(uncapped.median()), Math.round(capped40.median()), capped40.median() / uncapped.median());
      }
      out.printf(Locale.ROOT, "idle start latency by NOTIFY from the enqueue call: p50 %.2f ms, p99 %.2f ms; in-process wake: "
          + "p50 %.2f ms, p99 %.2f ms%n", latency[4].median(), latency[5].median(), latency[2].median(), latency[3].median());
      if (!Double.isNaN(latency[0].median()) && !Double.isNaN(notifyDurableP50.median())) {
        double target = notifyDurableP50.median() + IDLE_OVER_DURABLE_MS;
        out.printf(Locale.ROOT, "idle wake-up p50 %.2f ms against the durable notification floor p50 %.2f ms + %.1f = %.2f ms: %s "
            + "(%+.2f ms)%n", latency[0].median(), notifyDurableP50.median(), IDLE_OVER_DURABLE_MS, target,
            latency[0].median() <= target ? "met" : "not met", latency[0].median() - target);
      }
      out.printf(Locale.ROOT, "pgtask bench: plain=%d plain_floor=%d defaults=%d tx_floor=%d batched=%d batched_floor=%d "
          + "idle_p50_ms=%.2f idle_p99_ms=%.2f notify_p50_ms=%.2f notify_durable_p50_ms=%.2f delayed_p99_ms=%.2f%n",
          Math.round(plain), Math.round(plainFloor.median()), Math.round(defaults.median()), Math.round(txFloor.median()),
          Math.round(batched), Math.round(batchedFloor.median()), latency[0].median(), latency[1].median(),
          notifyFloorP50.median(), notifyDurableP50.median(), delayed.median());
    }
  }
}
