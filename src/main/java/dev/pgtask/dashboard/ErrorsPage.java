package dev.pgtask.dashboard;

import dev.pgtask.ops.ErrorGroup;
import java.util.List;

/**
 * {@code /errors}: the retryable and discarded tasks grouped by kind and the first line of their last
 * error ({@code pgtask.error_groups}), each group linked to its tasks and to a bulk retry of the
 * group (a dry run first).
 */
final class ErrorsPage {

  static final int LIMIT = 200;

  private ErrorsPage() {}

  static String render(PageContext ctx) {
    Filters f = Filters.of(ctx.request.query());
    List<ErrorGroup> groups = ctx.ops.errorGroups(f.sinceDuration(), f.from(), f.until(), LIMIT);
    Html h = new Html();
    h.open("form", "method", "get", "action", ctx.url("/errors"), "class", "filters", "id", "error-filters")
        .raw("<label>Active within (30m, 1h, 7d)").open("input", "name", "since", "value", f.since() == null ? "" : f.since())
        .raw("</label>");
    TasksPage.dateTime(h, "from", "Active from (UTC)", f.fromText());
    TasksPage.dateTime(h, "until", "Active until (UTC, exclusive)", f.untilText());
    h.raw("<button type=\"submit\">Show</button></form>");
    h.open("table", "id", "errors").header("kind", "error (first line)", "tasks", "retryable", "discarded",
        "first seen", "last seen", "").raw("<tbody>");
    for (ErrorGroup g : groups) {
      String like = Filters.escapeLike(g.error()) + "%";
      h.raw("<tr>").el("td", g.kind()).el("td", g.error()).raw("<td class=\"num\">")
          .el("a", g.tasks(), "href", ctx.url("/tasks", "kind", g.kind(), "error_like", like, "since", f.since(),
              "from", f.fromText(), "until", f.untilText()))
          .raw("</td>").el("td", g.retryable(), "class", "num").el("td", g.discarded(), "class", "num")
          .el("td", g.firstSeen()).el("td", g.lastSeen()).raw("<td>");
      if (ctx.allows(DashboardAction.BULK_RETRY)) {
        h.el("a", "Retry the group\u2026", "href", ctx.url("/bulk", "action", "retry", "kind", g.kind(),
            "error_like", like, "since", f.since(), "from", f.fromText(), "until", f.untilText()), "class", "retry-group");
      }
      h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    h.el("p", "A group's tasks are those of its kind whose last error starts with its first line.", "class", "muted");
    return Layout.page(ctx, "Errors", h);
  }
}
