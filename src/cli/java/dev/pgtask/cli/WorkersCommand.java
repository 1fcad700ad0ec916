package dev.pgtask.cli;

import dev.pgtask.ops.LiveWorker;
import dev.pgtask.ops.PgTaskOperations;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code pgtask workers}: the live workers of {@code pgtask.workers} (seen in the last minute). */
@Command(name = "workers", mixinStandardHelpOptions = true,
    description = "Live workers (heartbeat in the last minute): id, host, pid, queues, kinds, concurrency.")
public final class WorkersCommand extends ReadCommand {

  @Option(names = "--json", description = "Print a JSON array of the pgtask.workers rows.")
  boolean json;

  public WorkersCommand() {
    super("pgtask workers");
  }

  @Override
  void print(OpsConnection db, PrintWriter out) {
    List<LiveWorker> workers = db.read(PgTaskOperations::workers);
    if (json) {
      Formats.printJson(out, g -> Formats.write(g, workers));
      return;
    }
    TextTable t = new TextTable("ID", "HOST", "PID", "VERSION", "QUEUES", "KINDS", "CONCURRENCY", "STARTED_AT",
        "LAST_SEEN_AGO", "LISTENING");
    for (LiveWorker w : workers) {
      t.row(w.id(), w.host(), w.pid(), w.version(), Formats.text(w.queues()), Formats.text(w.kinds()),
          w.concurrency(), Formats.text(w.startedAt()), Formats.text(w.lastSeenAgo()),
          w.listening() == null ? "unknown" : w.listening() ? "yes" : "no (polls)");
    }
    out.print(t.isEmpty() ? "no live workers (none with a heartbeat in the last minute)\n" : t.render());
  }
}
