package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The benchmark's database: its pools, and the statements it runs between measurements (emptying
 * the task table, vacuuming, counting, sizing, waiting for a worker's listener).
 */
final class BenchDatabase {

  private final String url;
  private final Properties props;

  BenchDatabase(String url, Properties props) {
    this.url = url;
    this.props = props;
  }

  /** The JDBC URL, for a connection of another process ({@link NotifyReceiver}). */
  String url() {
    return url;
  }

  /** The driver properties (a copy), for a connection of another process. */
  Properties props() {
    Properties copy = new Properties();
    copy.putAll(props);
    return copy;
  }

  HikariDataSource pool(int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setDataSourceProperties(props);
    config.setMaximumPoolSize(size);
    // connections as the measurements need them, not all at the start (HikariCP's default): the
    // bench's pool of 60 would otherwise hold 60 of a shared server's 100 from its first statement
    config.setMinimumIdle(Math.min(size, 2));
    config.setPoolName("pgtask-bench");
    config.addDataSourceProperty("ApplicationName", "pgtask bench");
    return new HikariDataSource(config);
  }

  static void resetTasks(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      // the attempt history and the dependencies reference the tasks: TRUNCATE names all three
      st.execute("TRUNCATE pgtask.task, pgtask.task_attempt, pgtask.task_dependency");
      st.execute("DELETE FROM pgtask.worker");
    }
  }

  /** Deletes the tasks whose id is above {@code id} (and, by cascade, their attempts and dependencies). */
  static void deleteTasksAbove(HikariDataSource pool, long id) throws SQLException {
    try (Connection c = pool.getConnection(); java.sql.PreparedStatement ps = c.prepareStatement("DELETE FROM pgtask.task WHERE id > ?")) {
      ps.setLong(1, id);
      ps.executeUpdate();
    }
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("DELETE FROM pgtask.worker");
    }
  }

  /** The completed tasks whose id is above {@code id}, counted over the primary key. */
  static long countCompletedAbove(HikariDataSource pool, long id) throws SQLException {
    try (Connection c = pool.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement("SELECT count(*) AS completed FROM pgtask.task WHERE id > ? AND state = 'completed'")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong("completed");
      }
    }
  }

  static void vacuumAnalyze(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("VACUUM ANALYZE pgtask.task");
    }
  }

  static long countCompleted(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) AS completed FROM pgtask.task WHERE state = 'completed'")) {
      rs.next();
      return rs.getLong("completed");
    }
  }

  static long[] tableSize(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_total_relation_size('pgtask.task') AS bytes, "
            + "coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'pgtask.task'::regclass), 0) AS dead")) {
      rs.next();
      return new long[] {rs.getLong("bytes"), rs.getLong("dead")};
    }
  }

  static void waitForListener(HikariDataSource pool) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try (Connection c = pool.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) AS listeners FROM pg_stat_activity WHERE application_name LIKE 'pgtask listen %' "
              + "AND datname = current_database()")) {
        rs.next();
        if (rs.getLong("listeners") > 0) {
          Thread.sleep(200);
          return;
        }
      }
      Thread.sleep(20);
    }
  }
}
