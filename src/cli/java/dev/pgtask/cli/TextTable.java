package dev.pgtask.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A plain-text table for humans: a header row, then rows, columns separated by two spaces. A column
 * whose cells are all numbers (or empty) is right-aligned; others are left-aligned. {@code null}
 * cells print as empty; no line ends in spaces. A run of line breaks and tabs in a cell prints as
 * one space, every other control character as {@link TerminalText#escape escaped}.
 */
public final class TextTable {

  private static final Pattern NUMBER = Pattern.compile("-?\\d+(\\.\\d+)?%?");

  private final String[] headers;
  private final List<String[]> rows = new ArrayList<>();

  /** A table with these column headers. */
  public TextTable(String... headers) {
    if (headers.length == 0) {
      throw new IllegalArgumentException("a table needs at least one column");
    }
    this.headers = headers.clone();
  }

  /** Adds a row; it must have one cell per column. Returns this table. */
  public TextTable row(Object... cells) {
    if (cells.length != headers.length) {
      throw new IllegalArgumentException("row has " + cells.length + " cells, the table " + headers.length + " columns");
    }
    String[] r = new String[cells.length];
    for (int i = 0; i < cells.length; i++) {
      r[i] = cells[i] == null ? "" : TerminalText.escape(cells[i].toString().replaceAll("[\\r\\n\\t]+", " "));
    }
    rows.add(r);
    return this;
  }

  /** Whether the table has no rows. */
  public boolean isEmpty() {
    return rows.isEmpty();
  }

  /** The table as lines joined with {@code \n}, ending with a newline. */
  public String render() {
    int n = headers.length;
    int[] width = new int[n];
    boolean[] right = new boolean[n];
    Arrays.fill(right, true);
    for (int i = 0; i < n; i++) {
      width[i] = headers[i].length();
      boolean anyValue = false;
      for (String[] r : rows) {
        width[i] = Math.max(width[i], r[i].length());
        if (!r[i].isEmpty()) {
          anyValue = true;
          right[i] &= NUMBER.matcher(r[i]).matches();
        }
      }
      right[i] &= anyValue;
    }
    StringBuilder out = new StringBuilder();
    line(out, headers, width, right);
    for (String[] r : rows) {
      line(out, r, width, right);
    }
    return out.toString();
  }

  private static void line(StringBuilder out, String[] cells, int[] width, boolean[] right) {
    StringBuilder l = new StringBuilder();
    for (int i = 0; i < cells.length; i++) {
      if (i > 0) {
        l.append("  ");
      }
      String pad = " ".repeat(width[i] - cells[i].length());
      l.append(right[i] ? pad + cells[i] : cells[i] + pad);
    }
    out.append(l.toString().stripTrailing()).append('\n');
  }

  @Override
  public String toString() {
    return render();
  }
}
