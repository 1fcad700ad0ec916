package dev.pgtask.cli;

import dev.pgtask.cli.bench.Benchmark;
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
          + "defaults, batched, enqueue, notify, idle, delayed, sustained, capped. Skipped figures print as NaN.")
  java.util.List<String> only = java.util.List.of();

  @Override
  public Integer call() throws Exception {
    for (String key : only) {
      if (!Benchmark.KEYS.contains(key)) {
        throw new CliException(ExitCodes.USAGE, "pgtask bench: unknown measurement '" + key + "' in --only; known: "
            + String.join(", ", Benchmark.KEYS));
      }
    }
    ConnectionSettings settings = connection.settings();
    settings.checkReachable("pgtask bench");
    new Benchmark(settings.jdbcUrl(), settings.driverProperties(), quick, java.util.Set.copyOf(only), System.out).run();
    return ExitCodes.OK;
  }
}
