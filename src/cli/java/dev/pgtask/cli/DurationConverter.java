package dev.pgtask.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses the CLI's durations: a whole number with a unit, {@code 500ms}, {@code 8s}, {@code 2m},
 * {@code 1h}, {@code 1d}, or an ISO-8601 duration such as {@code PT8S}.
 */
public final class DurationConverter implements ITypeConverter<Duration> {

  private static final Pattern SIMPLE = Pattern.compile("(\\d{1,12})\\s*(ms|s|m|h|d)");

  @Override
  public Duration convert(String value) {
    return parse(value);
  }

  /** Parses {@code value}; throws {@link TypeConversionException} with a one-line explanation. */
  public static Duration parse(String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    Matcher m = SIMPLE.matcher(v);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    if (v.startsWith("p") || v.startsWith("-p")) {
      try {
        return Duration.parse(v);
      } catch (DateTimeParseException e) {
        // fall through to the common message
      }
    }
    String hint = v.matches("\\d+") ? " (a unit is required)" : "";
    throw new TypeConversionException("'" + value + "' is not a duration" + hint
        + ": use a whole number with ms, s, m, h or d (500ms, 8s, 2m, 1h) or ISO-8601 (PT8S)");
  }
}
