package dev.pgtask.dashboard;

import dev.pgtask.ops.TaskAttempt;
import dev.pgtask.ops.TaskDetail;
import dev.pgtask.ops.TenantLock;
import java.util.List;
import java.util.Map;

/**
 * {@code /tasks/ID}: one task ({@code pgtask.task_detail}): its fields, payload, every recorded
 * attempt with its full error and stack trace, why it is or is not running, its tenant (the tenant's
 * lock holder and waiters, the tenant's other tasks) and its actions.
 */
final class TaskPage {

  private TaskPage() {}

  static DashboardResponse render(PageContext ctx, long id) {
    var found = ctx.ops.find(id);
    if (found.isEmpty()) {
      return Dashboard.page(404, ctx, Layout.problem(ctx, "Task " + id, "No task " + id
          + ": never enqueued, deleted, or removed by retention."));
    }
    TaskDetail t = found.get();
    Html h = new Html();
    h.open("table", "id", "fields").raw("<tbody>");
    field(h, "kind", t.kind());
    field(h, "queue", t.queue());
    h.raw("<tr><th>tenant</th><td>");
    if (t.tenant() != null) {
      h.el("a", t.tenant(), "href", ctx.url("/tasks", "tenant", t.tenant()), "id", "tenant-link");
    } else {
      h.text(null);
    }
    h.raw("</td></tr>");
    field(h, "state", t.state());
    field(h, "attempt", t.attempt() + " of " + t.maxAttempts());
    field(h, "priority", t.priority());
    field(h, "run at", t.runAt());
    field(h, "created", t.createdAt());
    field(h, "finished", t.finishedAt());
    field(h, "worker", t.worker());
    field(h, "last error", t.lastError());
    h.raw("</tbody></table>");

    h.el("h2", "Why").el("p", t.explanation(), "id", "explanation");
    h.raw("<div id=\"actions\">");
    String path = "/tasks/" + t.id();
    ctx.actionForm(h, DashboardAction.RETRY_TASK, path + "/retry", "Retry", Map.of());
    ctx.actionForm(h, DashboardAction.CANCEL_TASK, path + "/cancel", "Cancel", Map.of());
    ctx.actionForm(h, DashboardAction.DELETE_TASK, path + "/delete", "Delete", Map.of());
    h.raw("</div>");

    h.el("h2", "Payload").el("pre", t.payload(), "id", "payload");

    h.el("h2", "Attempts (" + t.attempts().size() + " recorded)");
    if (t.attempts().isEmpty()) {
      h.el("p", "No failed, cancelled or lost attempt recorded.", "class", "muted");
    }
    for (TaskAttempt a : t.attempts()) {
      h.open("div", "class", "attempt", "id", "attempt-" + a.attempt())
          .el("h3", "Attempt " + a.attempt() + ": " + a.outcome())
          .el("p", "worker " + (a.worker() == null ? "\u2013" : a.worker()) + ", started "
              + (a.startedAt() == null ? "\u2013" : Html.format(a.startedAt())) + ", ended "
              + Html.format(a.finishedAt()), "class", "muted")
          .el("pre", a.errorDetail() != null ? a.errorDetail() : a.error(), "class", "error")
          .close("div");
    }

    if (t.tenant() != null) {
      h.el("h2", "Tenant " + t.tenant());
      List<TenantLock> locks = ctx.ops.tenantLocks().stream().filter(l -> t.tenant().equals(l.tenant())).toList();
      if (locks.isEmpty()) {
        h.el("p", "No transaction holds this tenant's lock now.", "class", "muted", "id", "tenant-chain");
      }
      for (TenantLock l : locks) {
        h.el("p", "Lock held by pid " + l.holderPid() + " (" + l.applicationName() + ") for "
            + Html.duration(l.heldFor()) + "; waiting: " + (l.waitingPids().isEmpty() ? "nobody" : l.waitingPids()),
            "id", "tenant-chain");
      }
      h.el("a", "The tenant's tasks in queue " + t.queue(), "href",
          ctx.url("/tasks", "tenant", t.tenant(), "queue", t.queue()));
    }
    return Dashboard.page(200, ctx, Layout.page(ctx, "Task " + t.id(), h));
  }

  private static void field(Html h, String name, Object value) {
    h.raw("<tr>").el("th", name).el("td", value).raw("</tr>");
  }

  /** The first line of an error, for lists. */
  static String firstLine(String s) {
    if (s == null) {
      return null;
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
