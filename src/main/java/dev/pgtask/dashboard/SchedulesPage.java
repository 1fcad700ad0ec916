package dev.pgtask.dashboard;

import dev.pgtask.ops.ScheduleStatus;
import java.util.Map;

/** {@code /schedules}: every schedule with its next fire, last task, counts and pause or resume. */
final class SchedulesPage {

  private SchedulesPage() {}

  static String render(PageContext ctx) {
    Html h = new Html();
    h.open("table", "id", "schedules").header("name", "cron", "time zone", "kind", "queue", "next fire", "last fire",
        "last task", "fired", "missed", "state", "").raw("<tbody>");
    for (ScheduleStatus s : ctx.ops.schedules()) {
      h.raw("<tr>").el("td", s.name()).el("td", s.cron()).el("td", s.timeZone()).el("td", s.kind()).el("td", s.queue())
          .el("td", s.paused() ? "paused" : Html.format(s.nextFireAt())).el("td", s.lastFireAt()).raw("<td>");
      if (s.lastTaskId() != null) {
        h.el("a", s.lastTaskId() + " (" + s.lastTaskState() + ")", "href", ctx.url("/tasks/" + s.lastTaskId()));
      } else {
        h.text(null);
      }
      h.raw("</td>").el("td", s.fired()).el("td", s.lastMissedAt())
          .el("td", s.paused() ? "paused" : s.queuePaused() ? "queue paused" : "active").raw("<td>");
      String path = "/schedules/" + PageContext.segment(s.name());
      if (s.paused()) {
        ctx.actionForm(h, DashboardAction.RESUME_SCHEDULE, path + "/resume", "Resume", Map.of());
      } else {
        ctx.actionForm(h, DashboardAction.PAUSE_SCHEDULE, path + "/pause", "Pause", Map.of());
      }
      h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    return Layout.page(ctx, "Schedules", h);
  }
}
