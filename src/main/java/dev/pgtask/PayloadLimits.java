package dev.pgtask;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamWriteConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;

/**
 * The limits of what a worker reads in a payload, the same on both sides: a worker's default Jackson
 * mapper ({@link PgTaskWorker#defaultObjectMapper()}) is built with exactly these stream limits, and
 * enqueue ({@code pgtask.enqueue}, {@code pgtask.enqueue_batch}, {@code pgtask.update_task},
 * schedules; the Java API goes through them) refuses a payload beyond any of them with an
 * {@link InvalidTaskException} naming the limit. The database's copy is {@code pgtask.payload_limits()}
 * (db/R__01_validation_and_tenants.sql); a test keeps the two equal.
 *
 * <p>Depth, number and string length are Jackson 2.x's defaults, the name length is raised to the
 * string length; all are written out so that a Jackson upgrade cannot move them apart from the
 * database's: a payload a worker read before is still accepted, and one it could not read is
 * refused at enqueue instead of discarded at its first attempt. Lengths count as Jackson
 * counts them, on the JSON text PostgreSQL gives the worker (numbers without an exponent, as
 * {@code numeric} prints them).
 */
public final class PayloadLimits {

  /** Nesting of objects and arrays; the payload object itself is depth 1. */
  public static final int MAX_DEPTH = 1000;

  /** Digits of one number: not the sign, the decimal point, nor the {@code 0} before the point of a number below 1. */
  public static final int MAX_NUMBER_LENGTH = 1000;

  /**
   * UTF-16 code units of one property name, unescaped: as long as a string value (Jackson's default
   * is 50,000). A payload's size is bounded by the database's {@code max_payload_bytes} anyway, and
   * with names below 20 MB enqueue need not walk the names of any ordinary payload.
   */
  public static final int MAX_NAME_LENGTH = 20_000_000;

  /** UTF-16 code units of one string value, unescaped. */
  public static final int MAX_STRING_LENGTH = 20_000_000;

  private PayloadLimits() {}

  /** Jackson read limits equal to these (document length and token count unlimited). */
  public static StreamReadConstraints readConstraints() {
    return StreamReadConstraints.builder()
        .maxNestingDepth(MAX_DEPTH)
        .maxNumberLength(MAX_NUMBER_LENGTH)
        .maxNameLength(MAX_NAME_LENGTH)
        .maxStringLength(MAX_STRING_LENGTH)
        .maxDocumentLength(-1)
        .maxTokenCount(-1)
        .build();
  }

  /** Jackson write limits to match: a payload nested as deep as a worker reads can be written again. */
  public static StreamWriteConstraints writeConstraints() {
    return StreamWriteConstraints.builder().maxNestingDepth(MAX_DEPTH).build();
  }

  /** A JSON factory with {@link #readConstraints()} and {@link #writeConstraints()}. */
  public static JsonFactory jsonFactory() {
    return JsonFactory.builder()
        .streamReadConstraints(readConstraints())
        .streamWriteConstraints(writeConstraints())
        .build();
  }

  /**
   * The database's name for the limit a Jackson constraint error broke ({@code task_payload_depth},
   * {@code task_payload_number_length}, {@code task_payload_name_length},
   * {@code task_payload_string_length}), or {@code task_payload_json} for another one. Jackson's
   * constraint messages give lengths and limits, never the input.
   */
  static String constraintOf(StreamConstraintsException e) {
    String m = String.valueOf(e.getOriginalMessage());
    if (m.contains("nesting depth")) {
      return "task_payload_depth";
    } else if (m.startsWith("Number value length") || m.startsWith("Number length")) {
      return "task_payload_number_length";
    } else if (m.startsWith("Name length")) {
      return "task_payload_name_length";
    } else if (m.startsWith("String value length")) {
      return "task_payload_string_length";
    }
    return "task_payload_json";
  }
}
