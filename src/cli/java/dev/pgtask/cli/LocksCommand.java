package dev.pgtask.cli;

import dev.pgtask.ops.PgTaskOperations;
import dev.pgtask.ops.RunningTask;
import dev.pgtask.ops.TenantLock;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code pgtask locks}: {@code pgtask.tenant_locks}, and the running tasks that have a tenant ({@code pgtask.running}). */
@Command(name = "locks", mixinStandardHelpOptions = true,
    description = "Tenant locks held now (holder backend, since when, who waits), and the running tasks with a tenant.")
public final class LocksCommand extends ReadCommand {

  @Option(names = "--json", description = "Print JSON: {\"tenant_locks\": [...], \"running\": [...]}.")
  boolean json;

  public LocksCommand() {
    super("pgtask locks");
  }

  @Override
  void print(OpsConnection db, PrintWriter out) {
    List<TenantLock> locks = db.read(PgTaskOperations::tenantLocks);
    List<RunningTask> running = db.read(PgTaskOperations::runningWithTenant);
    if (json) {
      Formats.printJson(out, g -> {
        g.writeStartObject();
        g.writeFieldName("tenant_locks");
        Formats.write(g, locks);
        g.writeFieldName("running");
        Formats.write(g, running);
        g.writeEndObject();
      });
      return;
    }
    out.println("tenant locks");
    out.print(locks.isEmpty() ? "  (none held)\n" : tenantLocks(locks).render());
    out.println();
    out.println("running tasks with a tenant");
    // CLAIMED_AHEAD yes: no backend because the task waits in its live worker for an executor;
    // no backend and no: its worker is gone (pgtask.running.claimed_ahead)
    TextTable t = new TextTable("TASK_ID", "KIND", "QUEUE", "TENANT", "WORKER", "BACKEND_PID", "RUNNING_FOR",
        "HOLDS_TENANT_LOCK", "CLAIMED_AHEAD");
    for (RunningTask r : running) {
      t.row(r.taskId(), r.kind(), r.queue(), r.tenant(), r.worker(), r.backendPid(), Formats.text(r.runningFor()),
          Formats.text(r.holdsTenantLock()), Formats.text(r.claimedAhead()));
    }
    out.print(t.isEmpty() ? "  (none)\n" : t.render());
  }

  /** The tenant locks as a table (also used by the demo's snapshot). */
  static TextTable tenantLocks(List<TenantLock> locks) {
    TextTable t = new TextTable("TENANT", "HOLDER_PID", "APPLICATION_NAME", "HELD_FOR", "WAITING_PIDS");
    for (TenantLock l : locks) {
      t.row(l.tenant(), l.holderPid(), l.applicationName(), Formats.text(l.heldFor()), Formats.text(l.waitingPids()));
    }
    return t;
  }
}
