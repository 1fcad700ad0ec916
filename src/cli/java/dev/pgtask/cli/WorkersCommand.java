package dev.pgtask.cli;

import dev.pgtask.internal.sql.ViewReads;
import dev.pgtask.internal.sql.ViewRow;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pgtask workers}: the live workers of {@code pgtask.workers} (seen in the last minute). */
@Command(name = "workers", mixinStandardHelpOptions = true,
    description = "Live workers (heartbeat in the last minute): id, host, pid, queues, kinds, concurrency.")
public final class WorkersCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "Print a JSON array of the pgtask.workers rows.")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    return call(spec.commandLine().getOut());
  }

  /** Runs the command, printing on {@code out} (also {@link ReadCommandLine}'s entry). */
  int call(PrintWriter out) {
    try (OpsConnection db = OpsConnection.open(connection, "pgtask workers")) {
      List<ViewRow> workers = db.read(ViewReads::workers);
      if (json) {
        Formats.printJson(out, g -> Formats.write(g, workers));
        return ExitCodes.OK;
      }
      TextTable t = new TextTable("ID", "HOST", "PID", "VERSION", "QUEUES", "KINDS", "CONCURRENCY", "STARTED_AT",
          "LAST_SEEN_AGO");
      for (ViewRow w : workers) {
        t.row(w.get("id"), w.get("host"), w.get("pid"), w.get("version"), Formats.text(w.get("queues")),
            Formats.text(w.get("kinds")), w.get("concurrency"), Formats.text(w.get("started_at")),
            Formats.text(w.get("last_seen_ago")));
      }
      out.print(t.isEmpty() ? "no live workers (none with a heartbeat in the last minute)\n" : t.render());
      out.flush();
    }
    return ExitCodes.OK;
  }
}
