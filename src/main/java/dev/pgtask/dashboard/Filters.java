package dev.pgtask.dashboard;

import dev.pgtask.TaskFilter;
import dev.pgtask.TaskState;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The task filters of the tasks page, the bulk pages and the error groups' links, as query (or form)
 * parameters: {@code queue}, {@code kind}, {@code state}, {@code tenant}, {@code error} (text the
 * last error contains), {@code error_like} (a SQL LIKE pattern, as an error group's link gives it),
 * {@code since} (e.g. {@code 30m}, {@code 1h}, {@code 7d}: tasks active within it), and {@code from}
 * and {@code until} (tasks whose last activity is at or after {@code from} and before {@code until}:
 * a date and time in UTC as an HTML {@code datetime-local} input sends it, {@code 2026-12-04T10:00},
 * or an ISO-8601 instant, {@code 2026-12-04T10:00:00Z}; links carry them as the former, in UTC).
 */
record Filters(String queue, String kind, TaskState state, String tenant, String error, String errorLike,
    String since, Instant from, Instant until) {

  private static final Pattern SINCE = Pattern.compile("([1-9][0-9]{0,6})(s|m|h|d)");

  /** The years a {@code from} or {@code until} may name (those of a {@code datetime-local} input). */
  private static final Instant FIRST = Instant.parse("0001-01-01T00:00:00Z");
  private static final Instant LAST = Instant.parse("+10000-01-01T00:00:00Z");

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
    Instant from = instant("from", params.get("from"));
    Instant until = instant("until", params.get("until"));
    if (from != null && until != null && !from.isBefore(until)) {
      throw new BadRequest("from must be before until (from is inclusive, until exclusive, both in UTC): from "
          + text(from) + ", until " + text(until));
    }
    return new Filters(blank(params.get("queue")), blank(params.get("kind")), s, blank(params.get("tenant")),
        blank(params.get("error")), blank(params.get("error_like")), since, from, until);
  }

  boolean isEmpty() {
    return filter().isEmpty();
  }

  /** The filter of {@link dev.pgtask.ops.PgTaskOperations#tasks} and the bulk operations. */
  TaskFilter filter() {
    String like = errorLike != null ? errorLike : error != null ? "%" + escapeLike(error) + "%" : null;
    return new TaskFilter(kind, queue, state, tenant, like, sinceDuration(), from, until);
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

  /** {@code from} as links and the form's {@code datetime-local} input carry it (UTC), or null. */
  String fromText() {
    return text(from);
  }

  /** {@code until} as links and the form's {@code datetime-local} input carry it (UTC), or null. */
  String untilText() {
    return text(until);
  }

  /** The filters as query parameters, pairs of name and value (nulls left out by {@link PageContext#url}). */
  String[] params(String... more) {
    String[] p = {"queue", queue, "kind", kind, "state", state == null ? null : state.sqlName(), "tenant", tenant,
        "error", error, "error_like", errorLike, "since", since, "from", fromText(), "until", untilText()};
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

  /**
   * The instant a {@code from} or {@code until} parameter names: a date and time without an offset
   * (a {@code datetime-local} input's value), read in UTC, or an ISO-8601 date and time with an
   * offset. Strict: a date that does not exist, a missing time or anything else is refused by name.
   */
  static Instant instant(String name, String value) {
    String v = blank(value);
    if (v == null) {
      return null;
    }
    Instant instant;
    try {
      instant = LocalDateTime.parse(v, DateTimeFormatter.ISO_LOCAL_DATE_TIME).toInstant(ZoneOffset.UTC);
    } catch (DateTimeException notLocal) {
      try {
        instant = OffsetDateTime.parse(v, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
      } catch (DateTimeException e) {
        instant = null;
      }
    }
    if (instant == null || instant.isBefore(FIRST) || !instant.isBefore(LAST)) {
      throw new BadRequest(name + " must be a date and time in UTC, e.g. 2026-12-04T10:00 (or an ISO-8601 instant, "
          + "e.g. 2026-12-04T10:00:00Z), in the years 1 to 9999 (got \"" + v + "\")");
    }
    return instant;
  }

  /** {@code instant} as a {@code datetime-local} value in UTC ({@code 2026-12-04T10:00}, seconds when not zero), or null. */
  static String text(Instant instant) {
    return instant == null ? null : LocalDateTime.ofInstant(instant, ZoneOffset.UTC).toString();
  }

  private static String blank(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
