package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The error recorded for a payload that does not deserialize to its handler's type: which field
 * (as a JSON path, {@code $.lines[1].qty}) and what is wrong with it (missing, null for a
 * primitive, the wrong JSON type), and never a value of the payload. Jackson's own messages quote
 * the input ({@code from String "..."}), and a payload is tenant data that must not land in the
 * task's error history or the logs; so the text is built from the exception's path and types only.
 * Map keys are input too: they are shown as {@code [*]}.
 */
final class PayloadErrors {

  /** A path longer than this is cut (a pathological nesting must not make a huge error). */
  private static final int MAX_PATH_LENGTH = 300;
  /** Jackson names the JSON token it found, e.g. {@code (token `JsonToken.START_OBJECT`)}. */
  private static final Pattern TOKEN = Pattern.compile("JsonToken\\.([A-Z_]+)");

  private PayloadErrors() {}

  /** The error text for a payload of {@code type} that failed with {@code e}: field and problem, no values. */
  static String describe(Class<?> type, Exception e) {
    String head = "payload does not match " + type.getName();
    if (!(e instanceof JsonMappingException m)) {
      return head + " (" + e.getClass().getSimpleName() + ")";
    }
    String path = path(m.getPath());
    String message = m.getOriginalMessage() == null ? "" : m.getOriginalMessage();
    Class<?> target = m instanceof MismatchedInputException mi ? mi.getTargetType() : null;
    String problem;
    if (m instanceof UnrecognizedPropertyException) {
      problem = "is not a property of " + simpleName(((UnrecognizedPropertyException) m).getReferringClass());
    } else if (m instanceof MismatchedInputException && message.startsWith("Missing ")
        && message.contains("creator property")) {
      problem = "is missing" + expected(target);
    } else if (m instanceof MismatchedInputException && message.startsWith("Cannot map `null` into type")) {
      problem = "is null, but " + (target != null ? target.getName() : "its type") + " is a primitive";
    } else if (m instanceof InvalidFormatException f) {
      problem = "has the wrong type: expected " + kind(target) + ", got " + kindOfValue(f.getValue());
    } else if (m instanceof ValueInstantiationException v) {
      // the record's constructor rejected the values; its message is the application's and may quote them
      problem = "was rejected by the constructor of " + simpleName(v.getType() == null ? null : v.getType().getRawClass())
          + " (" + (v.getCause() != null ? v.getCause().getClass().getSimpleName() : "no cause") + ")";
    } else if (m instanceof MismatchedInputException) {
      String found = found(message);
      problem = "has the wrong type: expected " + kind(target) + (found != null ? ", got " + found : "");
    } else {
      problem = "has a value that " + (target != null ? kind(target) : "its type") + " cannot hold ("
          + m.getClass().getSimpleName() + ")";
    }
    return head + ": " + path + " " + problem;
  }

  /** {@code $}, then {@code .field} or {@code [index]} per step; map keys (input data) as {@code [*]}. */
  static String path(List<JsonMappingException.Reference> refs) {
    StringBuilder b = new StringBuilder("$");
    for (JsonMappingException.Reference r : refs) {
      Object from = r.getFrom();
      boolean mapKey = from instanceof Map<?, ?> || from instanceof Class<?> c && Map.class.isAssignableFrom(c);
      if (r.getIndex() >= 0) {
        b.append('[').append(r.getIndex()).append(']');
      } else if (mapKey) {
        b.append("[*]");
      } else if (r.getFieldName() != null) {
        b.append('.').append(r.getFieldName());
      } else {
        b.append("[?]");
      }
      if (b.length() > MAX_PATH_LENGTH) {
        return b.substring(0, MAX_PATH_LENGTH) + "…";
      }
    }
    return b.toString();
  }

  private static String expected(Class<?> target) {
    return target == null ? "" : " (expected " + kind(target) + ")";
  }

  /** What JSON a Java type reads: {@code an integer (int)}, {@code an object (Line)}, ... */
  private static String kind(Class<?> t) {
    if (t == null) {
      return "another type";
    }
    String name = simpleName(t);
    if (t == int.class || t == long.class || t == short.class || t == byte.class || t == Integer.class
        || t == Long.class || t == Short.class || t == Byte.class || t == java.math.BigInteger.class) {
      return "an integer (" + name + ")";
    }
    if (t == double.class || t == float.class || Number.class.isAssignableFrom(t)) {
      return "a number (" + name + ")";
    }
    if (t == boolean.class || t == Boolean.class) {
      return "a boolean (" + name + ")";
    }
    if (t == String.class || t == char.class || t == Character.class || t.isEnum()) {
      return "a string (" + name + ")";
    }
    if (t.isArray() || Collection.class.isAssignableFrom(t)) {
      return "an array (" + name + ")";
    }
    return "an object (" + name + ")";
  }

  /** The JSON type of a value Jackson could not convert, without the value. */
  private static String kindOfValue(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof String) {
      return "a string";
    }
    if (v instanceof Number) {
      return "a number";
    }
    if (v instanceof Boolean) {
      return "a boolean";
    }
    return "a " + v.getClass().getSimpleName();
  }

  /** The JSON type Jackson found, from the token it names in its message, or null. */
  private static String found(String message) {
    Matcher t = TOKEN.matcher(message);
    if (!t.find()) {
      return null;
    }
    return switch (t.group(1)) {
      case "START_OBJECT" -> "an object";
      case "START_ARRAY" -> "an array";
      case "VALUE_STRING" -> "a string";
      case "VALUE_NUMBER_INT" -> "an integer";
      case "VALUE_NUMBER_FLOAT" -> "a number";
      case "VALUE_TRUE", "VALUE_FALSE" -> "a boolean";
      case "VALUE_NULL" -> "null";
      default -> null;
    };
  }

  private static String simpleName(Class<?> c) {
    if (c == null) {
      return "its type";
    }
    String n = c.getSimpleName();
    return n.isEmpty() ? c.getName() : n;
  }
}
