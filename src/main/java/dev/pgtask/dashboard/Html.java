package dev.pgtask.dashboard;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * The one way the dashboard writes HTML: markup the dashboard's own code writes goes through
 * {@link #raw}, and every value (a task's kind, queue, tenant, payload, error; a worker's id; a
 * query parameter) through {@link #text} or an attribute of {@link #open} / {@link #el}, which
 * escape it. Never pass a value to {@link #raw}.
 */
final class Html {

  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss")
      .withZone(ZoneOffset.UTC);

  private final StringBuilder out = new StringBuilder(4096);

  /**
   * {@code s} safe as HTML text and as a double- or single-quoted attribute value: {@code & < > " '}
   * replaced by their character references.
   */
  static String escape(String s) {
    StringBuilder b = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      String r = switch (c) {
        case '&' -> "&amp;";
        case '<' -> "&lt;";
        case '>' -> "&gt;";
        case '"' -> "&quot;";
        case '\'' -> "&#39;";
        default -> null;
      };
      if (r != null && b == null) {
        b = new StringBuilder(s.length() + 16).append(s, 0, i);
      }
      if (b != null) {
        if (r != null) {
          b.append(r);
        } else {
          b.append(c);
        }
      }
    }
    return b == null ? s : b.toString();
  }

  /** Markup written by the dashboard's code: constants only, never a value. */
  Html raw(String markup) {
    out.append(markup);
    return this;
  }

  /** A value as text, escaped; null as an en dash. */
  Html text(Object value) {
    out.append(value == null ? "\u2013" : escape(format(value)));
    return this;
  }

  /** {@code <name a="v" ...>}: attributes as name/value pairs, values escaped; a null value leaves the attribute out. */
  Html open(String name, String... attributes) {
    out.append('<').append(name);
    for (int i = 0; i + 1 < attributes.length; i += 2) {
      if (attributes[i + 1] != null) {
        out.append(' ').append(attributes[i]).append("=\"").append(escape(attributes[i + 1])).append('"');
      }
    }
    out.append('>');
    return this;
  }

  /** {@code </name>}. */
  Html close(String name) {
    out.append("</").append(name).append('>');
    return this;
  }

  /** An element with escaped text content and escaped attributes. */
  Html el(String name, Object text, String... attributes) {
    return open(name, attributes).text(text).close(name);
  }

  /** A table row of cells, each escaped. */
  Html row(Object... cells) {
    out.append("<tr>");
    for (Object c : cells) {
      el("td", c);
    }
    out.append("</tr>");
    return this;
  }

  /** The table header row. */
  Html header(String... names) {
    out.append("<thead><tr>");
    for (String n : names) {
      el("th", n);
    }
    out.append("</tr></thead>");
    return this;
  }

  /** Instants as UTC seconds, durations as 1h 2m 3s, anything else by {@code toString}. */
  static String format(Object value) {
    if (value instanceof Instant i) {
      return TIME.format(i) + "Z";
    }
    if (value instanceof Duration d) {
      return duration(d);
    }
    return String.valueOf(value);
  }

  static String duration(Duration d) {
    if (d.compareTo(Duration.ofSeconds(1)) < 0) {
      return d.toMillis() + " ms";
    }
    long s = d.toSeconds();
    return s >= 3600 ? s / 3600 + "h " + s % 3600 / 60 + "m" : s >= 60 ? s / 60 + "m " + s % 60 + "s" : s + "s";
  }

  @Override
  public String toString() {
    return out.toString();
  }
}
