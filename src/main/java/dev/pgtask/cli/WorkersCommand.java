package dev.pgtask.cli;

import dev.pgtask.internal.sql.OpsQueries;
import dev.pgtask.internal.sql.gen.tables.records.WorkersRecord;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import org.jooq.Result;
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
    PrintWriter out = spec.commandLine().getOut();
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask workers")) {
      Result<WorkersRecord> workers = db.run(OpsQueries::selectWorkers);
      if (json) {
        Formats.printJson(out, Formats.json(workers));
        return ExitCodes.OK;
      }
      TextTable t = new TextTable("ID", "HOST", "PID", "VERSION", "QUEUES", "KINDS", "CONCURRENCY", "STARTED_AT",
          "LAST_SEEN_AGO");
      for (WorkersRecord w : workers) {
        t.row(w.getId(), w.getHost(), w.getPid(), w.getVersion(), Formats.text(w.getQueues()),
            Formats.text(w.getKinds()), w.getConcurrency(), Formats.text(w.getStartedAt()),
            Formats.text(w.getLastSeenAgo()));
      }
      out.print(t.isEmpty() ? "no live workers (none with a heartbeat in the last minute)\n" : t.render());
      out.flush();
    }
    return ExitCodes.OK;
  }
}
