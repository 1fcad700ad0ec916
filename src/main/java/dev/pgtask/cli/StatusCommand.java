package dev.pgtask.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgtask.internal.sql.OpsQueries;
import dev.pgtask.internal.sql.gen.tables.records.HealthRecord;
import dev.pgtask.internal.sql.gen.tables.records.QueueSummaryRecord;
import dev.pgtask.internal.sql.gen.tables.records.UnrunnableRecord;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jooq.Result;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask status}: every queue's counts and lag ({@code pgtask.queue_summary}), {@code pgtask.health}
 * and the maintenance leader ({@code pgtask.maintenance_leader}).
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Queues (counts by state, tasks waiting for their tenant, lag) and what threatens the task table.")
public final class StatusCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "Print JSON: {\"queues\": [...], \"health\": {...}, \"unrunnable\": [...]}.")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask status")) {
      Result<QueueSummaryRecord> queues = db.run(OpsQueries::selectQueueSummary);
      HealthRecord health = db.run(OpsQueries::selectHealth);
      Result<UnrunnableRecord> unrunnable = db.run(OpsQueries::selectUnrunnable);
      var leader = db.run(OpsQueries::selectMaintenanceLeader);
      if (json) {
        ObjectNode o = Formats.JSON.createObjectNode();
        o.set("queues", Formats.json(queues));
        o.set("health", Formats.json(health));
        o.set("unrunnable", Formats.json(unrunnable));
        if (leader != null) {
          o.set("maintenance_leader", Formats.json(leader));
        }
        Formats.printJson(out, o);
        return ExitCodes.OK;
      }
      TextTable t = new TextTable("QUEUE", "SCHEDULED", "AVAILABLE", "RUNNING", "RETRYABLE", "COMPLETED", "CANCELLED",
          "DISCARDED", "WAITING_FOR_TENANT", "LAG");
      for (QueueSummaryRecord q : queues) {
        t.row(q.getQueue(), q.getScheduled(), q.getAvailable(), q.getRunning(), q.getRetryable(), q.getCompleted(),
            q.getCancelled(), q.getDiscarded(), q.getWaitingForTenant(), Formats.text(q.getLag()));
      }
      out.print(t.isEmpty() ? "no tasks in any queue\n" : t.render());
      out.println();
      out.print(health(health));
      out.println("  maintenance leader  " + leader(leader));
      if (!unrunnable.isEmpty()) {
        // what no live worker can run: shown only when there is some
        TextTable u = new TextTable("QUEUE", "KIND", "REASON", "TASKS", "OLDEST_DUE_FOR", "TENANTS", "WAITING_BEHIND");
        for (UnrunnableRecord r : unrunnable) {
          u.row(r.getQueue(), r.getKind(), r.getReason(), r.getTasks(), Formats.text(r.getOldestDueFor()), r.getTenants(),
              r.getWaitingBehind());
        }
        out.println();
        out.println("not runnable by any live worker (pgtask.unrunnable)");
        out.print(u.render());
      }
      out.flush();
    }
    return ExitCodes.OK;
  }

  static String health(HealthRecord h) {
    String oldest = h.getOldestXactPid() == null ? "none open"
        : "pid " + h.getOldestXactPid() + " (" + blankAsUnknown(h.getOldestXactApplication()) + "), open for "
            + Formats.text(h.getOldestXactAge());
    String table = h.getTaskLiveTuples() + " live, " + h.getTaskDeadTuples() + " dead tuples, "
        + Formats.bytes(h.getTaskTableBytes());
    String vacuum = "autovacuum " + (h.getTaskLastAutovacuum() == null ? "never" : Formats.text(h.getTaskLastAutovacuum()))
        + ", vacuum " + (h.getTaskLastVacuum() == null ? "never" : Formats.text(h.getTaskLastVacuum()));
    String notify = h.getNotificationQueueUsage() == null ? ""
        : String.format(Locale.ROOT, "%.1f%% used", h.getNotificationQueueUsage() * 100);
    long unserved = h.getUnservedTasks() == null ? 0 : h.getUnservedTasks();
    long unhandled = h.getUnhandledTasks() == null ? 0 : h.getUnhandledTasks();
    long stuck = h.getTenantsStuck() == null ? 0 : h.getTenantsStuck();
    String unrunnable = unserved + unhandled + stuck == 0 ? ""
        : "  not runnable        " + unserved + " due in queues no live worker serves, " + unhandled
            + " due of kinds no live worker of their queue handles, " + stuck + " tenant(s) waiting behind them\n";
    return "health\n"
        + "  oldest transaction  " + oldest + "\n"
        + "  task table          " + table + "\n"
        + "  last vacuum         " + vacuum + "\n"
        + "  notification queue  " + notify + "\n"
        + unrunnable;
  }

  /** The holder of a live maintenance lease, its term and last renewal; or that none holds one. */
  static String leader(dev.pgtask.internal.sql.gen.tables.records.MaintenanceLeaderRecord l) {
    if (l == null || !Boolean.TRUE.equals(l.getLive())) {
      return "none (no live lease: a worker takes it at its next heartbeat)";
    }
    return l.getWorker() + " (term " + l.getTerm() + ", renewed " + Formats.text(l.getRenewedAgo()) + " ago)";
  }

  private static String blankAsUnknown(String s) {
    return s == null || s.isEmpty() ? "no application_name" : s;
  }
}
