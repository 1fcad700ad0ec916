package dev.pgtask.dashboard;

import dev.pgtask.TaskFilter;
import dev.pgtask.TaskState;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The task filters of the tasks page, the bulk pages and the error groups' links, as query (or form)
 * parameters: {@code queue}, {@code kind}, {@code state}, {@code tenant}, {@code error} (text the
 * last error contains), {@code error_like} (a SQL LIKE pattern, as an error group's link gives it)
 * and {@code since} (e.g. {@code 30m}, {@code 1h}, {@code 7d}: tasks active within it).
 */
record Filters(String queue, String kind, TaskState state, String tenant, String error, String errorLike,
    String since) {

  private static final Pattern SINCE = Pattern.compile("([1-9][0-9]{0,6})(s|m|h|d)");

  static Filters of(Map<String, String> params) {
    String state = blank(params.get("state"));
    TaskState s = null;
    if (state != null) {
      try {
        s = TaskState.fromSql(state);
      } catch (IllegalArgumentException e) {
        throw new BadRequest("state must be one of pending, scheduled, waiting, available, running, retryable, completed, "
            + "cancelled, discarded (got \"" + state + "\")");
      }
    }
    String since = blank(params.get("since"));
    if (since != null) {
      since = since.toLowerCase(Locale.ROOT);
      if (!SINCE.matcher(since).matches()) {
        throw new BadRequest("since must be a positive number and a unit, e.g. 30m, 1h, 7d (got \"" + since + "\")");
      }
    }
    return new Filters(blank(params.get("queue")), blank(params.get("kind")), s, blank(params.get("tenant")),
        blank(params.get("error")), blank(params.get("error_like")), since);
  }

  boolean isEmpty() {
    return filter().isEmpty();
  }

  /** The filter of {@link dev.pgtask.ops.PgTaskOperations#tasks} and the bulk operations. */
  TaskFilter filter() {
    String like = errorLike != null ? errorLike : error != null ? "%" + escapeLike(error) + "%" : null;
    return new TaskFilter(kind, queue, state, tenant, like, sinceDuration());
  }

  Duration sinceDuration() {
    if (since == null) {
      return null;
    }
    Matcher m = SINCE.matcher(since);
    m.matches();
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
  }

  /** The filters as query parameters, pairs of name and value (nulls left out by {@link PageContext#url}). */
  String[] params(String... more) {
    String[] p = {"queue", queue, "kind", kind, "state", state == null ? null : state.sqlName(), "tenant", tenant,
        "error", error, "error_like", errorLike, "since", since};
    String[] all = new String[p.length + more.length];
    System.arraycopy(p, 0, all, 0, p.length);
    System.arraycopy(more, 0, all, p.length, more.length);
    return all;
  }

  /** The filters as hidden fields of a form. */
  Map<String, String> hidden() {
    String[] p = params();
    Map<String, String> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i < p.length; i += 2) {
      m.put(p[i], p[i + 1]);
    }
    return m;
  }

  /** {@code text} matched literally by LIKE: its backslashes, % and _ escaped (LIKE's escape is the backslash). */
  static String escapeLike(String text) {
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
  }

  private static String blank(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
