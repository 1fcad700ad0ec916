package dev.pgtask.internal.sql;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;

/**
 * Putting back the tasks a worker's claims left without a holder (at shutdown, and after a claim
 * whose answer was lost), when nothing may wait long.
 */
public final class OrphanQueries {

  private OrphanQueries() {}

  /**
   * {@link OutcomeQueries#releaseOrphans} in a transaction of its own on {@code c} (autocommit on
   * return) with a lock timeout of one second: at shutdown nothing may wait long, and a table locked
   * by someone else keeps the rows for rescue. Returns how many tasks were put back. Locks the rows
   * it puts back (skipping rows locked by others), until its commit.
   */
  public static int releaseOrphans(Connection c, String owner, Collection<Long> held) throws SQLException {
    int n;
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("SET LOCAL lock_timeout = '1s'");
      n = OutcomeQueries.releaseOrphans(Sql.using(c), owner, held);
      c.commit();
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
    return n;
  }
}
