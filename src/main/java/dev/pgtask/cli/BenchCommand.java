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

  @Override
  public Integer call() throws Exception {
    ConnectionSettings settings = connection.settings();
    settings.checkReachable("pgtask bench");
    new Benchmark(settings.jdbcUrl(), settings.driverProperties(), quick, System.out).run();
    return ExitCodes.OK;
  }
}
