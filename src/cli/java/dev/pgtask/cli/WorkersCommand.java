package dev.pgtask.cli;

import dev.pgtask.ops.LiveWorker;
import dev.pgtask.ops.PgTaskOperations;
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
      List<LiveWorker> workers = db.read(PgTaskOperations::workers);
      if (json) {
        Formats.printJson(out, g -> Formats.write(g, workers));
        return ExitCodes.OK;
      }
      TextTable t = new TextTable("ID", "HOST", "PID", "VERSION", "QUEUES", "KINDS", "CONCURRENCY", "STARTED_AT",
          "LAST_SEEN_AGO");
      for (LiveWorker w : workers) {
        t.row(w.id(), w.host(), w.pid(), w.version(), Formats.text(w.queues()), Formats.text(w.kinds()),
            w.concurrency(), Formats.text(w.startedAt()), Formats.text(w.lastSeenAgo()));
      }
      out.print(t.isEmpty() ? "no live workers (none with a heartbeat in the last minute)\n" : t.render());
      out.flush();
    }
    return ExitCodes.OK;
  }
}
