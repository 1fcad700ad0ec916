package dev.pgtask.dashboard;

import dev.pgtask.TaskState;
import dev.pgtask.ops.TaskSummary;
import java.util.List;

/**
 * {@code /tasks}: tasks newest first by filters, one keyset page at a time ({@code before}: the page
 * of tasks below that id). No count of the matches: a count of a filter over millions of tasks is
 * what a page must not run; the table's size is shown as the statistics' estimate.
 */
final class TasksPage {

  private TasksPage() {}

  static String render(PageContext ctx) {
    Filters f = Filters.of(ctx.request.query());
    Long before = id(ctx.request.query().get("before"));
    List<TaskSummary> tasks = ctx.ops.tasks(f.filter(), before, ctx.pageSize);
    Html h = new Html();
    filterForm(ctx, h, f);
    if (!f.isEmpty()) {
      h.raw("<p id=\"bulk-links\">");
      bulkLink(ctx, h, f, "retry", DashboardAction.BULK_RETRY);
      bulkLink(ctx, h, f, "cancel", DashboardAction.BULK_CANCEL);
      bulkLink(ctx, h, f, "delete", DashboardAction.BULK_DELETE);
      h.raw("</p>");
    }
    h.open("table", "id", "tasks").header("id", "kind", "queue", "tenant", "state", "attempt", "priority",
        "run at", "created", "finished", "last error").raw("<tbody>");
    for (TaskSummary t : tasks) {
      h.open("tr", "data-id", String.valueOf(t.id())).raw("<td>")
          .el("a", t.id(), "href", ctx.url("/tasks/" + t.id()), "class", "task-link").raw("</td>")
          .el("td", t.kind()).el("td", t.queue()).el("td", t.tenant()).el("td", t.state(), "class",
              "discarded".equals(t.state()) ? "bad" : null)
          .el("td", t.attempt() + "/" + t.maxAttempts()).el("td", t.priority()).el("td", t.runAt())
          .el("td", t.createdAt()).el("td", t.finishedAt()).el("td", TaskPage.firstLine(t.lastError()))
          .close("tr");
    }
    h.raw("</tbody></table><p class=\"pager\">");
    if (before != null) {
      h.el("a", "\u2190 newest", "href", ctx.url("/tasks", f.params()), "id", "newest");
    }
    if (tasks.size() == ctx.pageSize) {
      h.el("a", "older \u2192", "href", ctx.url("/tasks", f.params("before",
          String.valueOf(tasks.get(tasks.size() - 1).id()))), "id", "older");
    } else {
      h.el("span", tasks.isEmpty() ? "no task matches" : "last page", "class", "muted", "id", "end");
    }
    h.raw("</p>");
    return Layout.page(ctx, "Tasks", h);
  }

  private static void filterForm(PageContext ctx, Html h, Filters f) {
    h.open("form", "method", "get", "action", ctx.url("/tasks"), "class", "filters", "id", "filters");
    input(h, "queue", "Queue", f.queue());
    input(h, "kind", "Kind", f.kind());
    h.raw("<label>State").open("select", "name", "state").el("option", "any", "value", "");
    for (TaskState s : TaskState.values()) {
      h.open("option", "value", s.sqlName(), "selected", s == f.state() ? "selected" : null).text(s.sqlName())
          .close("option");
    }
    h.raw("</select></label>");
    input(h, "tenant", "Tenant", f.tenant());
    input(h, "error", "Error contains", f.error());
    input(h, "since", "Active within (30m, 1h, 7d)", f.since());
    dateTime(h, "from", "Active from (UTC)", f.fromText());
    dateTime(h, "until", "Active until (UTC, exclusive)", f.untilText());
    if (f.errorLike() != null) {
      h.open("input", "type", "hidden", "name", "error_like", "value", f.errorLike());
    }
    h.raw("<button type=\"submit\">Filter</button>").el("a", "clear", "href", ctx.url("/tasks")).close("form");
  }

  private static void input(Html h, String name, String label, String value) {
    h.raw("<label>").text(label).open("input", "name", name, "value", value == null ? "" : value).raw("</label>");
  }

  /** A {@code datetime-local} input (to the second) for {@code from} or {@code until}, in UTC. */
  static void dateTime(Html h, String name, String label, String value) {
    h.raw("<label>").text(label).open("input", "type", "datetime-local", "step", "1", "name", name, "value",
        value == null ? "" : value).raw("</label>");
  }

  private static void bulkLink(PageContext ctx, Html h, Filters f, String action, DashboardAction a) {
    if (ctx.allows(a)) {
      h.el("a", "Bulk " + action + " of every matching task\u2026", "href", ctx.url("/bulk", f.params("action", action)),
          "id", "bulk-" + action).raw(" ");
    }
  }

  static Long id(String s) {
    if (s == null || s.isBlank()) {
      return null;
    }
    try {
      return Long.parseLong(s.strip());
    } catch (NumberFormatException e) {
      throw new BadRequest("not a task id: \"" + s + "\"");
    }
  }
}
