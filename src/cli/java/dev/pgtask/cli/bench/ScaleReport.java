package dev.pgtask.cli.bench;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * The output of {@code bench --scale}: a line per configuration as it ends, a markdown table, and
 * one summary line of key=value pairs that starts {@code pgtask bench scale:}, with the keys
 * first ({@code _4}: 1 process of 4 workers, {@code _64}: 1 process of 64), then the same figures of
 * the other configurations ({@code _8x8}, {@code _64x1}) and the ratios to 4 workers. A skipped
 * configuration's figures print as NaN.
 */
final class ScaleReport {

  private ScaleReport() {}

  static String progress(ScaleRun.Result r) {
    if (r.skipped() != null) {
      return "  " + r.config().label() + ": " + r.skipped();
    }
    return String.format(Locale.ROOT, "  %s: %.0f tasks/s; server CPU %.0f µs/task, %.2f transactions/task; "
            + "%.1f LISTENing sessions (of %.0f), %d notifications, %.1f deliveries/task; %.2f tasks/claim; %s",
        r.config().label(), r.tasks() / r.seconds(), r.serverMicrosPerTask(), r.transactionsPerTask(), r.listeners(),
        r.listenSessions(),
        r.notifications(), r.deliveriesPerTask(), r.tasksPerClaim(), checked(r));
  }

  private static String checked(ScaleRun.Result r) {
    ScaleRun.Check c = r.check();
    if (c.ok(r.tasks())) {
      return "every task once, no tenant overlap (" + c.workersSeen() + " workers ran tasks)";
    }
    return String.format(Locale.ROOT, "CHECK FAILED: %d executions of %d tasks, %d tasks not run exactly once, "
        + "%d tenant overlaps, %d rescued from a lost worker", c.executions(), r.tasks(), c.notOnce(), c.overlaps(), c.lost());
  }

  static void print(PrintStream out, List<ScaleRun.Result> results) {
    out.println();
    out.println("| workers | tasks/s | server CPU µs/task | PgBouncer CPU µs/task | worker JVMs CPU µs/task "
        + "| transactions/task | LISTENing sessions (of connected) | notifications | deliveries/task | tasks/claim | check |");
    out.println("|---|---|---|---|---|---|---|---|---|---|---|");
    for (ScaleRun.Result r : results) {
      if (r.skipped() != null) {
        out.printf(Locale.ROOT, "| %s | %s | | | | | | | | | |%n", r.config().label(), r.skipped());
        continue;
      }
      out.printf(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.1f (of %.0f) | %d | %.1f | %.2f | %s |%n",
          r.config().label(), r.tasks() / r.seconds(), r.serverMicrosPerTask(), r.perTask(r.bouncerMillis() * 1000),
          r.perTask(r.workersMillis() * 1000), r.transactionsPerTask(), r.listeners(), r.listenSessions(),
          r.notifications(), r.deliveriesPerTask(), r.tasksPerClaim(), r.check().ok(r.tasks()) ? "ok" : "FAILED");
    }
    out.println();
    out.println(summary(results));
  }

  static String summary(List<ScaleRun.Result> results) {
    ScaleRun.Result four = find(results, "4");
    ScaleRun.Result many = find(results, "64");
    StringBuilder line = new StringBuilder("pgtask bench scale:");
    line.append(kv("server_cpu_us_per_task_4", four.serverMicrosPerTask(), 0));
    line.append(kv("server_cpu_us_per_task_64", many.serverMicrosPerTask(), 0));
    line.append(kv("xacts_per_task_4", four.transactionsPerTask(), 2));
    line.append(kv("xacts_per_task_64", many.transactionsPerTask(), 2));
    line.append(kv("notify_deliveries_per_task_64", many.deliveriesPerTask(), 2));
    for (String key : List.of("8x8", "64x1")) {
      ScaleRun.Result r = find(results, key);
      line.append(kv("server_cpu_us_per_task_" + key, r.serverMicrosPerTask(), 0));
      line.append(kv("xacts_per_task_" + key, r.transactionsPerTask(), 2));
      line.append(kv("notify_deliveries_per_task_" + key, r.deliveriesPerTask(), 2));
    }
    line.append(kv("notify_deliveries_per_task_4", four.deliveriesPerTask(), 2));
    for (ScaleRun.Result r : results) {
      line.append(kv("listeners_" + r.config().key(), r.skipped() == null ? r.listeners() : Double.NaN, 1));
    }
    for (ScaleRun.Result r : results) {
      line.append(kv("tasks_per_claim_" + r.config().key(), r.skipped() == null ? r.tasksPerClaim() : Double.NaN, 2));
    }
    for (ScaleRun.Result r : results) {
      if (r != four) {
        line.append(kv("cpu_ratio_" + r.config().key(), r.serverMicrosPerTask() / four.serverMicrosPerTask(), 2));
        line.append(kv("xacts_ratio_" + r.config().key(), r.transactionsPerTask() / four.transactionsPerTask(), 2));
      }
    }
    boolean ok = results.stream().allMatch(r -> r.skipped() != null || r.check().ok(r.tasks()));
    line.append(" tasks=").append(four.skipped() == null ? four.tasks() : results.stream()
        .filter(r -> r.skipped() == null).mapToInt(ScaleRun.Result::tasks).findFirst().orElse(0));
    line.append(" every_task_once=").append(ok ? "yes" : "no");
    return line.toString();
  }

  private static ScaleRun.Result find(List<ScaleRun.Result> results, String key) {
    return results.stream().filter(r -> r.config().key().equals(key)).findFirst()
        .orElseThrow(() -> new IllegalStateException("no configuration " + key));
  }

  private static String kv(String key, double value, int decimals) {
    return " " + key + "=" + (Double.isNaN(value) ? "NaN" : String.format(Locale.ROOT, "%." + decimals + "f", value));
  }
}
