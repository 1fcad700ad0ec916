package dev.pgtask.cli;

import dev.pgtask.ops.Health;
import dev.pgtask.ops.LimitStatus;
import dev.pgtask.ops.MaintenanceLeader;
import dev.pgtask.ops.PausedQueueStatus;
import dev.pgtask.ops.PgTaskOperations;
import dev.pgtask.ops.QueueSummary;
import dev.pgtask.ops.TenantLoad;
import dev.pgtask.ops.Unrunnable;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code pgtask status}: every queue's counts and lag ({@code pgtask.queue_summary}), {@code pgtask.health},
 * the maintenance leader ({@code pgtask.maintenance_leader}), paused queues, the limits that hold tasks
 * back ({@code pgtask.limits}: full, or with waiting tasks) and the busiest tenants.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Queues (counts by state, tasks waiting for their tenant, lag) and what threatens the task table.")
public final class StatusCommand extends ReadCommand {

  @Option(names = "--json", description = "Print JSON: {\"queues\": [...], \"health\": {...}, \"unrunnable\": [...],"
      + " \"paused_queues\": [...], \"limits\": [...] (the limits that are full or have waiting tasks),"
      + " \"tenant_load\": [...]}.")
  boolean json;

  /** The busiest tenants shown (pgtask.tenant_load). */
  static final int TENANT_LOAD_ROWS = 5;

  public StatusCommand() {
    super("pgtask status");
  }

  @Override
  void print(OpsConnection db, PrintWriter out) {
    List<QueueSummary> queues = db.read(PgTaskOperations::queueSummary);
    Health health = db.read(PgTaskOperations::health);
    List<Unrunnable> unrunnable = db.read(PgTaskOperations::unrunnable);
    List<PausedQueueStatus> paused = db.read(PgTaskOperations::pausedQueues);
    List<LimitStatus> limits = busy(db.read(PgTaskOperations::limits));
    List<TenantLoad> load = db.read(ops -> ops.tenantLoad(TENANT_LOAD_ROWS));
    MaintenanceLeader leader = db.read(ops -> ops.maintenanceLeader().orElse(null));
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
        g.writeFieldName("limits");
        Formats.write(g, limits);
        g.writeFieldName("tenant_load");
        Formats.write(g, load);
        if (leader != null) {
          g.writeFieldName("maintenance_leader");
          Formats.write(g, leader);
        }
        g.writeEndObject();
      });
      return;
    }
    // RUNNING: the tasks executing now; CLAIMED_AHEAD: those a live worker holds for a free
    // executor (queue_summary's running counts both)
    TextTable t = new TextTable("QUEUE", "SCHEDULED", "AVAILABLE", "RUNNING", "CLAIMED_AHEAD", "RETRYABLE",
        "COMPLETED", "CANCELLED", "DISCARDED", "WAITING_FOR_TENANT", "PENDING", "LAG");
    for (QueueSummary q : queues) {
      t.row(q.queue(), q.scheduled(), q.available(), q.executing(), q.claimedAhead(), q.retryable(),
          q.completed(), q.cancelled(), q.discarded(), q.waitingForTenant(), q.pending(), Formats.text(q.lag()));
    }
    out.print(t.isEmpty() ? "no tasks in any queue\n" : t.render());
    if (!paused.isEmpty()) {
      // paused queues, with or without tasks: no worker claims from them
      TextTable p = new TextTable("PAUSED_QUEUE", "PAUSED_AT", "PAUSED_BY", "DUE", "QUEUED");
      for (PausedQueueStatus r : paused) {
        p.row(r.queue(), Formats.text(r.pausedAt()), r.pausedBy(), r.due(), r.queued());
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
      for (Unrunnable r : unrunnable) {
        u.row(r.queue(), r.kind(), r.reason(), r.tasks(), Formats.text(r.oldestDueFor()), r.tenants(),
            r.waitingBehind());
      }
      out.println();
      out.println("not runnable by any live worker (pgtask.unrunnable)");
      out.print(u.render());
    }
    if (!limits.isEmpty()) {
      // the limits holding tasks back now; every limit: pgtask limits
      TextTable l = new TextTable("SCOPE", "KEY", "MAX_RUNNING", "RUNNING", "SLOTS_HELD", "WAITING",
          "OLDEST_WAITING_SINCE", "STUCK");
      for (LimitStatus r : limits) {
        l.row(r.scope(), r.key(), r.maxRunning(), r.running(), r.slotsHeld(), r.waiting(),
            Formats.text(r.oldestWaitingSince()), r.stuck());
      }
      out.println();
      out.println("limits that are full or have waiting tasks (pgtask.limits; all of them: pgtask limits)");
      out.print(l.render());
    }
    if (!load.isEmpty()) {
      TextTable l = new TextTable("TENANT", "ARRIVALS/MIN", "COMPLETIONS/MIN", "MEAN_RUN_S", "P95_RUN_S", "UTILISATION",
          "BACKLOG", "TREND/MIN");
      for (TenantLoad r : load) {
        l.row(r.tenant(), r.arrivalsPerMin(), r.completionsPerMin(), r.meanRunS(), r.p95RunS(), r.utilisation(),
            r.backlog(), r.backlogTrendPerMin());
      }
      out.println();
      out.println("tenant load, last 15 minutes, busiest first (pgtask.tenant_load; utilisation >= 1: the backlog"
          + " can only grow)");
      out.print(l.render());
    }
  }

  static String health(Health h) {
    String oldest = h.oldestXactPid() == null ? "none open"
        : "pid " + h.oldestXactPid() + " (" + TerminalText.escape(blankAsUnknown(h.oldestXactApplication()))
            + "), open for " + Formats.text(h.oldestXactAge());
    String table = h.taskLiveTuples() + " live, " + h.taskDeadTuples() + " dead tuples, "
        + Formats.bytes(h.taskTableBytes());
    String vacuum = "autovacuum " + (h.taskLastAutovacuum() == null ? "never" : Formats.text(h.taskLastAutovacuum()))
        + ", vacuum " + (h.taskLastVacuum() == null ? "never" : Formats.text(h.taskLastVacuum()));
    String notify = String.format(Locale.ROOT, "%.1f%% used", h.notificationQueueUsage() * 100);
    long unserved = h.unservedTasks();
    long unhandled = h.unhandledTasks();
    long stuck = h.tenantsStuck();
    String unrunnable = unserved + unhandled + stuck == 0 ? ""
        : "  not runnable        " + unserved + " due in queues no live worker serves, " + unhandled
            + " due of kinds no live worker of their queue handles, " + stuck + " tenant(s) waiting behind them\n";
    String limits = h.limitsOver() + h.limitsStuck() == 0 ? ""
        : "  limits              " + h.limitsOver() + " over max_running (slots held above it: see pgtask.limits), "
            + h.limitsStuck() + " with running tasks past their lease (a dead worker's, until the rescue pass)\n";
    return "health\n"
        + "  oldest transaction  " + oldest + "\n"
        + "  task table          " + table + "\n"
        + "  last vacuum         " + vacuum + "\n"
        + "  notification queue  " + notify + "\n"
        + unrunnable
        + limits;
  }

  /**
   * The limits that hold tasks back now: full (running at or above max_running) or with waiting
   * tasks. A limit without max_running (a rate) is never full.
   */
  static List<LimitStatus> busy(List<LimitStatus> limits) {
    return limits.stream()
        .filter(l -> (l.maxRunning() > 0 && l.running() >= l.maxRunning()) || l.waiting() > 0)
        .toList();
  }

  /** The holder of a live maintenance lease, its term and last renewal; or that none holds one. */
  static String leader(MaintenanceLeader l) {
    if (l == null || !l.live()) {
      return "none (no live lease: a worker takes it at its next heartbeat)";
    }
    return TerminalText.escape(l.worker()) + " (term " + l.term() + ", renewed " + Formats.text(l.renewedAgo()) + " ago)";
  }

  private static String blankAsUnknown(String s) {
    return s == null || s.isEmpty() ? "no application_name" : s;
  }
}
