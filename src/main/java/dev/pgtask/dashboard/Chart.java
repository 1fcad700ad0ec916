package dev.pgtask.dashboard;

import dev.pgtask.ops.ThroughputMinute;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The overview's throughput chart: an inline SVG of finished tasks per minute, no script. */
final class Chart {

  private static final int W = 720;
  private static final int H = 120;

  private Chart() {}

  /** One bar per minute of the last {@code minutes} ending at {@code now}: completed, with discarded on top. */
  static void throughput(Html out, List<ThroughputMinute> rows, Instant now, int minutes) {
    Map<Instant, ThroughputMinute> byMinute = new HashMap<>();
    long max = 1;
    for (ThroughputMinute r : rows) {
      byMinute.put(r.minute(), r);
      max = Math.max(max, r.completed() + r.discarded());
    }
    Instant last = now.truncatedTo(ChronoUnit.MINUTES);
    double bar = (double) W / minutes;
    out.open("svg", "class", "chart", "id", "throughput", "width", String.valueOf(W), "height", String.valueOf(H + 16),
        "viewBox", "0 0 " + W + " " + (H + 16), "role", "img", "aria-label", "finished tasks per minute");
    for (int i = 0; i < minutes; i++) {
      ThroughputMinute r = byMinute.get(last.minus(minutes - 1 - i, ChronoUnit.MINUTES));
      if (r == null) {
        continue;
      }
      double x = i * bar;
      double hc = (double) H * r.completed() / max;
      double hd = (double) H * r.discarded() / max;
      out.open("rect", "class", "c", "x", fmt(x), "y", fmt(H - hc), "width", fmt(bar - 1), "height", fmt(hc))
          .el("title", Html.format(r.minute()) + ": " + r.completed() + " completed, " + r.discarded() + " discarded")
          .close("rect");
      if (hd > 0) {
        out.open("rect", "class", "d", "x", fmt(x), "y", fmt(H - hc - hd), "width", fmt(bar - 1), "height", fmt(hd))
            .close("rect");
      }
    }
    out.el("text", "max " + max + "/min", "x", "4", "y", String.valueOf(H + 13), "font-size", "11")
        .el("text", "now", "x", String.valueOf(W - 24), "y", String.valueOf(H + 13), "font-size", "11")
        .close("svg");
  }

  private static String fmt(double v) {
    return String.format(java.util.Locale.ROOT, "%.1f", v);
  }
}
