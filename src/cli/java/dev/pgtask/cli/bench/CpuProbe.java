package dev.pgtask.cli.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;

/**
 * CPU time spent on a measurement, by this JVM and by the server's backends of the benchmark's
 * database: a figure that, unlike tasks/s, does not change with what else the machine runs. The
 * server's side is read from {@code /proc/<pid>/stat} of the backends listed in
 * {@code pg_stat_activity}; it is NaN where the server is not on this machine or its processes
 * cannot be read. Backends that end during the measurement are missed; backends that begin during
 * it count from their start.
 */
final class CpuProbe {

  private static final double CLOCK_TICKS_PER_SECOND = 100.0; // USER_HZ on Linux

  private final DataSource pool;
  private final long processStartNanos;
  private final Map<Integer, Long> backendTicks;

  private CpuProbe(DataSource pool) throws SQLException {
    this.pool = pool;
    this.processStartNanos = processCpuNanos();
    this.backendTicks = backendTicks(pool);
  }

  static CpuProbe start(DataSource pool) throws SQLException {
    return new CpuProbe(pool);
  }

  /** CPU ms this JVM and the server spent since the start, {client, server}. */
  double[] stopMillis() throws SQLException {
    double client = (processCpuNanos() - processStartNanos) / 1e6;
    Map<Integer, Long> now = backendTicks(pool);
    if (now == null || backendTicks == null) {
      return new double[] {client, Double.NaN};
    }
    long ticks = 0;
    for (Map.Entry<Integer, Long> e : now.entrySet()) {
      ticks += e.getValue() - backendTicks.getOrDefault(e.getKey(), 0L);
    }
    return new double[] {client, ticks * 1000.0 / CLOCK_TICKS_PER_SECOND};
  }

  private static long processCpuNanos() {
    var os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
      return sun.getProcessCpuTime();
    }
    return 0;
  }

  /** utime + stime of each backend of the current database, or null where /proc cannot tell. */
  private static Map<Integer, Long> backendTicks(DataSource pool) throws SQLException {
    Map<Integer, Long> ticks = new HashMap<>();
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pid, pid = pg_backend_pid() AS own FROM pg_stat_activity WHERE datname = current_database()")) {
      while (rs.next()) {
        int pid = rs.getInt("pid");
        try {
          if (rs.getBoolean("own") && !Files.readString(Path.of("/proc", Integer.toString(pid), "cmdline")).startsWith("postgres")) {
            return null; // our own backend's pid is not a local postgres process: the server is elsewhere
          }
          String s = Files.readString(Path.of("/proc", Integer.toString(pid), "stat"));
          // the fields after the command name, which is in parentheses and may contain spaces
          String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
          ticks.put(pid, Long.parseLong(f[11]) + Long.parseLong(f[12]));
        } catch (IOException | RuntimeException e) {
          if (rs.getBoolean("own")) {
            return null; // cannot read our own backend: no /proc, another machine, or not allowed
          }
          // a backend that ended meanwhile: not counted
        }
      }
    }
    return ticks;
  }
}
