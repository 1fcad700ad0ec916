package dev.pgtask.cli;

import dev.pgtask.internal.sql.ViewReads;
import dev.pgtask.internal.sql.ViewRow;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask status}: every queue's counts and lag ({@code pgtask.queue_summary}), {@code pgtask.health},
 * the maintenance leader ({@code pgtask.maintenance_leader}), paused queues and the busiest tenants.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Queues (counts by state, tasks waiting for their tenant, lag) and what threatens the task table.")
public final class StatusCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "Print JSON: {\"queues\": [...], \"health\": {...}, \"unrunnable\": [...],"
      + " \"paused_queues\": [...], \"tenant_load\": [...]}.")
  boolean json;

  /** The busiest tenants shown (pgtask.tenant_load). */
  static final int TENANT_LOAD_ROWS = 5;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    return call(spec.commandLine().getOut());
  }

  /** Runs the command, printing on {@code out} (also {@link ReadCommandLine}'s entry). */
  int call(PrintWriter out) {
    try (OpsConnection db = OpsConnection.open(connection, "pgtask status")) {
      List<ViewRow> queues = db.read(ViewReads::queueSummary);
      ViewRow health = db.read(ViewReads::health);
      List<ViewRow> unrunnable = db.read(ViewReads::unrunnable);
      List<ViewRow> paused = db.read(ViewReads::pausedQueues);
      List<ViewRow> load = db.read(c -> ViewReads.tenantLoad(c, TENANT_LOAD_ROWS));
      ViewRow leader = db.read(ViewReads::maintenanceLeader);
      if (json) {
        Formats.printJson(out, g -> {
          g.writeStartObject();
          g.writeFieldName("queues");
          Formats.write(g, queues);
          g.writeFieldName("health");
          Formats.write(g, health);
          g.writeFieldName("unrunnable");
          Formats.write(g, unrunnable);
          g.writeFieldName("paused_queues");
          Formats.write(g, paused);
          g.writeFieldName("tenant_load");
          Formats.write(g, load);
          if (leader != null) {
            g.writeFieldName("maintenance_leader");
            Formats.write(g, leader);
          }
          g.writeEndObject();
        });
        return ExitCodes.OK;
      }
      // RUNNING: the tasks executing now; CLAIMED_AHEAD: those a live worker holds for a free
      // executor (queue_summary's running counts both)
      TextTable t = new TextTable("QUEUE", "SCHEDULED", "AVAILABLE", "RUNNING", "CLAIMED_AHEAD", "RETRYABLE",
          "COMPLETED", "CANCELLED", "DISCARDED", "WAITING_FOR_TENANT", "LAG");
      for (ViewRow q : queues) {
        long running = q.get("running", Long.class);
        long ahead = q.get("claimed_ahead", Long.class);
        t.row(q.get("queue"), q.get("scheduled"), q.get("available"), running - ahead, ahead, q.get("retryable"),
            q.get("completed"), q.get("cancelled"), q.get("discarded"), q.get("waiting_for_tenant"),
            Formats.text(q.get("lag")));
      }
      out.print(t.isEmpty() ? "no tasks in any queue\n" : t.render());
      if (!paused.isEmpty()) {
        // paused queues, with or without tasks: no worker claims from them
        TextTable p = new TextTable("PAUSED_QUEUE", "PAUSED_AT", "PAUSED_BY", "DUE", "QUEUED");
        for (ViewRow r : paused) {
          p.row(r.get("queue"), Formats.text(r.get("paused_at")), r.get("paused_by"), r.get("due"), r.get("queued"));
        }
        out.println();
        out.println("paused queues: no worker claims their tasks (pgtask resume QUEUE)");
        out.print(p.render());
      }
      out.println();
      out.print(health(health));
      out.println("  maintenance leader  " + leader(leader));
      if (!unrunnable.isEmpty()) {
        // what no live worker can run: shown only when there is some
        TextTable u = new TextTable("QUEUE", "KIND", "REASON", "TASKS", "OLDEST_DUE_FOR", "TENANTS", "WAITING_BEHIND");
        for (ViewRow r : unrunnable) {
          u.row(r.get("queue"), r.get("kind"), r.get("reason"), r.get("tasks"), Formats.text(r.get("oldest_due_for")),
              r.get("tenants"), r.get("waiting_behind"));
        }
        out.println();
        out.println("not runnable by any live worker (pgtask.unrunnable)");
        out.print(u.render());
      }
      if (!load.isEmpty()) {
        TextTable l = new TextTable("TENANT", "ARRIVALS/MIN", "COMPLETIONS/MIN", "MEAN_RUN_S", "P95_RUN_S", "UTILISATION",
            "BACKLOG", "TREND/MIN");
        for (ViewRow r : load) {
          l.row(r.get("tenant"), r.get("arrivals_per_min"), r.get("completions_per_min"), r.get("mean_run_s"),
              r.get("p95_run_s"), r.get("utilisation"), r.get("backlog"), r.get("backlog_trend_per_min"));
        }
        out.println();
        out.println("tenant load, last 15 minutes, busiest first (pgtask.tenant_load; utilisation >= 1: the backlog"
            + " can only grow)");
        out.print(l.render());
      }
      out.flush();
    }
    return ExitCodes.OK;
  }

  static String health(ViewRow h) {
    String oldest = h.get("oldest_xact_pid") == null ? "none open"
        : "pid " + h.get("oldest_xact_pid") + " (" + TerminalText.escape(blankAsUnknown(h.get("oldest_xact_application", String.class)))
            + "), open for " + Formats.text(h.get("oldest_xact_age"));
    String table = h.get("task_live_tuples") + " live, " + h.get("task_dead_tuples") + " dead tuples, "
        + Formats.bytes(h.get("task_table_bytes", Long.class));
    String vacuum = "autovacuum " + (h.get("task_last_autovacuum") == null ? "never" : Formats.text(h.get("task_last_autovacuum")))
        + ", vacuum " + (h.get("task_last_vacuum") == null ? "never" : Formats.text(h.get("task_last_vacuum")));
    Double usage = h.get("notification_queue_usage", Double.class);
    String notify = usage == null ? "" : String.format(Locale.ROOT, "%.1f%% used", usage * 100);
    long unserved = count(h, "unserved_tasks");
    long unhandled = count(h, "unhandled_tasks");
    long stuck = count(h, "tenants_stuck");
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
  static String leader(ViewRow l) {
    if (l == null || !Boolean.TRUE.equals(l.get("live"))) {
      return "none (no live lease: a worker takes it at its next heartbeat)";
    }
    return TerminalText.escape(l.get("worker")) + " (term " + l.get("term") + ", renewed " + Formats.text(l.get("renewed_ago")) + " ago)";
  }

  private static long count(ViewRow h, String column) {
    Long n = h.get(column, Long.class);
    return n == null ? 0 : n;
  }

  private static String blankAsUnknown(String s) {
    return s == null || s.isEmpty() ? "no application_name" : s;
  }
}
