package dev.pgtask.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.InvalidLimitException;
import dev.pgtask.Limit;
import dev.pgtask.LimitScope;
import dev.pgtask.PgTask;
import dev.pgtask.ops.LimitStatus;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;

/**
 * Setting and clearing limits from SQL and Java (docs/how-it-works.md, "Limits"): bad input is
 * refused by the rule's name and stores nothing; a limit replaces the key's previous one whole;
 * what is stored is what the view shows.
 */
class LimitsSqlTest {

  private static TestDatabase db;
  private static PgTask pgTask;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("limits_sql");
    pgTask = PgTask.create(db.dataSource());
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @BeforeEach
  void noLimits() throws SQLException {
    try (Connection c = db.connect()) {
      c.createStatement().execute("DELETE FROM pgtask.flow_limit");
    }
  }

  @Test
  void eachInvalidLimitIsRefusedByItsRuleAndNothingIsStored() throws Exception {
    String[][] refused = {
        {"select pgtask.set_limit('planet', 'x', 1)", "limit_scope"},
        {"select pgtask.set_limit(NULL, 'x', 1)", "limit_scope"},
        {"select pgtask.set_limit('kind', '', 1)", "limit_key_length"},
        {"select pgtask.set_limit('kind', NULL, 1)", "limit_key_length"},
        {"select pgtask.set_limit('kind', repeat('k', 256), 1)", "limit_key_length"},
        {"select pgtask.set_limit('queue', 'no spaces', 1)", "task_queue_format"},
        {"select pgtask.set_limit('kind', 'k', 0)", "limit_max_running"},
        {"select pgtask.set_limit('kind', 'k', -3)", "limit_max_running"},
        {"select pgtask.set_limit('tenant', 'acme', 1025)", "limit_max_running"},
        {"select pgtask.set_limit('kind', 'k')", "limit_not_empty"},
        {"select pgtask.set_limit('kind', 'k', per_second => 0)", "limit_per_second"},
        {"select pgtask.set_limit('kind', 'k', max_running => 1, burst => 3)", "limit_burst_needs_rate"},
        {"select pgtask.set_limit('queue', 'q', weight => 2)", "limit_weight_tenant_only"},
        {"select pgtask.set_limit('tenant', 't', weight => 0)", "limit_weight"},
        {"select pgtask.clear_limit('planet', 'x')", "limit_scope"},
        {"select pgtask.clear_limit('queue', 'a b')", "task_queue_format"},
    };
    try (Connection c = db.connect()) {
      for (String[] r : refused) {
        assertThatThrownBy(() -> c.createStatement().execute(r[0])).as(r[0])
            .isInstanceOfSatisfying(PSQLException.class, e -> {
              assertThat(e.getSQLState()).as(r[0]).isEqualTo("23514");
              assertThat(e.getServerErrorMessage().getConstraint()).as(r[0]).isEqualTo(r[1]);
              assertThat(e.getServerErrorMessage().getMessage()).as(r[0]).startsWith("pgtask: invalid limit: ");
            });
      }
      assertThat(count(c, "SELECT count(*) FROM pgtask.flow_limit")).as("limits stored").isZero();
      assertThat(count(c, "SELECT count(*) FROM pgtask.tenant WHERE name = 'acme'"))
          .as("a refused tenant limit registers no tenant").isZero();
    }
  }

  @Test
  void aLimitReplacesTheKeysLimitAndClearingRemovesIt() throws Exception {
    try (Connection c = db.connect()) {
      assertThat(string(c, "select pgtask.set_limit('kind', 'report.render', max_running => 2)")).isEqualTo("created");
      assertThat(string(c, "select pgtask.set_limit('kind', 'report.render', max_running => 3)")).isEqualTo("changed");
      assertThat(count(c, "SELECT max_running FROM pgtask.limits WHERE scope = 'kind' AND key = 'report.render'"))
          .isEqualTo(3);
      assertThat(string(c, "select pgtask.clear_limit('kind', 'report.render')::text")).isEqualTo("true");
      assertThat(string(c, "select pgtask.clear_limit('kind', 'report.render')::text")).isEqualTo("false");
      assertThat(count(c, "SELECT count(*) FROM pgtask.limits")).isZero();
    }
  }

  @Test
  void javaSetsListsAndClearsLimitsAndRefusesBadInputByName() {
    assertThat(pgTask.limits().set(LimitScope.TENANT, "acme", Limit.maxRunning(4))).as("created").isTrue();
    assertThat(pgTask.limits().set(LimitScope.QUEUE, "mail", Limit.maxRunning(20))).isTrue();
    assertThat(pgTask.limits().set(LimitScope.QUEUE, "mail", Limit.maxRunning(10))).as("replaced").isFalse();
    List<LimitStatus> limits = pgTask.limits().list();
    assertThat(limits).extracting(LimitStatus::scope, LimitStatus::key, LimitStatus::maxRunning)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("queue", "mail", 10),
            org.assertj.core.groups.Tuple.tuple("tenant", "acme", 4));
    assertThatThrownBy(() -> Limit.maxRunning(0)).isInstanceOfSatisfying(InvalidLimitException.class,
        e -> assertThat(e.constraint()).isEqualTo("limit_max_running"));
    assertThatThrownBy(() -> pgTask.limits().set(LimitScope.QUEUE, "not a queue", Limit.maxRunning(1)))
        .isInstanceOfSatisfying(InvalidLimitException.class, e -> {
          assertThat(e.constraint()).isEqualTo("task_queue_format");
          assertThat(e.getMessage()).startsWith("pgtask: invalid limit: ");
        });
    assertThatThrownBy(() -> pgTask.limits().set(LimitScope.KIND, "", Limit.maxRunning(1)))
        .isInstanceOfSatisfying(InvalidLimitException.class, e -> assertThat(e.constraint()).isEqualTo("limit_key_length"));
    assertThat(pgTask.limits().clear(LimitScope.QUEUE, "mail")).isTrue();
    assertThat(pgTask.limits().clear(LimitScope.QUEUE, "mail")).isFalse();
    assertThat(pgTask.limits().list()).extracting(LimitStatus::key).containsExactly("acme");
  }

  @Test
  void aTenantsWeightIsStoredShownAndTheLastOneGoneTakesEveryQueuedPassAway() throws Exception {
    try (Connection c = db.connect()) {
      c.createStatement().execute("DELETE FROM pgtask.task");
      c.createStatement().execute("select pgtask.set_limit('tenant', 'acme', weight => 3)");
      assertThat(pgTask.limits().set(LimitScope.TENANT, "bigco", Limit.maxRunning(4).withWeight(0.5))).isTrue();
      assertThat(pgTask.limits().list()).extracting(LimitStatus::key, l -> l.weight().doubleValue())
          .containsExactly(org.assertj.core.groups.Tuple.tuple("acme", 3.0), org.assertj.core.groups.Tuple.tuple("bigco", 0.5));
      c.createStatement().execute("select pgtask.enqueue('w.k', '{}', tenant => 'acme')");
      c.createStatement().execute("select pgtask.enqueue('w.k', '{}')");
      assertThat(count(c, "SELECT count(*) FROM pgtask.task WHERE pass IS NOT NULL"))
          .as("with a weight, every new claimable task gets its place").isEqualTo(2);
      long parent = count(c, "SELECT pgtask.enqueue('w.k', '{}')");
      long child = count(c, "SELECT pgtask.enqueue('w.k', '{}', depends_on => ARRAY[" + parent + "]::bigint[])");
      c.createStatement().execute("UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + parent);
      assertThat(count(c, "SELECT count(*) FROM pgtask.task WHERE id = " + child + " AND state = 'available' AND pass IS NOT NULL"))
          .as("a child released by its last parent takes its place as an inserted task does").isEqualTo(1);
      c.createStatement().execute("DELETE FROM pgtask.task WHERE id IN (" + parent + ", " + child + ")");
      c.createStatement().execute("select pgtask.clear_limit('tenant', 'acme')");
      assertThat(count(c, "SELECT count(*) FROM pgtask.task WHERE pass IS NOT NULL")).as("one weight is left").isEqualTo(2);
      c.createStatement().execute("select pgtask.set_limit('tenant', 'bigco', max_running => 4)");
      assertThat(count(c, "SELECT count(*) FROM pgtask.task WHERE pass IS NOT NULL"))
          .as("the last weight gone: no queued task keeps a place ahead of or behind the ones to come").isZero();
      c.createStatement().execute("select pgtask.enqueue('w.k', '{}', tenant => 'other')");
      assertThat(count(c, "SELECT count(*) FROM pgtask.task WHERE pass IS NOT NULL")).isZero();
      c.createStatement().execute("DELETE FROM pgtask.task");
    }
    assertThatThrownBy(() -> Limit.weight(0)).isInstanceOfSatisfying(InvalidLimitException.class,
        e -> assertThat(e.constraint()).isEqualTo("limit_weight"));
    assertThatThrownBy(() -> pgTask.limits().set(LimitScope.QUEUE, "mail", Limit.weight(2)))
        .isInstanceOfSatisfying(InvalidLimitException.class,
            e -> assertThat(e.constraint()).isEqualTo("limit_weight_tenant_only"));
  }

  @Test
  void aRateKeepsItsBucketWhenChangedAndLosesItWhenTheRateIsRemoved() throws Exception {
    try (Connection c = db.connect()) {
      c.createStatement().execute("select pgtask.set_limit('kind', 'sms.send', per_second => 50, burst => 10)");
      c.createStatement().execute("UPDATE pgtask.limit_bucket SET tat = '2030-01-01'");
      c.createStatement().execute("select pgtask.set_limit('kind', 'sms.send', per_second => 20, burst => 5)");
      assertThat(string(c, "SELECT tat::date::text FROM pgtask.limit_bucket")).as("a changed rate keeps its state")
          .isEqualTo("2030-01-01");
      assertThat(count(c, "SELECT burst FROM pgtask.flow_limit WHERE key = 'sms.send'")).isEqualTo(5);
      c.createStatement().execute("select pgtask.set_limit('kind', 'sms.send', max_running => 3)");
      assertThat(count(c, "SELECT count(*) FROM pgtask.limit_bucket")).as("buckets without a rate").isZero();
      c.createStatement().execute("select pgtask.set_limit('kind', 'sms.send', per_second => 2)");
      assertThat(count(c, "SELECT burst FROM pgtask.flow_limit WHERE key = 'sms.send'")).as("burst by default").isEqualTo(1);
      c.createStatement().execute("select pgtask.clear_limit('kind', 'sms.send')");
      assertThat(count(c, "SELECT count(*) FROM pgtask.limit_bucket")).as("buckets after clear_limit").isZero();
    }
  }

  static long count(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static String string(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }
}
