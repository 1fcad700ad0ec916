package dev.pgtask.internal.sql;

import java.util.Arrays;
import java.util.List;

/**
 * One row of a pgtask view as {@link ViewReads} read it: every column of the view, in the view's
 * order, with its value as a plain Java object ({@code Long}, {@code Integer}, {@code Double},
 * {@code Boolean}, {@code String}, {@code Instant} for {@code timestamptz}, {@code Duration} for
 * {@code interval}, {@code Integer[]}/{@code Long[]}/{@code String[]} for arrays, the text form for
 * any other type), {@code null} for SQL {@code NULL}.
 */
public final class ViewRow {

  private final String view;
  private final String[] columns;
  private final Object[] values;

  ViewRow(String view, String[] columns, Object[] values) {
    this.view = view;
    this.columns = columns;
    this.values = values;
  }

  /** The view's column names, in its order. */
  public List<String> columns() {
    return List.of(columns);
  }

  /** The value of column {@code i} (0-based). */
  public Object value(int i) {
    return values[i];
  }

  /**
   * The value of {@code column}.
   *
   * @throws IllegalArgumentException when the view has no such column (a renamed column fails
   *     loudly instead of printing as empty)
   */
  public Object get(String column) {
    for (int i = 0; i < columns.length; i++) {
      if (columns[i].equals(column)) {
        return values[i];
      }
    }
    throw new IllegalArgumentException("pgtask." + view + " has no column " + column + " (it has "
        + String.join(", ", columns) + ")");
  }

  /** The value of {@code column} as a {@code type} (e.g. {@code Long.class}), or {@code null}. */
  public <T> T get(String column, Class<T> type) {
    return type.cast(get(column));
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(view).append('[');
    for (int i = 0; i < columns.length; i++) {
      Object v = values[i];
      b.append(i == 0 ? "" : ", ").append(columns[i]).append('=')
          .append(v instanceof Object[] a ? Arrays.toString(a) : v);
    }
    return b.append(']').toString();
  }
}
