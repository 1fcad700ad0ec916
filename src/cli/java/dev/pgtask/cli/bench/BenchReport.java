package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The benchmark's measurement and report: runs a measurement {@code runs} times and records its
 * median, spread and CPU per task, prints each as it comes, and prints the table at the end.
 */
final class BenchReport {

  interface Run {
    double apply(int run) throws Exception;
  }

  private final Benchmark.Sizes sizes;
  private final PrintStream out;
  private final java.util.Set<String> only;
  private final List<String[]> table = new ArrayList<>();

  BenchReport(Benchmark.Sizes sizes, java.util.Set<String> only, PrintStream out) {
    this.sizes = sizes;
    this.only = only;
    this.out = out;
  }

  boolean selected(String key) {
    return only.isEmpty() || only.contains(key);
  }

  /** Records the CPU per task of the run being measured, from a {@link CpuProbe}'s {client, server} ms. */
  void cpuOfRun(double[] millis, int tasks) {
    lastCpu = perTask(millis, tasks);
  }

  Stat measure(String key, String name, String unit, Run run) throws Exception {
    if (!selected(key)) {
      return Stat.SKIPPED;
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
    lastMeasuredCpu = null;
    if (!clientCpu.isEmpty()) {
      Stat client = Stat.of(clientCpu);
      Stat server = Stat.of(serverCpu);
      cpuRows.add(new String[] {name, String.format(Locale.ROOT, "%.0f", client.median()),
          String.format(Locale.ROOT, "%.0f", server.median()), String.format(Locale.ROOT, "%.0f", client.median() + server.median())});
      out.printf(Locale.ROOT, "  %-90s CPU per task: %.0f µs client + %.0f µs server%n", "", client.median(), server.median());
      lastMeasuredCpu = new double[] {client.median(), server.median()};
    }
    return s;
  }

  /** The median CPU µs per task of the last {@link #measure}, {client, server}; null if it measured none. */
  double[] lastMeasuredCpu() {
    return lastMeasuredCpu;
  }

  private double[] lastMeasuredCpu;

  // CPU µs per task of the last timed run, {client, server}; null if the run did not measure it
  private double[] lastCpu;
  private final List<String[]> cpuRows = new ArrayList<>();

  static double[] perTask(double[] millis, int tasks) {
    return new double[] {millis[0] * 1000 / Math.max(1, tasks), millis[1] * 1000 / Math.max(1, tasks)};
  }

  /** Adds a table row for the runs' values and prints them as they come. */
  Stat report(String name, String unit, List<Double> values) {
    Stat s = Stat.of(values);
    row(name, unit, s);
    out.printf(Locale.ROOT, "  %-90s %10.0f %s (runs: %s)%n", name, s.median(), unit, values.stream()
        .map(v -> String.format(Locale.ROOT, "%.0f", v)).toList());
    out.flush();
    return s;
  }

  void row(String name, String unit, Stat s) {
    table.add(new String[] {name, String.format(Locale.ROOT, s.median() >= 100 ? "%.0f" : "%.2f", s.median()), unit,
        String.format(Locale.ROOT, s.median() >= 100 ? "%.0f–%.0f" : "%.2f–%.2f", s.min(), s.max())});
  }

  void printTable() {
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

  void printMachine(HikariDataSource pool) throws SQLException {
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

  double parallel(HikariDataSource pool, int threads, IntFunctionWithException body) throws Exception {
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

  interface IntFunctionWithException {
    int apply(int worker) throws Exception;
  }
}
