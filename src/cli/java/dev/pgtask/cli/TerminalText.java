package dev.pgtask.cli;

import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;

/**
 * The one escaping of values the CLI prints: a task's kind, queue, tenant, error, a worker id, any
 * text that came from the database. Any producer can choose those, and a control character among
 * them would reach the operator's terminal: ESC starts a sequence that can clear the screen, move
 * the cursor or rewrite what is shown, C1 characters do the same on terminals that read them, and
 * the Unicode bidirectional controls reorder what is displayed. Every such character prints as
 * {@code \}{@code uXXXX} instead: in plain text through {@link #escape}, in JSON through
 * {@link #JSON} (Jackson escapes C0 itself; these add DEL, C1 and the bidirectional controls).
 */
final class TerminalText {

  private TerminalText() {}

  /**
   * Whether {@code c} must not reach a terminal raw: C0 controls (including ESC, tab and newlines),
   * DEL, C1 controls (U+0080 to U+009F), the bidirectional marks, embeddings, overrides and
   * isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), and the line and
   * paragraph separators U+2028 and U+2029.
   */
  static boolean isUnsafe(int c) {
    return c < 0x20 || (c >= 0x7F && c <= 0x9F)
        || c == 0x061C || c == 0x200E || c == 0x200F
        || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069)
        || c == 0x2028 || c == 0x2029;
  }

  /** {@code value} as text with every {@linkplain #isUnsafe unsafe} character written {@code \}{@code uXXXX}; null as empty. */
  static String escape(Object value) {
    if (value == null) {
      return "";
    }
    String s = value.toString();
    int i = 0;
    while (i < s.length() && !isUnsafe(s.charAt(i))) {
      i++;
    }
    if (i == s.length()) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length() + 16).append(s, 0, i);
    for (; i < s.length(); i++) {
      char c = s.charAt(i);
      if (isUnsafe(c)) {
        b.append(String.format("\\u%04X", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** Jackson's character escapes for the CLI's JSON: the same characters as {@link #escape}, as JSON's {@code \}{@code uXXXX}. */
  static final CharacterEscapes JSON = new CharacterEscapes() {
    private static final long serialVersionUID = 1L;

    private final int[] ascii = ascii();

    private int[] ascii() {
      int[] codes = CharacterEscapes.standardAsciiEscapesForJSON();
      codes[0x7F] = CharacterEscapes.ESCAPE_STANDARD;
      return codes;
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      // null: written as it is. For an unsafe character, a sequence naming its code
      return isUnsafe(ch) ? new com.fasterxml.jackson.core.io.SerializedString(String.format("\\u%04X", ch)) : null;
    }
  };
}
