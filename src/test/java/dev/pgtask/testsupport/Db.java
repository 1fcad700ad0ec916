package dev.pgtask.testsupport;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/** Small query helpers for tests (test code only: production SQL lives in internal.sql). */
public final class Db {

  private final TestDatabase db;

  public Db(TestDatabase db) {
    this.db = db;
  }

  public void exec(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  public long count(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : -1;
    }
  }

  public String text(String sql) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  public List<Double> doubles(String sql) throws SQLException {
    List<Double> out = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getDouble(1));
      }
    }
    return out;
  }

  /** Rows as tab-separated strings (for printing). */
  public List<String> rows(String sql) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
          b.append(i > 1 ? "\t" : "").append(rs.getString(i));
        }
        out.add(b.toString());
      }
    }
    return out;
  }

  /** The value at quantile q (0..1) of a sorted copy. */
  public static double quantile(List<Double> values, double q) {
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(Double::compare);
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }
}
