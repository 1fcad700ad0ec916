package dev.pgtask.internal.complete;

import java.io.PrintWriter;
import java.io.Writer;

/**
 * The full text of a failed attempt's error, as the attempt history stores it
 * ({@code pgtask.task_attempt.error_detail}): the exception's class and message, its stack trace,
 * and its causes and suppressed exceptions, as {@link Throwable#printStackTrace()} writes them. At
 * most {@link #MAX_CHARS} characters: a longer text is cut there, ending with a line that says how
 * many characters were left out ({@link #TRUNCATED_MARKER}).
 */
public final class ErrorText {

  /** The most characters of one attempt's error text that are stored (16 KiB of ASCII). */
  public static final int MAX_CHARS = 16_384;

  /** The start of the last line of a cut error text. */
  public static final String TRUNCATED_MARKER = "[pgtask: error text truncated: ";

  private ErrorText() {}

  /** {@code t}'s full error text, bounded; null for null. */
  public static String of(Throwable t) {
    if (t == null) {
      return null;
    }
    Bounded out = new Bounded(MAX_CHARS);
    try (PrintWriter w = new PrintWriter(out)) {
      t.printStackTrace(w);
    } catch (RuntimeException e) {
      // a throwable whose toString or getStackTrace throws: keep what was written, say why it stops
      out.write("[pgtask: the stack trace could not be written: " + e + "]");
    }
    return out.text();
  }

  /**
   * Keeps the first {@code max} characters written to it, counts the rest; {@link #text()} then
   * cuts at a line end so that the marker line fits within {@code max}.
   */
  private static final class Bounded extends Writer {
    private final StringBuilder kept = new StringBuilder();
    private final int max;
    private long total;

    Bounded(int max) {
      this.max = max;
    }

    @Override
    public void write(char[] chars, int off, int len) {
      total += len;
      int room = max - kept.length();
      if (room > 0) {
        kept.append(chars, off, Math.min(room, len));
      }
    }

    @Override
    public void write(String s) {
      write(s.toCharArray(), 0, s.length());
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}

    String text() {
      String s = kept.toString();
      if (total <= max) {
        return s.endsWith(System.lineSeparator()) ? s.substring(0, s.length() - System.lineSeparator().length()) : s;
      }
      // the marker needs room: it states the characters shown and the total
      String probe = "\n" + TRUNCATED_MARKER + max + " of " + total + " characters shown]";
      int cut = max - probe.length();
      int lineEnd = s.lastIndexOf('\n', cut);
      if (lineEnd > cut / 2) {
        cut = lineEnd; // end on a whole line when one is near
      }
      String shown = s.substring(0, cut);
      return shown + "\n" + TRUNCATED_MARKER + shown.length() + " of " + total + " characters shown]";
    }
  }
}
