package dev.pgtask.cli;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses the CLI's instants ({@code --run-at}, {@code --from}, {@code --until}): ISO-8601 with a zone
 * or offset, {@code 2026-12-04T10:00:00Z} or {@code 2026-12-04T11:00:00+01:00}. A local date and time
 * is refused as ambiguous.
 */
public final class InstantConverter implements ITypeConverter<Instant> {

  @Override
  public Instant convert(String value) {
    return parse(value);
  }

  /** Parses {@code value}; throws {@link TypeConversionException} with a one-line explanation. */
  public static Instant parse(String value) {
    String v = value == null ? "" : value.trim();
    try {
      return Instant.parse(v);
    } catch (DateTimeParseException e) {
      // try with an offset
    }
    try {
      return OffsetDateTime.parse(v).toInstant();
    } catch (DateTimeParseException e) {
      throw new TypeConversionException("'" + value
          + "' is not an ISO-8601 instant with a zone or offset, e.g. 2030-01-31T09:00:00Z or 2030-01-31T10:00:00+01:00");
    }
  }
}
