package dev.pgtask.dashboard;

import dev.pgtask.ops.RunningTask;
import dev.pgtask.ops.TenantLock;
import java.util.List;
import java.util.Map;

/**
 * {@code /running}: each running task with its worker, backend pid, age, whether it holds its
 * tenant's lock, and whether it executes or is only claimed ahead (or its worker is gone); the
 * tenant locks held now with their waiters.
 */
final class RunningPage {

  private RunningPage() {}

  static String render(PageContext ctx) {
    List<RunningTask> running = ctx.ops.running();
    List<TenantLock> locks = ctx.ops.tenantLocks();
    Html h = new Html();
    long executing = running.stream().filter(r -> r.backendPid() != null || !r.claimedAhead()).count();
    long ahead = running.stream().filter(RunningTask::claimedAhead).count();
    h.el("p", running.size() + " running: " + (running.size() - ahead) + " executing (or lost with their worker), "
        + ahead + " claimed ahead and waiting in their worker for an executor", "id", "running-summary");
    h.open("table", "id", "running").header("task", "kind", "queue", "tenant", "worker", "backend pid", "running for",
        "tenant lock", "status", "cancel requested", "").raw("<tbody>");
    for (RunningTask r : running) {
      String status = r.backendPid() != null ? "executing" : r.claimedAhead() ? "claimed ahead"
          : "no backend: plain mode, or its worker is gone";
      h.raw("<tr><td>").el("a", r.taskId(), "href", ctx.url("/tasks/" + r.taskId())).raw("</td>")
          .el("td", r.kind()).el("td", r.queue()).el("td", r.tenant()).el("td", r.worker()).el("td", r.backendPid())
          .el("td", r.runningFor()).el("td", r.holdsTenantLock() == null ? null : r.holdsTenantLock() ? "held" : "not held")
          .el("td", status).el("td", r.cancelRequestedAt()).raw("<td>");
      ctx.actionForm(h, DashboardAction.CANCEL_TASK, "/tasks/" + r.taskId() + "/cancel", "Cancel", Map.of());
      h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    h.el("h2", "Tenant locks held").open("table", "id", "locks")
        .header("tenant", "holder pid", "application", "held for", "waiting pids").raw("<tbody>");
    for (TenantLock l : locks) {
      h.row(l.tenant(), l.holderPid(), l.applicationName(), l.heldFor(), l.waitingPids());
    }
    h.raw("</tbody></table>");
    return Layout.page(ctx, "Running", h);
  }
}
