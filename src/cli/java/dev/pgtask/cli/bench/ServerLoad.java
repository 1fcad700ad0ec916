package dev.pgtask.cli.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the workers of one {@code bench --scale} run cost the server and themselves, read while they
 * run: the CPU time of every backend of the database but the benchmark's own (from
 * {@code /proc/<pid>/stat}; a backend that starts during the run counts from its start, one that
 * ends counts until the last sample that saw it, taken every {@link #sample} call), of PgBouncer
 * and of the worker processes; the transactions the database ended ({@code pg_stat_database});
 * and the LISTEN sessions of the workers connected ({@code pg_stat_activity}, {@code application_name}
 * {@code pgtask listen <worker>}; whether each LISTENs the server does not show). All reads go through the benchmark's own session (its
 * application_name is {@value #OWN_NAME}), whose statements are counted so that its transactions
 * can be left out.
 */
final class ServerLoad {

  /** The application_name of every session of the benchmark itself (left out of the CPU figures). */
  static final String OWN_NAME = "pgtask bench scale";

  private final Connection own;
  private final boolean local;
  private final long bouncerPid;
  private final List<Long> workerPids;
  // per backend: ticks when first seen in this run (0 for one that started during it), and last seen
  private final Map<Integer, long[]> backends = new HashMap<>();
  private final long bouncerStart;
  private final long workersStart;
  private long ownStatements;
  private long listenerSamples;
  private long listenerSum;

  /** Starts counting; {@code bouncerPid} 0 when PgBouncer is not ours (its CPU is then NaN). */
  ServerLoad(Connection own, long bouncerPid, List<Long> workerPids) throws SQLException {
    this.own = own;
    this.local = ProcCpu.isLocalPostgres(ownPid(own));
    this.bouncerPid = bouncerPid;
    this.workerPids = workerPids;
    this.bouncerStart = bouncerPid > 0 ? ProcCpu.ticks(bouncerPid) : -1;
    this.workersStart = workerTicks();
    sample(true);
  }

  /** Reads every backend's CPU time and the listening sessions (call every few hundred ms while the run lasts). */
  void sample() throws SQLException {
    sample(false);
  }

  private void sample(boolean first) throws SQLException {
    long listeners = 0;
    try (Statement st = own.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT pid, application_name LIKE 'pgtask listen %' AS listens FROM pg_stat_activity "
            + "WHERE datname = current_database() AND application_name <> '" + OWN_NAME + "'")) {
      ownStatements++;
      while (rs.next()) {
        int pid = rs.getInt("pid");
        if (rs.getBoolean("listens")) {
          listeners++;
        }
        if (!local) {
          continue;
        }
        long ticks = ProcCpu.ticks(pid);
        if (ticks < 0) {
          continue; // ended meanwhile
        }
        long[] seen = backends.computeIfAbsent(pid, p -> new long[] {first ? ticks : 0, ticks});
        seen[1] = ticks;
      }
    }
    listenerSamples++;
    listenerSum += listeners;
  }

  /** CPU ms of the database's backends since the start, NaN when the server is not on this machine. */
  double serverMillis() {
    if (!local) {
      return Double.NaN;
    }
    long ticks = 0;
    for (long[] seen : backends.values()) {
      ticks += seen[1] - seen[0];
    }
    return ProcCpu.millis(ticks);
  }

  /** PgBouncer's CPU ms since the start, NaN when it is not ours. */
  double bouncerMillis() {
    long now = bouncerPid > 0 ? ProcCpu.ticks(bouncerPid) : -1;
    return bouncerStart < 0 || now < 0 ? Double.NaN : ProcCpu.millis(now - bouncerStart);
  }

  /** The worker processes' CPU ms since the start. */
  double workersMillis() {
    return ProcCpu.millis(workerTicks() - workersStart);
  }

  /** The workers' LISTEN sessions connected, mean over the samples. */
  double listenSessionsMean() {
    return listenerSamples == 0 ? 0 : (double) listenerSum / listenerSamples;
  }

  /** Statements (each a transaction of its own, in autocommit) this reader sent so far. */
  long ownStatements() {
    return ownStatements;
  }

  /** The database's ended transactions so far (commits + rollbacks), read fresh; counts as one own statement. */
  long transactions() throws SQLException {
    try (Statement st = own.createStatement()) {
      st.execute("SELECT pg_stat_clear_snapshot()");
      ownStatements++;
      try (ResultSet rs = st.executeQuery("SELECT xact_commit + xact_rollback AS xacts FROM pg_stat_database "
          + "WHERE datname = current_database()")) {
        ownStatements++;
        rs.next();
        return rs.getLong("xacts");
      }
    }
  }

  private long workerTicks() {
    long sum = 0;
    for (long pid : workerPids) {
      sum += Math.max(0, ProcCpu.ticks(pid));
    }
    return sum;
  }

  private static int ownPid(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid() AS pid")) {
      rs.next();
      return rs.getInt("pid");
    }
  }
}
