package dev.pgtask.dashboard;

import dev.pgtask.ops.TenantLoad;
import dev.pgtask.ops.TenantLock;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * {@code /tenants}: the busiest tenants of the recent window ({@code pgtask.tenant_load}: load,
 * utilisation, backlog) with the holder of each one's lock (pid) and its waiters.
 */
final class TenantsPage {

  static final int LIMIT = 100;

  private TenantsPage() {}

  static String render(PageContext ctx) {
    List<TenantLoad> load = ctx.ops.tenantLoad(LIMIT);
    Map<String, TenantLock> locks = ctx.ops.tenantLocks().stream()
        .collect(Collectors.toMap(TenantLock::tenant, l -> l, (a, b) -> a));
    Html h = new Html();
    h.el("p", "The " + LIMIT + " busiest tenants of the last 15 minutes, busiest first.", "class", "muted");
    h.open("table", "id", "tenants").header("tenant", "arrivals/min", "completions/min", "mean run s", "p95 run s",
        "utilisation", "backlog", "backlog trend/min", "lock holder pid", "waiting pids").raw("<tbody>");
    for (TenantLoad t : load) {
      TenantLock l = locks.get(t.tenant());
      h.raw("<tr><td>").el("a", t.tenant(), "href", ctx.url("/tasks", "tenant", t.tenant())).raw("</td>")
          .el("td", t.arrivalsPerMin()).el("td", t.completionsPerMin()).el("td", t.meanRunS()).el("td", t.p95RunS())
          .el("td", t.utilisation()).el("td", t.backlog()).el("td", t.backlogTrendPerMin())
          .el("td", l == null ? null : l.holderPid()).el("td", l == null ? null : l.waitingPids()).raw("</tr>");
    }
    h.raw("</tbody></table>");
    return Layout.page(ctx, "Tenants", h);
  }
}
