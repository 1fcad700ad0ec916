package dev.pgtask.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.RecordComponent;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;

/**
 * How the operator commands print values: for humans (compact durations, instants in UTC to the
 * second, lists comma-separated) and as JSON for scripts (view column names as keys, instants as
 * ISO-8601 strings, intervals as seconds, arrays as arrays, numerics as strings). Control characters in values print
 * escaped either way ({@link TerminalText}).
 *
 * <p>The read-only commands write their JSON with Jackson's streaming generator ({@link #printJson(PrintWriter,
 * JsonBody)}); the {@link ObjectMapper} of the other commands is created on first use
 * ({@link #mapper()}), so that a read command never loads Jackson's data binding.
 */
final class Formats {

  private Formats() {}

  /** Jackson's object mapper, indenting (created on first use). */
  static ObjectMapper mapper() {
    return Mapper.INSTANCE;
  }

  private static final class Mapper {
    static final ObjectMapper INSTANCE = new ObjectMapper(new JsonFactory().setCharacterEscapes(TerminalText.JSON))
        .enable(SerializationFeature.INDENT_OUTPUT);
  }

  private static final class Factory {
    static final JsonFactory INSTANCE = new JsonFactory().setCharacterEscapes(TerminalText.JSON);
  }

  /** A value for a table cell. */
  static String text(Object v) {
    if (v == null) {
      return "";
    }
    if (v instanceof Instant i) {
      return i.truncatedTo(ChronoUnit.SECONDS).toString();
    }
    if (v instanceof Duration d) {
      return duration(d);
    }
    if (v instanceof List<?> a) {
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

  /** What a read command writes as JSON, through a generator. */
  interface JsonBody {
    void write(JsonGenerator json) throws IOException;
  }

  /**
   * A view's row (one of the records of {@code dev.pgtask.ops}, whose components are the view's
   * columns in its order) as a JSON object keyed by the view's column names.
   */
  static void write(JsonGenerator json, Record r) throws IOException {
    json.writeStartObject();
    for (RecordComponent c : r.getClass().getRecordComponents()) {
      json.writeFieldName(columnName(c.getName()));
      try {
        value(json, c.getAccessor().invoke(r));
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("cannot read " + c.getName() + " of " + r.getClass().getSimpleName(), e);
      }
    }
    json.writeEndObject();
  }

  /** View rows as a JSON array of objects. */
  static void write(JsonGenerator json, List<? extends Record> rows) throws IOException {
    json.writeStartArray();
    for (Record r : rows) {
      write(json, r);
    }
    json.writeEndArray();
  }

  /** A record component's name as the view's column name: {@code waitingForTenant} is {@code waiting_for_tenant}. */
  static String columnName(String component) {
    StringBuilder b = new StringBuilder(component.length() + 4);
    for (int i = 0; i < component.length(); i++) {
      char ch = component.charAt(i);
      if (Character.isUpperCase(ch)) {
        b.append('_').append(Character.toLowerCase(ch));
      } else {
        b.append(ch);
      }
    }
    return b.toString();
  }

  private static void value(JsonGenerator json, Object v) throws IOException {
    if (v == null) {
      json.writeNull();
    } else if (v instanceof Long l) {
      json.writeNumber(l);
    } else if (v instanceof Integer i) {
      json.writeNumber(i);
    } else if (v instanceof Double d) {
      json.writeNumber(d);
    } else if (v instanceof Boolean b) {
      json.writeBoolean(b);
    } else if (v instanceof Instant i) {
      json.writeString(i.toString());
    } else if (v instanceof Duration d) {
      json.writeNumber(d.toNanos() / 1e9);
    } else if (v instanceof List<?> arr) {
      json.writeStartArray();
      for (Object e : arr) {
        if (e instanceof Integer i) {
          json.writeNumber(i);
        } else if (e instanceof Long l) {
          json.writeNumber(l);
        } else if (e == null) {
          json.writeNull();
        } else {
          json.writeString(e.toString());
        }
      }
      json.writeEndArray();
    } else {
      json.writeString(v.toString());
    }
  }

  /** Prints what {@code body} writes as indented JSON on {@code out}, followed by a newline. */
  static void printJson(PrintWriter out, JsonBody body) {
    StringWriter text = new StringWriter();
    try (JsonGenerator json = Factory.INSTANCE.createGenerator(text)) {
      json.useDefaultPrettyPrinter();
      body.write(json);
    } catch (IOException e) {
      throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
    }
    out.println(text);
    out.flush();
  }

  /** Prints a JSON value on {@code out}, followed by a newline. */
  static void printJson(PrintWriter out, Object value) {
    try {
      out.println(mapper().writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
    }
    out.flush();
  }
}
