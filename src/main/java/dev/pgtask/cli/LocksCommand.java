package dev.pgtask.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgtask.internal.sql.OpsQueries;
import dev.pgtask.internal.sql.gen.tables.records.RunningRecord;
import dev.pgtask.internal.sql.gen.tables.records.TenantLocksRecord;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import org.jooq.Result;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pgtask locks}: {@code pgtask.tenant_locks}, and the running tasks that have a tenant ({@code pgtask.running}). */
@Command(name = "locks", mixinStandardHelpOptions = true,
    description = "Tenant locks held now (holder backend, since when, who waits), and the running tasks with a tenant.")
public final class LocksCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "Print JSON: {\"tenant_locks\": [...], \"running\": [...]}.")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask locks")) {
      Result<TenantLocksRecord> locks = db.run(OpsQueries::selectTenantLocks);
      Result<RunningRecord> running = db.run(dsl -> OpsQueries.selectRunning(dsl, true));
      if (json) {
        ObjectNode o = Formats.JSON.createObjectNode();
        o.set("tenant_locks", Formats.json(locks));
        o.set("running", Formats.json(running));
        Formats.printJson(out, o);
        return ExitCodes.OK;
      }
      out.println("tenant locks");
      out.print(locks.isEmpty() ? "  (none held)\n" : tenantLocks(locks).render());
      out.println();
      out.println("running tasks with a tenant");
      TextTable t = new TextTable("TASK_ID", "KIND", "QUEUE", "TENANT", "WORKER", "BACKEND_PID", "RUNNING_FOR",
          "HOLDS_TENANT_LOCK");
      for (RunningRecord r : running) {
        t.row(r.getTaskId(), r.getKind(), r.getQueue(), r.getTenant(), r.getWorker(), r.getBackendPid(),
            Formats.text(r.getRunningFor()), Formats.text(r.getHoldsTenantLock()));
      }
      out.print(t.isEmpty() ? "  (none)\n" : t.render());
      out.flush();
    }
    return ExitCodes.OK;
  }

  /** The tenant locks as a table (also used by the demo's snapshot). */
  static TextTable tenantLocks(Iterable<TenantLocksRecord> locks) {
    TextTable t = new TextTable("TENANT", "HOLDER_PID", "APPLICATION_NAME", "HELD_FOR", "WAITING_PIDS");
    for (TenantLocksRecord l : locks) {
      t.row(l.getTenant(), l.getHolderPid(), l.getApplicationName(), Formats.text(l.getHeldFor()),
          Formats.text(l.getWaitingPids()));
    }
    return t;
  }
}
