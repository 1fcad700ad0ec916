package dev.pgtask.dashboard;

import dev.pgtask.ops.LiveWorker;

/** {@code /workers}: the workers seen in the last minute. */
final class WorkersPage {

  private WorkersPage() {}

  static String render(PageContext ctx) {
    Html h = new Html();
    h.open("table", "id", "workers").header("id", "host", "pid", "version", "queues", "kinds", "concurrency",
        "started", "last seen", "listening").raw("<tbody>");
    for (LiveWorker w : ctx.ops.workers()) {
      h.row(w.id(), w.host(), w.pid(), w.version(), String.join(", ", w.queues()), String.join(", ", w.kinds()),
          w.concurrency(), w.startedAt(), Html.duration(w.lastSeenAgo()) + " ago",
          w.listening() == null ? "unknown" : w.listening() ? "yes" : "no: it polls");
    }
    h.raw("</tbody></table>");
    return Layout.page(ctx, "Workers", h);
  }
}
