package dev.pgtask.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.types.YearToSecond;

/**
 * How the operator commands print values: for humans (compact durations, instants in UTC to the
 * second, lists comma-separated) and as JSON for scripts (view column names as keys, instants as
 * ISO-8601 strings, intervals as seconds, arrays as arrays).
 */
final class Formats {

  static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Formats() {}

  /** A value for a table cell. */
  static String text(Object v) {
    if (v == null) {
      return "";
    }
    if (v instanceof Instant i) {
      return i.truncatedTo(ChronoUnit.SECONDS).toString();
    }
    if (v instanceof YearToSecond y) {
      return duration(toDuration(y));
    }
    if (v instanceof Duration d) {
      return duration(d);
    }
    if (v instanceof Object[] a) {
      StringBuilder b = new StringBuilder();
      for (Object o : a) {
        b.append(b.length() == 0 ? "" : ",").append(text(o));
      }
      return b.toString();
    }
    if (v instanceof Boolean b) {
      return b ? "yes" : "no";
    }
    return v.toString();
  }

  /** An interval as a {@link Duration} (months count as 30 days, as PostgreSQL's justify does). */
  static Duration toDuration(YearToSecond y) {
    if (y == null) {
      return null;
    }
    long months = (long) y.getYears() * 12 + y.getMonths();
    Duration d = Duration.ofDays(months * 30 + y.getDays()).plusHours(y.getHours()).plusMinutes(y.getMinutes())
        .plusSeconds(y.getSeconds()).plusNanos(y.getNano());
    return y.getSign() < 0 ? d.negated() : d;
  }

  /** A compact duration: {@code 0s}, {@code 850ms}, {@code 12.3s}, {@code 4m05s}, {@code 2h03m}, {@code 3d04h}. */
  static String duration(Duration d) {
    if (d == null) {
      return "";
    }
    if (d.isNegative()) {
      return "-" + duration(d.negated());
    }
    long ms = d.toMillis();
    if (ms == 0) {
      return "0s";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    if (ms < 60_000) {
      return String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
    }
    long s = d.toSeconds();
    if (s < 3600) {
      return String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
    }
    if (s < 86_400) {
      return String.format(Locale.ROOT, "%dh%02dm", s / 3600, (s % 3600) / 60);
    }
    return String.format(Locale.ROOT, "%dd%02dh", s / 86_400, (s % 86_400) / 3600);
  }

  /** A byte count: {@code 512 B}, {@code 8.0 kB}, {@code 1.2 MB}, {@code 3.4 GB}. */
  static String bytes(Long b) {
    if (b == null) {
      return "";
    }
    if (b < 1024) {
      return b + " B";
    }
    String[] units = {"kB", "MB", "GB", "TB"};
    double v = b;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }

  /** A record as a JSON object keyed by its column names. */
  static ObjectNode json(Record r) {
    ObjectNode o = JSON.createObjectNode();
    for (Field<?> f : r.fields()) {
      put(o, f.getName(), r.get(f));
    }
    return o;
  }

  /** Records as a JSON array of objects. */
  static ArrayNode json(Iterable<? extends Record> records) {
    ArrayNode a = JSON.createArrayNode();
    records.forEach(r -> a.add(json(r)));
    return a;
  }

  private static void put(ObjectNode o, String name, Object v) {
    if (v == null) {
      o.putNull(name);
    } else if (v instanceof Long l) {
      o.put(name, l);
    } else if (v instanceof Integer i) {
      o.put(name, i);
    } else if (v instanceof Double d) {
      o.put(name, d);
    } else if (v instanceof Boolean b) {
      o.put(name, b);
    } else if (v instanceof Instant i) {
      o.put(name, i.toString());
    } else if (v instanceof YearToSecond y) {
      o.put(name, toDuration(y).toNanos() / 1e9);
    } else if (v instanceof Object[] arr) {
      ArrayNode a = o.putArray(name);
      for (Object e : arr) {
        if (e instanceof Integer i) {
          a.add(i);
        } else if (e instanceof Long l) {
          a.add(l);
        } else {
          a.add(e == null ? null : e.toString());
        }
      }
    } else {
      o.put(name, v.toString());
    }
  }

  /** Prints a JSON value on {@code out}, followed by a newline. */
  static void printJson(PrintWriter out, Object value) {
    try {
      out.println(JSON.writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
    }
    out.flush();
  }
}
