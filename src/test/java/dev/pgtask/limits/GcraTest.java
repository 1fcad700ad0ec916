package dev.pgtask.limits;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rate limit's arithmetic (pgtask.take_tokens, GCRA on the database clock; a test clock here):
 * a full bucket grants its burst at once, then one token per 1/rate; in any window of w seconds at
 * most burst + rate × w are granted; a refund gives one back but never more than a full burst;
 * a changed rate keeps the bucket's state.
 */
class GcraTest {

  private static TestDatabase db;
  private static final String T0 = "2026-01-01 00:00:00+00";

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("gcra");
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  private int id;

  @BeforeEach
  void aRateOfTenWithBurstFive() throws SQLException {
    try (Connection c = db.connect()) {
      c.createStatement().execute("DELETE FROM pgtask.flow_limit");
      c.createStatement().execute("SELECT pgtask.set_limit('kind', 'gcra.k', per_second => 10, burst => 5)");
      id = (int) query(c, "SELECT id FROM pgtask.flow_limit WHERE key = 'gcra.k'");
    }
  }

  private long take(Connection c, int wanted, double atSeconds, boolean refund) throws SQLException {
    return query(c, "SELECT granted FROM pgtask.take_tokens(ARRAY[" + id + "], ARRAY[" + wanted + "], "
        + (refund ? "ARRAY[" + id + "]" : "NULL") + ", timestamptz '" + T0 + "' + interval '" + atSeconds + " s')");
  }

  @Test
  void aFullBucketGrantsItsBurstThenOneTokenPerTenthOfASecond() throws Exception {
    try (Connection c = db.connect()) {
      assertThat(take(c, 100, 0, false)).as("at 0 s: the burst").isEqualTo(5);
      assertThat(take(c, 100, 0.05, false)).as("at 0.05 s").isZero();
      assertThat(take(c, 100, 0.10, false)).as("at 0.10 s").isEqualTo(1);
      assertThat(take(c, 100, 0.35, false)).as("at 0.35 s: two more tenths").isEqualTo(2);
      assertThat(take(c, 1, 10, false)).as("asked for one after a long pause").isEqualTo(1);
      assertThat(take(c, 100, 10, false)).as("then the rest of a full burst, never more").isEqualTo(4);
    }
  }

  @Test
  void inAnyWindowAtMostBurstPlusRateTimesItsLengthAreGranted() throws Exception {
    try (Connection c = db.connect()) {
      long total = 0;
      for (int ms = 0; ms <= 2000; ms += 8) { // 0 .. 2 s, both ends included
        total += take(c, 3, ms / 1000.0, false);
      }
      assertThat(total).as("granted over 2 s at 10/s, burst 5").isEqualTo(5 + 20);
    }
  }

  @Test
  void aRefundGivesOneTokenBackButNeverMoreThanAFullBurst() throws Exception {
    try (Connection c = db.connect()) {
      assertThat(take(c, 100, 0, false)).isEqualTo(5);
      assertThat(take(c, 100, 0.0, true)).as("a refund right after the burst: that token again").isEqualTo(1);
      assertThat(take(c, 0, 5, true)).as("a refund into a full bucket grants nothing by itself").isZero();
      assertThat(take(c, 100, 5, false)).as("a full bucket after a refund: still the burst").isEqualTo(5);
    }
  }

  @Test
  void aChangedRateKeepsTheBucketsState() throws Exception {
    try (Connection c = db.connect()) {
      assertThat(take(c, 100, 0, false)).isEqualTo(5);
      c.createStatement().execute("SELECT pgtask.set_limit('kind', 'gcra.k', per_second => 10, burst => 6)");
      assertThat(take(c, 100, 0, false)).as("the bucket is not refilled by a change").isEqualTo(1);
    }
  }

  private static long query(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
