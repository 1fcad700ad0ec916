package dev.pgtask.internal.sql;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.util.PGInterval;
import org.postgresql.util.PGobject;

/**
 * The reads behind the operator commands of {@code bin/pgtask} ({@code status}, {@code locks},
 * {@code workers}, {@code tasks}): one method per public view, in plain JDBC over one connection.
 *
 * <p>These are the one exception to "every query through jOOQ": an operator command that prints a
 * view must answer in a fraction of a second, and jOOQ's initialization (with HikariCP's and
 * Jackson's) cost more than a second of a command's 1.5 s; the statements here are a
 * {@code SELECT *} of a public view with an order, nothing a typed query would check. Every column
 * of the view is read, in the view's order (as a jOOQ {@code selectFrom} of the generated view
 * class does); {@code ViewReadsTest} checks that the values equal those of the generated
 * records. Views read {@code pg_locks} and {@code pg_stat_activity}, which take no lock.
 */
public final class ViewReads {

  private ViewReads() {}

  /** Every queue's counts and lag, by queue name. Locks: none. */
  public static List<ViewRow> queueSummary(Connection c) throws SQLException {
    return read(c, "queue_summary", "ORDER BY queue");
  }

  /** The one row of {@code pgtask.health}. Locks: none. */
  public static ViewRow health(Connection c) throws SQLException {
    List<ViewRow> rows = read(c, "health", "");
    if (rows.size() != 1) {
      throw new SQLException("pgtask.health returned " + rows.size() + " rows, not one");
    }
    return rows.get(0);
  }

  /** What no live worker can run ({@code pgtask.unrunnable}), most tasks first. Locks: none. */
  public static List<ViewRow> unrunnable(Connection c) throws SQLException {
    return read(c, "unrunnable", "ORDER BY tasks DESC, queue, kind");
  }

  /** Every schedule ({@code pgtask.schedules}), by name. Locks: none. */
  public static List<ViewRow> schedules(Connection c) throws SQLException {
    return read(c, "schedules", "ORDER BY name");
  }

  /** The maintenance lease's row ({@code pgtask.maintenance_leader}), or null when none was ever taken. Locks: none. */
  public static ViewRow maintenanceLeader(Connection c) throws SQLException {
    List<ViewRow> rows = read(c, "maintenance_leader", "");
    return rows.isEmpty() ? null : rows.get(0);
  }

  /** Paused queues, with or without tasks, by name. Locks: none. */
  public static List<ViewRow> pausedQueues(Connection c) throws SQLException {
    return read(c, "paused_queues", "ORDER BY queue");
  }

  /** The busiest tenants of the last 15 minutes (at most {@code limit}), in the view's order. Locks: none. */
  public static List<ViewRow> tenantLoad(Connection c, int limit) throws SQLException {
    return read(c, "tenant_load", "LIMIT ?", limit);
  }

  /** Tenant locks held right now, longest held first. Locks: none. */
  public static List<ViewRow> tenantLocks(Connection c) throws SQLException {
    return read(c, "tenant_locks", "ORDER BY xact_start ASC NULLS LAST, tenant");
  }

  /** Running tasks, longest running first; only those with a tenant when {@code withTenantOnly}. Locks: none. */
  public static List<ViewRow> running(Connection c, boolean withTenantOnly) throws SQLException {
    return read(c, "running", (withTenantOnly ? "WHERE tenant IS NOT NULL " : "")
        + "ORDER BY started_at ASC NULLS LAST, task_id");
  }

  /** Live workers (seen in the last minute), by id. Locks: none. */
  public static List<ViewRow> workers(Connection c) throws SQLException {
    return read(c, "workers", "ORDER BY id");
  }

  /**
   * Tasks, newest first, filtered by the non-null arguments ({@code state} as the view writes it:
   * {@code scheduled}, {@code available}, ...). Locks: none.
   */
  public static List<ViewRow> tasks(Connection c, String state, String queue, String kind, int limit)
      throws SQLException {
    List<String> where = new ArrayList<>();
    List<Object> args = new ArrayList<>();
    if (state != null) {
      where.add("state = ?");
      args.add(state);
    }
    if (queue != null) {
      where.add("queue = ?");
      args.add(queue);
    }
    if (kind != null) {
      where.add("kind = ?");
      args.add(kind);
    }
    args.add(limit);
    return read(c, "tasks", (where.isEmpty() ? "" : "WHERE " + String.join(" AND ", where) + " ")
        + "ORDER BY id DESC LIMIT ?", args.toArray());
  }

  /** {@code SELECT * FROM pgtask.<view> <rest>} with {@code args} bound in order. */
  private static List<ViewRow> read(Connection c, String view, String rest, Object... args) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("SELECT * FROM pgtask." + view + (rest.isEmpty() ? "" : " " + rest))) {
      for (int i = 0; i < args.length; i++) {
        st.setObject(i + 1, args[i]);
      }
      try (ResultSet rs = st.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        int n = md.getColumnCount();
        String[] columns = new String[n];
        String[] types = new String[n];
        for (int i = 0; i < n; i++) {
          columns[i] = md.getColumnLabel(i + 1);
          types[i] = md.getColumnTypeName(i + 1);
        }
        List<ViewRow> rows = new ArrayList<>();
        while (rs.next()) {
          Object[] values = new Object[n];
          for (int i = 0; i < n; i++) {
            values[i] = value(rs, i + 1, types[i]);
          }
          rows.add(new ViewRow(view, columns, values));
        }
        return rows;
      }
    }
  }

  private static Object value(ResultSet rs, int i, String type) throws SQLException {
    switch (type) {
      case "timestamptz": {
        OffsetDateTime t = rs.getObject(i, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
      }
      case "interval": {
        Object v = rs.getObject(i);
        return v == null ? null : duration((PGInterval) v);
      }
      default:
        break;
    }
    if (type.startsWith("_")) {
      Array a = rs.getArray(i);
      if (a == null) {
        return null;
      }
      try {
        return a.getArray();
      } finally {
        a.free();
      }
    }
    Object v = rs.getObject(i);
    return v instanceof PGobject p ? p.getValue() : v;
  }

  /**
   * An interval as a {@link Duration}, each field with its own sign (as PostgreSQL stores it);
   * a month counts as 30 days and a year as 12 months, as {@code justify_interval} does.
   */
  static Duration duration(PGInterval i) {
    long months = (long) i.getYears() * 12 + i.getMonths();
    return Duration.ofDays(months * 30 + i.getDays())
        .plusHours(i.getHours())
        .plusMinutes(i.getMinutes())
        .plusSeconds(i.getWholeSeconds())
        .plusNanos(i.getMicroSeconds() * 1000L);
  }
}
