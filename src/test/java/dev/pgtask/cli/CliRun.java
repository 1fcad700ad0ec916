package dev.pgtask.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs the CLI in this JVM and captures its exit code, stdout and stderr. */
record CliRun(int exitCode, String out, String err) {

  static CliRun of(String... args) {
    CommandLine cmd = Main.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cmd.setOut(new PrintWriter(out, true));
    cmd.setErr(new PrintWriter(err, true));
    int code = cmd.execute(args);
    return new CliRun(code, out.toString(), err.toString());
  }

  /** The lines printed on stderr. */
  String[] errLines() {
    return err.isEmpty() ? new String[0] : err.strip().split("\\R");
  }
}
