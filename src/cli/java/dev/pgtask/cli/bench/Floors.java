package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The raw-SQL floors: no pgtask code, what a correct queue of each kind must at least cost on this
 * machine's PostgreSQL, on a scratch table in the {@code pgtask_bench} schema.
 */
final class Floors {

  private final Benchmark.Sizes sizes;
  private final BenchReport report;

  Floors(Benchmark.Sizes sizes, BenchReport report) {
    this.sizes = sizes;
    this.report = report;
  }

  private static final int FLOOR_CLAIM = 50;
  private static final int FLOOR_TENANTS = 2_000;
  private static final int FLOOR_LOCK_NAMESPACE = 4242;

  /** A scratch task table of {@code n} available rows (state 0), each with a tenant. */
  private void floorTable(HikariDataSource pool, int n) throws SQLException {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS pgtask_bench CASCADE");
      st.execute("CREATE SCHEMA pgtask_bench");
      st.execute("CREATE TABLE pgtask_bench.raw (id bigserial PRIMARY KEY, state int NOT NULL DEFAULT 0, "
          + "tenant int NOT NULL, kind text NOT NULL DEFAULT 'noop', payload jsonb NOT NULL DEFAULT '{}', "
          + "run_at timestamptz NOT NULL DEFAULT now(), attempt int NOT NULL DEFAULT 0)");
      st.execute("CREATE INDEX ON pgtask_bench.raw (run_at, id) WHERE state = 0");
      st.execute("INSERT INTO pgtask_bench.raw (tenant) SELECT i % " + FLOOR_TENANTS + " FROM generate_series(1, " + n + ") i");
      st.execute("VACUUM ANALYZE pgtask_bench.raw");
    }
  }

  private static final String FLOOR_CLAIM_SQL = "UPDATE pgtask_bench.raw r SET state = 1, attempt = r.attempt + 1 "
      + "FROM (SELECT id FROM pgtask_bench.raw WHERE state = 0 AND run_at <= now() ORDER BY run_at, id LIMIT "
      + FLOOR_CLAIM + " FOR UPDATE SKIP LOCKED) c WHERE r.id = c.id RETURNING r.id, r.tenant";

  /** Claims up to 50 rows (marking them running) and commits; returns {id, tenant} pairs. */
  private static List<long[]> floorClaim(Connection c, PreparedStatement claim) throws SQLException {
    List<long[]> got = new ArrayList<>(FLOOR_CLAIM);
    try (ResultSet rs = claim.executeQuery()) {
      while (rs.next()) {
        got.add(new long[] {rs.getLong("id"), rs.getLong("tenant")});
      }
    }
    if (!c.getAutoCommit()) {
      c.commit();
    }
    return got;
  }

  /**
   * The at-least-once floor (what plain mode must cost): claim 50 per statement with SKIP LOCKED,
   * marking them running, commit; complete them in one statement, commit. Two row writes per task,
   * 8 connections.
   */
  double plainFloor(HikariDataSource pool) throws Exception {
    int n = sizes.drainTasks();
    floorTable(pool, n);
    return report.parallel(pool, 8, worker -> {
      int taken = 0;
      try (Connection c = pool.getConnection();
          PreparedStatement claim = c.prepareStatement(FLOOR_CLAIM_SQL);
          PreparedStatement complete = c.prepareStatement("UPDATE pgtask_bench.raw SET state = 2 WHERE id = ANY (?)")) {
        c.setAutoCommit(true);
        while (true) {
          List<long[]> got = floorClaim(c, claim);
          if (got.isEmpty()) {
            return taken;
          }
          Long[] ids = new Long[got.size()];
          for (int i = 0; i < ids.length; i++) {
            ids[i] = got.get(i)[0];
          }
          complete.setArray(1, c.createArrayOf("bigint", ids));
          complete.executeUpdate();
          taken += got.size();
        }
      }
    });
  }

  /**
   * The per-task transaction floor (what the defaults must cost) and, with {@code perTransaction}
   * above 1, the batched transaction floor: claim 50 per statement and commit; then per task, in a
   * transaction (or a savepoint of one of {@code perTransaction} tasks): re-lock its row, take
   * {@code pg_try_advisory_xact_lock} on its tenant, mark it completed; commit. Two round trips per
   * task, as few as a transaction that runs code between its lock and its completion can take:
   * the lock (with BEGIN, or the savepoint), then the completion (with COMMIT, or the release).
   * Concurrency 10.
   */
  double transactionFloor(HikariDataSource pool, int perTransaction) throws Exception {
    int n = sizes.drainTasks();
    floorTable(pool, n);
    String lock = "SELECT r.id, pg_try_advisory_xact_lock(" + FLOOR_LOCK_NAMESPACE + ", r.tenant) FROM pgtask_bench.raw r "
        + "WHERE r.id = ? AND r.state = 1 FOR UPDATE";
    String savepointLock = "SAVEPOINT t; " + lock;
    String complete = "UPDATE pgtask_bench.raw SET state = 2 WHERE id = ?; " + (perTransaction == 1 ? "COMMIT" : "RELEASE SAVEPOINT t");
    return report.parallel(pool, 10, worker -> {
      int taken = 0;
      try (Connection claimConn = pool.getConnection(); Connection c = pool.getConnection();
          PreparedStatement claim = claimConn.prepareStatement(FLOOR_CLAIM_SQL);
          PreparedStatement lockPs = c.prepareStatement(perTransaction == 1 ? lock : savepointLock);
          PreparedStatement completePs = c.prepareStatement(complete)) {
        claimConn.setAutoCommit(true);
        c.setAutoCommit(false);
        while (true) {
          List<long[]> got = floorClaim(claimConn, claim);
          if (got.isEmpty()) {
            return taken;
          }
          int inTransaction = 0;
          for (long[] task : got) {
            lockPs.setLong(1, task[0]);
            lockPs.execute();
            drainResults(lockPs);
            completePs.setLong(1, task[0]);
            completePs.execute();
            drainResults(completePs);
            taken++;
            if (perTransaction > 1 && ++inTransaction == perTransaction) {
              c.commit();
              inTransaction = 0;
            }
          }
          if (perTransaction > 1) {
            c.commit();
          }
        }
      }
    });
  }

  private static void drainResults(PreparedStatement ps) throws SQLException {
    do {
      ResultSet rs = ps.getResultSet();
      if (rs != null) {
        try (rs) {
          while (rs.next()) {
            // the lock's row and result
          }
        }
      }
    } while (ps.getMoreResults() || ps.getUpdateCount() != -1);
  }

  /**
   * The notification floor: a bare {@code pg_notify} in a transaction on one connection, received by
   * a LISTENing connection blocked in pgjdbc's {@code getNotifications(timeout)}; from the
   * {@code COMMIT} to receipt (a notification is sent at commit). Returns {p50, p99} in ms.
   */
  double[] notifyFloor(HikariDataSource pool, boolean durable) throws Exception {
    if (durable) {
      try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
        st.execute("CREATE SCHEMA IF NOT EXISTS pgtask_bench");
        st.execute("DROP TABLE IF EXISTS pgtask_bench.notify_write");
        st.execute("CREATE TABLE pgtask_bench.notify_write (id bigserial PRIMARY KEY, payload text NOT NULL)");
      }
    }
    // durable: the notification's transaction also inserts a row, so its commit waits for the WAL
    // flush before the notification goes out, as an enqueue's does; a transaction that only
    // notifies writes no WAL before its commit record and commits without waiting for the flush
    String sql = durable
        ? "WITH w AS (INSERT INTO pgtask_bench.notify_write (payload) VALUES (?) RETURNING payload) "
            + "SELECT pg_notify('pgtask_bench_floor', payload) FROM w"
        : "SELECT pg_notify('pgtask_bench_floor', ?)";
    try (Connection listen = pool.getConnection(); Connection send = pool.getConnection();
        PreparedStatement notify = send.prepareStatement(sql)) {
      try (Statement st = listen.createStatement()) {
        st.execute("LISTEN pgtask_bench_floor");
      }
      send.setAutoCommit(false);
      org.postgresql.PGConnection pg = listen.unwrap(org.postgresql.PGConnection.class);
      List<Double> ms = new ArrayList<>();
      for (int i = 0; i < sizes.latencyTasks() + 20; i++) {
        notify.setString(1, Integer.toString(i));
        try (ResultSet rs = notify.executeQuery()) {
          rs.next();
        }
        long t0 = System.nanoTime();
        send.commit();
        boolean received = false;
        while (!received) {
          org.postgresql.PGNotification[] got = pg.getNotifications(10_000);
          if (got == null) {
            throw new IllegalStateException("the notification floor's NOTIFY did not arrive within 10 s");
          }
          for (org.postgresql.PGNotification g : got) {
            received |= g.getParameter().equals(Integer.toString(i));
          }
        }
        if (i >= 20) {
          ms.add((System.nanoTime() - t0) / 1e6);
        }
        Thread.sleep(5);
      }
      send.setAutoCommit(true);
      try (Statement st = listen.createStatement()) {
        st.execute("UNLISTEN *");
      }
      Collections.sort(ms);
      return new double[] {Stat.quantile(ms, 0.50), Stat.quantile(ms, 0.99)};
    }
  }
}
