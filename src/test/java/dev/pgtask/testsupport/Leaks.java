package dev.pgtask.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** Checks that nothing pgtask does outlives its transaction. */
public final class Leaks {

  private Leaks() {}

  /** Advisory locks held by any session of the database, as "pid:classid:objid" strings. */
  public static List<String> advisoryLocks(TestDatabase db) throws SQLException {
    List<String> locks = new ArrayList<>();
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT l.pid, l.classid, l.objid FROM pg_locks l "
            + "JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = current_database()")) {
      while (rs.next()) {
        locks.add(rs.getInt(1) + ":" + rs.getLong(2) + ":" + rs.getLong(3));
      }
    }
    return locks;
  }

  /** Asserts no session holds an advisory lock in the test database. */
  public static void assertNoAdvisoryLocks(TestDatabase db) throws SQLException {
    assertThat(advisoryLocks(db)).as("advisory locks left behind (pid:namespace:key)").isEmpty();
  }

  /**
   * Borrows every idle connection the pool will give and asserts each holds no lock, is not in a
   * transaction, has default application_name, statement_timeout and idle timeout, and no claim
   * hand-over setting ({@code pgtask.claim_head}) left by a claim-and-start.
   */
  public static void assertPoolConnectionsClean(DataSource pool, int count) throws SQLException {
    List<Connection> borrowed = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        Connection c = pool.getConnection();
        borrowed.add(c);
        assertThat(c.getAutoCommit()).as("pooled connection autocommit").isTrue();
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
                + "AND locktype IN ('advisory', 'tuple', 'transactionid') AND granted), "
                + "current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'), "
                + "current_setting('application_name'), coalesce(current_setting('pgtask.claim_head', true), '')")) {
          rs.next();
          assertThat(rs.getLong(1)).as("locks held by a connection back in the pool").isZero();
          assertThat(rs.getString(2)).as("statement_timeout of a pooled connection").isEqualTo("0");
          assertThat(rs.getString(3)).as("idle_in_transaction_session_timeout of a pooled connection").isEqualTo("0");
          assertThat(rs.getString(4)).as("application_name of a pooled connection").doesNotContain(" task ");
          assertThat(rs.getString(5)).as("pgtask.claim_head (the claim's hand-over) on a pooled connection").isEmpty();
        }
      }
    } finally {
      for (Connection c : borrowed) {
        c.close();
      }
    }
  }
}
