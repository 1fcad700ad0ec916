package dev.pgtask.internal.schedule;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.parser.CronParser;
import dev.pgtask.InvalidScheduleException;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The cron syntax of schedules, checked in Java with cron-utils before a declaration reaches the
 * database (which checks it again with the same rules, see {@code pgtask.cron_parse}): five fields
 * read as Unix cron, six (seconds first) as Spring 5.3 reads them, macros mapped to their six-field
 * form. cron-utils parses; what it accepts and the database's evaluator does not support
 * ({@code L}, {@code W}, {@code #}) is refused here too. Fire times are the database's alone:
 * cron-utils is never asked for one (its DST handling differs, see docs/how-it-works.md).
 */
public final class CronSyntax {

  private static final CronParser UNIX = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  private static final CronParser SPRING = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

  /** The macros and their six-field form, as {@code pgtask.cron_macro} has them. */
  public static final Map<String, String> MACROS = Map.of(
      "@yearly", "0 0 0 1 1 *",
      "@annually", "0 0 0 1 1 *",
      "@monthly", "0 0 0 1 * *",
      "@weekly", "0 0 0 * * 0",
      "@daily", "0 0 0 * * *",
      "@midnight", "0 0 0 * * *",
      "@hourly", "0 0 * * * *");

  private static final Pattern NAMES = Pattern.compile("(?i)\\b(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)\\b");
  private static final Pattern UNSUPPORTED = Pattern.compile("[LlWw#]");

  private CronSyntax() {}

  /**
   * Checks {@code expression}; returns it normalized (one space between fields, macros kept).
   *
   * @throws InvalidScheduleException (constraint {@code schedule_cron}) naming what is wrong
   */
  public static String check(String expression) {
    if (expression == null || expression.isBlank()) {
      throw invalid("cron expression must not be empty");
    }
    String expr = expression.strip().replaceAll("\\s+", " ");
    String fields = expr;
    if (expr.startsWith("@")) {
      fields = MACROS.get(expr.toLowerCase(Locale.ROOT));
      if (fields == null) {
        throw invalid("cron expression \"" + truncate(expr) + "\": unknown macro (known: @yearly @annually @monthly "
            + "@weekly @daily @midnight @hourly)");
      }
    }
    int n = fields.split(" ").length;
    if (n != 5 && n != 6) {
      throw invalid("cron expression \"" + truncate(expr) + "\" has " + n
          + " fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (second first)");
    }
    if (UNSUPPORTED.matcher(NAMES.matcher(fields).replaceAll("")).find()) {
      throw invalid("cron expression \"" + truncate(expr) + "\": L, W and # are not supported");
    }
    try {
      Cron cron = (n == 5 ? UNIX : SPRING).parse(fields);
      cron.validate();
    } catch (IllegalArgumentException e) {
      throw invalid("cron expression \"" + truncate(expr) + "\": " + e.getMessage());
    }
    return expr;
  }

  private static InvalidScheduleException invalid(String message) {
    return new InvalidScheduleException("schedule_cron", "pgtask: invalid schedule: " + message);
  }

  private static String truncate(String s) {
    return s.length() > 100 ? s.substring(0, 100) : s;
  }
}
