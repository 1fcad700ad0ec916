package dev.pgtask.internal.sql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** How the operator reads turn the views' values into Java ones. */
class OperatorViewsTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("operator_views", false);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void intervalsBecomeTheDurationsTheyDenote() throws Exception {
    String[] intervals = {"0", "00:00:00.85", "00:00:02.01", "00:04:05", "1 day 02:03:04.123456", "-00:00:01.5",
        "1 mon 2 days", "1 year"};
    Duration[] expected = {Duration.ZERO, Duration.ofMillis(850), Duration.ofMillis(2010), Duration.ofSeconds(245),
        Duration.ofDays(1).plusHours(2).plusMinutes(3).plusSeconds(4).plusNanos(123_456_000),
        Duration.ofMillis(-1500), Duration.ofDays(32), Duration.ofDays(360)};
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      for (int i = 0; i < intervals.length; i++) {
        try (var rs = st.executeQuery("SELECT interval '" + intervals[i] + "' AS i")) {
          rs.next();
          assertThat(OperatorViews.duration((org.postgresql.util.PGInterval) rs.getObject("i"))).as(intervals[i])
              .isEqualTo(expected[i]);
        }
      }
    }
  }
}
