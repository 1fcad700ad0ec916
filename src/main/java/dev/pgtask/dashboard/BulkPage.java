package dev.pgtask.dashboard;

import dev.pgtask.BulkResult;
import dev.pgtask.PgTask;
import dev.pgtask.TaskFilter;
import java.util.Locale;
import java.util.Map;

/**
 * {@code /bulk}: an operation on every task a filter matches. {@code GET} is the dry run (the
 * operation with {@code dry_run}, which changes nothing): how many tasks match, per state, and how
 * many it would change and skip, with the form that runs it; {@code POST} runs it as one set-based
 * statement and shows what it changed and skipped. Both only where the action is allowed.
 */
final class BulkPage {

  private BulkPage() {}

  /** The bulk action named by the {@code action} parameter ({@code retry}, {@code cancel}, {@code delete}). */
  static DashboardAction action(Map<String, String> params) {
    String a = params.get("action");
    if (a == null) {
      throw new BadRequest("action must be one of retry, cancel, delete");
    }
    return switch (a) {
      case "retry" -> DashboardAction.BULK_RETRY;
      case "cancel" -> DashboardAction.BULK_CANCEL;
      case "delete" -> DashboardAction.BULK_DELETE;
      default -> throw new BadRequest("action must be one of retry, cancel, delete (got \"" + a + "\")");
    };
  }

  static String dryRun(PageContext ctx) {
    DashboardAction action = action(ctx.request.query());
    Filters f = filters(ctx.request.query());
    BulkResult r = run(ctx.pgtask, action, f.filter(), true);
    String verb = verb(action);
    Html h = new Html();
    describe(h, f);
    h.el("p", "Dry run, nothing changed: " + r.changed() + " task(s) would be " + verb + ", " + r.skipped()
        + " skipped.", "id", "dry-run-summary");
    table(h, r);
    h.open("form", "method", "post", "action", ctx.url("/bulk"), "id", "bulk-form");
    ctx.csrfField(h);
    h.open("input", "type", "hidden", "name", "action", "value", ctx.request.query().get("action"));
    for (Map.Entry<String, String> e : f.hidden().entrySet()) {
      if (e.getValue() != null) {
        h.open("input", "type", "hidden", "name", e.getKey(), "value", e.getValue());
      }
    }
    h.open("button", "type", "submit", "id", "bulk-run").text(capital(action) + " the matching tasks now")
        .close("button").close("form");
    h.el("p", "The operation matches again when it runs: tasks that changed state meanwhile are counted where they "
        + "are then.", "class", "muted");
    return Layout.page(ctx, "Bulk " + name(action) + ": dry run", h);
  }

  static String run(PageContext ctx) {
    DashboardAction action = action(ctx.request.form());
    Filters f = filters(ctx.request.form());
    BulkResult r = run(ctx.pgtask, action, f.filter(), false);
    Html h = new Html();
    describe(h, f);
    h.el("p", r.changed() + " task(s) " + verb(action) + ", " + r.skipped() + " skipped.", "id", "bulk-summary");
    table(h, r);
    h.el("a", "The matching tasks now", "href", ctx.url("/tasks", f.params()));
    return Layout.page(ctx, "Bulk " + name(action) + ": done", h);
  }

  private static Filters filters(Map<String, String> params) {
    Filters f = Filters.of(params);
    if (f.isEmpty()) {
      throw new BadRequest("a bulk operation needs at least one filter (queue, kind, state, tenant, error, since, from, "
          + "until): "
          + "it never applies to every task at once");
    }
    return f;
  }

  private static BulkResult run(PgTask pgtask, DashboardAction action, TaskFilter filter, boolean dryRun) {
    return switch (action) {
      case BULK_RETRY -> pgtask.retryTasks(filter, dryRun);
      case BULK_CANCEL -> pgtask.cancelTasks(filter, dryRun);
      default -> pgtask.deleteTasks(filter, dryRun);
    };
  }

  private static void describe(Html h, Filters f) {
    TaskFilter t = f.filter();
    h.el("p", "Tasks" + (t.queue() == null ? "" : " of queue " + t.queue()) + (t.kind() == null ? "" : " of kind "
        + t.kind()) + (t.state() == null ? "" : " in state " + t.state().sqlName()) + (t.tenant() == null ? ""
        : " of tenant " + t.tenant()) + (t.errorLike() == null ? "" : " whose last error is like " + t.errorLike())
        + (f.since() == null ? "" : " active within " + f.since())
        + (f.from() == null ? "" : " active from " + f.fromText() + " UTC")
        + (f.until() == null ? "" : " active until " + f.untilText() + " UTC (exclusive)"), "id", "bulk-filter");
  }

  private static void table(Html h, BulkResult r) {
    h.open("table", "id", "bulk-states").header("state", r.dryRun() ? "would change" : "changed",
        r.dryRun() ? "would skip" : "skipped").raw("<tbody>");
    for (BulkResult.ForState s : r.states()) {
      h.open("tr", "data-state", s.state().sqlName()).el("td", s.state().sqlName())
          .el("td", s.changed(), "class", "num changed").el("td", s.skipped(), "class", "num skipped").close("tr");
    }
    h.raw("</tbody></table>");
  }

  private static String name(DashboardAction a) {
    return a.name().substring("BULK_".length()).toLowerCase(Locale.ROOT);
  }

  private static String capital(DashboardAction a) {
    String n = name(a);
    return Character.toUpperCase(n.charAt(0)) + n.substring(1);
  }

  private static String verb(DashboardAction a) {
    return switch (a) {
      case BULK_RETRY -> "retried";
      case BULK_CANCEL -> "cancelled (or asked to stop)";
      default -> "deleted";
    };
  }
}
