package dev.pgtask.cli;

import dev.pgtask.cli.bench.Benchmark;
import dev.pgtask.cli.bench.ScaleBench;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code pgtask bench}: runs {@link Benchmark} against the connected database. */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = {"Measure pgtask against a raw-SQL floor on this database (takes minutes).",
        "It drops and recreates the pgtask_bench schema and empties pgtask.task: use a scratch database."})
public final class BenchCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--quick", description = "Shorter runs, for a first look.")
  boolean quick;

  @Option(names = "--only", split = ",", paramLabel = "KEY",
      description = "Run only these measurements (comma-separated): warmup, plain_floor, tx_floor, batched_floor, plain, "
          + "defaults, batched, enqueue, notify, idle, delayed, sustained, capped, dashboard; with --scale the configurations: "
          + "4, 64, 8x8, 64x1. Skipped figures print as NaN.")
  java.util.List<String> only = java.util.List.of();

  @Option(names = "--scale",
      description = "Measure only the server's cost per task at 4 and at 64 workers (1 process x 4, 1 x 64, 8 x 8, "
          + "64 x 1), through PgBouncer (docs/benchmarks.md, \"Scale\"). It empties pgtask.task and pgtask_demo.execution.")
  boolean scale;

  @Option(names = "--pgbouncer", paramLabel = "HOST:PORT",
      description = "With --scale: the PgBouncer (transaction mode, in front of --url's database) for the workers' pools. "
          + "Default: a PgBouncer of its own when pgbouncer is installed, else direct connections.")
  String pgbouncer;

  @Override
  public Integer call() throws Exception {
    for (String key : only) {
      if (!scale && !Benchmark.KEYS.contains(key)) {
        throw new CliException(ExitCodes.USAGE, "pgtask bench: unknown measurement '" + key + "' in --only; known: "
            + String.join(", ", Benchmark.KEYS));
      }
    }
    if (pgbouncer != null && !scale) {
      throw new CliException(ExitCodes.USAGE, "pgtask bench: --pgbouncer goes with --scale");
    }
    ConnectionSettings settings = connection.settings();
    settings.checkReachable("pgtask bench");
    if (scale) {
      ScaleBench bench;
      try {
        bench = new ScaleBench(settings.jdbcUrl(), settings.driverProperties(), quick, pgbouncer, java.util.Set.copyOf(only),
            System.out);
      } catch (IllegalArgumentException e) {
        throw new CliException(ExitCodes.USAGE, "pgtask bench: " + e.getMessage(), e);
      }
      bench.run();
      return ExitCodes.OK;
    }
    new Benchmark(settings.jdbcUrl(), settings.driverProperties(), quick, java.util.Set.copyOf(only), System.out).run();
    return ExitCodes.OK;
  }
}
