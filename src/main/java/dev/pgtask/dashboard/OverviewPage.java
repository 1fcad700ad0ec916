package dev.pgtask.dashboard;

import dev.pgtask.ops.Health;
import dev.pgtask.ops.MaintenanceLeader;
import dev.pgtask.ops.QueueDepth;
import dev.pgtask.ops.ThroughputMinute;
import dev.pgtask.ops.Unrunnable;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** {@code /}: queue depth and lag, throughput over the last hour, health, what no live worker can run. */
final class OverviewPage {

  static final int CHART_MINUTES = 60;

  private OverviewPage() {}

  static String render(PageContext ctx) {
    List<QueueDepth> queues = ctx.ops.queueDepth();
    Health health = ctx.ops.health();
    Optional<MaintenanceLeader> leader = ctx.ops.maintenanceLeader();
    List<ThroughputMinute> throughput = ctx.ops.throughput(CHART_MINUTES);
    List<Unrunnable> unrunnable = ctx.ops.unrunnable();
    List<dev.pgtask.ops.LiveWorker> workers = ctx.ops.workers();
    Html h = new Html();

    // unfinished tasks only, from their indexes (pgtask.queue_depth): finished ones are in the chart below
    h.el("h2", "Queues").open("table", "id", "queues").header("queue", "available", "scheduled", "running",
        "claimed ahead", "retryable", "waiting (tenant)", "pending (parents)", "lag", "", "");
    h.raw("<tbody>");
    for (QueueDepth q : queues) {
      h.raw("<tr>").raw("<td>").el("a", q.queue(), "href", ctx.url("/tasks", "queue", q.queue())).raw("</td>");
      for (long n : new long[] {q.available(), q.scheduled(), q.running(), q.claimedAhead(), q.retryable(),
          q.waitingForTenant(), q.pending()}) {
        h.el("td", n, "class", "num");
      }
      h.el("td", q.lag()).el("td", q.paused() ? "paused" : "", "class", q.paused() ? "bad" : null).raw("<td>");
      String path = "/queues/" + PageContext.segment(q.queue());
      if (q.paused()) {
        ctx.actionForm(h, DashboardAction.RESUME_QUEUE, path + "/resume", "Resume", Map.of());
      } else {
        ctx.actionForm(h, DashboardAction.PAUSE_QUEUE, path + "/pause", "Pause", Map.of());
      }
      h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");

    h.el("h2", "Finished tasks per minute, last hour");
    Chart.throughput(h, throughput, now(throughput, health), CHART_MINUTES);
    long completed = throughput.stream().mapToLong(ThroughputMinute::completed).sum();
    long discarded = throughput.stream().mapToLong(ThroughputMinute::discarded).sum();
    h.el("p", completed + " completed and " + discarded + " discarded in the last hour (blue: completed, red: "
        + "discarded; tasks that retention removed are not counted)", "class", "muted");

    h.el("h2", "Health").raw("<div class=\"cards\" id=\"health\">");
    card(h, "maintenance leader", leader.map(l -> l.worker() + (l.live() ? "" : " (lease ran out)")).orElse("none yet"),
        leader.map(l -> !l.live()).orElse(true));
    long polling = workers.stream().filter(w -> Boolean.FALSE.equals(w.listening())).count();
    card(h, "listeners", workers.isEmpty() ? "no live workers"
        : (workers.size() - polling) + " of " + workers.size() + " workers listening"
            + (polling > 0 ? " (" + polling + " polling: wake-ups wait for their poll)" : ""), polling > 0);
    card(h, "oldest transaction", health.oldestXactAge() == null ? "none open"
        : Html.duration(health.oldestXactAge()) + " (pid " + health.oldestXactPid() + ", "
            + health.oldestXactApplication() + ")", health.oldestXactAge() != null
            && health.oldestXactAge().toMinutes() >= 5);
    card(h, "task table rows (estimate)", health.taskLiveTuples() == null ? "not counted yet"
        : "\u2248 " + health.taskLiveTuples() + " live, " + health.taskDeadTuples() + " dead", false);
    card(h, "task table size", health.taskTableBytes() / 1024 + " KiB", false);
    card(h, "due tasks no live worker serves", String.valueOf(health.unservedTasks()), health.unservedTasks() > 0);
    card(h, "due tasks no live worker handles", String.valueOf(health.unhandledTasks()), health.unhandledTasks() > 0);
    card(h, "tenants stuck behind them", String.valueOf(health.tenantsStuck()), health.tenantsStuck() > 0);
    card(h, "due tasks in paused queues", String.valueOf(health.pausedTasks()), false);
    card(h, "notification queue usage", String.format(java.util.Locale.ROOT, "%.1f %%",
        health.notificationQueueUsage() * 100), health.notificationQueueUsage() > 0.5);
    card(h, "limits over / stuck", health.limitsOver() + " / " + health.limitsStuck(),
        health.limitsOver() + health.limitsStuck() > 0);
    h.raw("</div>");

    if (!unrunnable.isEmpty()) {
      h.el("h2", "What no live worker can run").open("table", "id", "unrunnable")
          .header("queue", "kind", "reason", "tasks", "oldest due for", "tenants", "waiting behind").raw("<tbody>");
      for (Unrunnable u : unrunnable) {
        h.row(u.queue(), u.kind(), u.reason(), u.tasks(), u.oldestDueFor(), u.tenants(), u.waitingBehind());
      }
      h.raw("</tbody></table>");
    }
    return Layout.page(ctx, "Overview", h);
  }

  private static void card(Html h, String label, String value, boolean bad) {
    h.open("div", "class", "card").el("span", label, "class", "muted").el("b", value, "class", bad ? "bad" : null)
        .close("div");
  }

  /** The chart's last minute: the newest throughput row's clock, else this process's (only for placing bars). */
  private static Instant now(List<ThroughputMinute> rows, Health health) {
    Instant n = Instant.now();
    return rows.isEmpty() || rows.get(rows.size() - 1).minute().isBefore(n) ? n : rows.get(rows.size() - 1).minute();
  }
}
