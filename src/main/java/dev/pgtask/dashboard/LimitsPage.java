package dev.pgtask.dashboard;

import dev.pgtask.ops.LimitStatus;

/** {@code /limits}: every limit ({@code pgtask.limits}) with what runs and waits under it. */
final class LimitsPage {

  private LimitsPage() {}

  static String render(PageContext ctx) {
    Html h = new Html();
    h.open("table", "id", "limits").header("scope", "key", "max running", "running", "slots held", "waiting",
        "oldest waiting since", "stuck", "per second", "burst", "tokens", "next token").raw("<tbody>");
    for (LimitStatus l : ctx.ops.limits()) {
      h.row(l.scope(), l.key(), l.maxRunning(), l.running(), l.slotsHeld(), l.waiting(), l.oldestWaitingSince(),
          l.stuck(), l.perSecond(), l.burst(), l.tokens(), l.nextTokenAt());
    }
    h.raw("</tbody></table>");
    return Layout.page(ctx, "Limits", h);
  }
}
