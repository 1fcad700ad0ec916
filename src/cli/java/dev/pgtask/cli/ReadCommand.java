package dev.pgtask.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The frame of the read commands ({@code status}, {@code locks}, {@code workers}, {@code tasks},
 * {@code schedules}): the {@code --url} option, one {@link OpsConnection} named for the command,
 * open while the command reads and prints, and the output, picocli's or the one
 * {@link ReadCommandLine} gives. A command only reads through the connection and prints.
 */
abstract class ReadCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Spec
  CommandSpec spec;

  private final String applicationName;

  /** {@code applicationName}: the connection's {@code application_name}, e.g. {@code "pgtask status"}. */
  ReadCommand(String applicationName) {
    this.applicationName = applicationName;
  }

  @Override
  public Integer call() {
    return call(spec.commandLine().getOut());
  }

  /** Runs the command, printing on {@code out} (also {@link ReadCommandLine}'s entry). */
  int call(PrintWriter out) {
    try (OpsConnection db = OpsConnection.open(connection, applicationName)) {
      print(db, out);
      out.flush();
    }
    return ExitCodes.OK;
  }

  /** Reads through {@code db} and prints on {@code out}: JSON when {@code --json} is given, else text. */
  abstract void print(OpsConnection db, PrintWriter out);
}
