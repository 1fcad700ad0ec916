package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.ServerErrors;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** pgtask.grant_producer gives a role exactly what enqueueing needs, and nothing else. */
class ProducerRoleTest {

  private static final String SUFFIX = UUID.randomUUID().toString().substring(0, 8).toLowerCase(Locale.ROOT);
  private static final String PRODUCER = "pgtask_test_producer_" + SUFFIX;
  private static final String OUTSIDER = "pgtask_test_outsider_" + SUFFIX;
  private static final String PASSWORD = "pw-" + UUID.randomUUID();

  private static TestDatabase db;

  @BeforeAll
  static void createRoles() throws Exception {
    db = TestDatabase.create("producer_role");
    TestDatabase.execAdmin("CREATE ROLE " + PRODUCER + " LOGIN PASSWORD '" + PASSWORD + "'");
    TestDatabase.execAdmin("CREATE ROLE " + OUTSIDER + " LOGIN PASSWORD '" + PASSWORD + "'");
    try (Connection c = db.connect()) {
      exec(c, "SELECT pgtask.grant_producer('" + PRODUCER + "')");
      exec(c, "INSERT INTO pgtask.tenant (name) VALUES ('existing')");
    }
  }

  @AfterAll
  static void dropRoles() {
    try {
      db.close();
    } finally {
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + PRODUCER);
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + OUTSIDER);
    }
  }

  @Test
  void producerCanEnqueueWithEveryOption() throws Exception {
    long id;
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      id = queryLong(c, """
          SELECT pgtask.enqueue(kind => 'from.producer', payload => '{"a": 1}', queue => 'mail', tenant => 'new-tenant',
                                run_at => now() + interval '1 minute', priority => 2, max_attempts => 3,
                                dedupe_key => 'producer-key')""");
      long again = queryLong(c, "SELECT pgtask.enqueue(kind => 'from.producer', dedupe_key => 'producer-key')");
      assertThat(again).as("dedupe works for the producer role").isEqualTo(id);
    }
    try (Connection admin = db.connect()) {
      assertThat(queryLong(admin, "SELECT count(*) FROM pgtask.tasks WHERE id = " + id + " AND tenant = 'new-tenant'"))
          .as("the producer's task, with its newly registered tenant").isEqualTo(1);
    }
  }

  @Test
  void producerCanDebounceAndSoReplaceThePayloadOfAPendingDebouncedTaskWhoeverEnqueuedIt() throws Exception {
    long ownersTask;
    try (Connection owner = db.connect()) {
      ownersTask = queryLong(owner, "SELECT pgtask.enqueue('debounced.kind', '{\"by\": \"owner\"}',"
          + " dedupe_key => 'debounced-key', debounce => interval '1 hour')");
    }
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      assertThat(queryLong(c, "SELECT pgtask.enqueue('debounced.kind', '{\"by\": \"producer\"}',"
          + " dedupe_key => 'debounced-key', debounce => interval '1 minute')"))
          .as("id the producer's debounced enqueue returns").isEqualTo(ownersTask);
    }
    try (Connection admin = db.connect()) {
      assertThat(queryLong(admin, "SELECT count(*) FROM pgtask.task WHERE id = " + ownersTask
          + " AND payload->>'by' = 'producer' AND run_at < now() + interval '2 minutes'"))
          .as("the owner's pending task, with the producer's payload and start").isEqualTo(1);
    }
  }

  @Test
  void producerCanEnqueueABatch() throws Exception {
    try (Connection c = db.connectAs(PRODUCER, PASSWORD);
        PreparedStatement ps = c.prepareStatement("""
            SELECT count(*) FILTER (WHERE inserted) FROM pgtask.enqueue_batch(
              kinds => ARRAY['b1', 'b2', 'b3'], tenants => ARRAY['existing', 'batch-tenant', NULL])""");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      assertThat(rs.getLong(1)).as("tasks inserted by the producer's batch").isEqualTo(3);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {
      "SELECT * FROM pgtask.task",
      "INSERT INTO pgtask.task (kind) VALUES ('direct')",
      "UPDATE pgtask.task SET priority = 1",
      "DELETE FROM pgtask.task",
      "SELECT * FROM pgtask.tenant",
      "INSERT INTO pgtask.tenant (name) VALUES ('direct')",
      "UPDATE pgtask.tenant SET name = 'x'",
      "DELETE FROM pgtask.tenant",
      "SELECT * FROM pgtask.settings",
      "INSERT INTO pgtask.settings DEFAULT VALUES",
      "UPDATE pgtask.settings SET max_payload_bytes = 1",
      "DELETE FROM pgtask.settings",
      "SELECT * FROM pgtask.tasks",
      "SELECT * FROM pgtask.unrunnable",
      "SELECT * FROM pgtask.pgtask_schema_history",
      "SELECT nextval('pgtask.task_id_seq')",
      "SELECT pgtask.tenant_id('sneaky')",
      "SELECT pgtask.promote_tenants(ARRAY[1], ARRAY['default'])",
      "SELECT pgtask.set_max_payload_bytes(1)",
      "SELECT pgtask.set_producer_bounds(current_user)",
      "SELECT * FROM pgtask.producer_bounds",
      "SELECT * FROM pgtask.producer_bound",
      "DELETE FROM pgtask.producer_bound",
      "SELECT * FROM pgtask.caller_producer_bound()",
      "SELECT pgtask.grant_producer('public')",
      "SELECT pgtask.task_input_error('k', '{}', 'q', NULL, 1, NULL, 10)",
      "SELECT pgtask.raise_input_error('a|b', NULL)"})
  void producerCannotTouchAnythingButEnqueue(String statement) throws Exception {
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      ServerErrors e = ServerErrors.of(() -> exec(c, statement));
      assertThat(e.sqlState()).as("SQLSTATE when the producer role runs: %s", statement).isEqualTo("42501");
    }
  }

  @Test
  void producerHoldsExecuteOnTheTwoEnqueueFunctionsOnlyAndNoTablePrivileges() throws Exception {
    try (Connection c = db.connect()) {
      assertThat(executableFunctions(c, PRODUCER)).as("pgtask functions the producer role may execute")
          .containsExactlyInAnyOrder("enqueue", "enqueue_batch");
      assertThat(privilegedRelations(c, PRODUCER)).as("pgtask tables, views and sequences the producer may use")
          .isEmpty();
    }
  }

  /**
   * The producer role's limits as docs/operations.md states them: within the enqueue functions a
   * role the owner has not bounded (ProducerBoundsTest) may choose any priority and run_at,
   * enqueue into a paused queue, and learn the id of an existing task through its dedupe key; it
   * cannot read the state of any task, its own included.
   */
  @Test
  void aProducerMayJumpTheQueueEnqueueIntoAPausedQueueAndLearnAnIdByDedupeKeyButCannotReadTaskState()
      throws Exception {
    long ownersTask;
    try (Connection owner = db.connect()) {
      ownersTask = queryLong(owner, "SELECT pgtask.enqueue('owner.kind', queue => 'limits', dedupe_key => 'owners-key')");
      exec(owner, "SELECT pgtask.pause_queue('limits-paused')");
    }
    long jumper;
    long paused;
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      jumper = queryLong(c, "SELECT pgtask.enqueue('from.producer', queue => 'limits', priority => -2147483648,"
          + " run_at => now() - interval '10 years')");
      paused = queryLong(c, "SELECT pgtask.enqueue('from.producer', queue => 'limits-paused')");
      assertThat(queryLong(c, "SELECT pgtask.enqueue('from.producer', dedupe_key => 'owners-key')"))
          .as("the id a producer learns through another's dedupe key").isEqualTo(ownersTask);
      for (String read : List.of("SELECT state FROM pgtask.tasks WHERE id = " + jumper,
          "SELECT pgtask.explain_task(" + jumper + ")")) {
        assertThat(ServerErrors.of(() -> exec(c, read)).sqlState()).as("SQLSTATE of the producer's %s", read)
            .isEqualTo("42501");
      }
    }
    try (Connection owner = db.connect()) {
      assertThat(queryLong(owner, "SELECT id FROM pgtask.task WHERE queue = 'limits' AND state = 'available'"
          + " ORDER BY priority, run_at, id LIMIT 1")).as("the task claimed first in queue limits").isEqualTo(jumper);
      assertThat(queryLong(owner, "SELECT count(*) FROM pgtask.task WHERE id = " + paused + " AND state = 'available'"))
          .as("the producer's task in the paused queue, stored").isEqualTo(1);
      exec(owner, "SELECT pgtask.resume_queue('limits-paused')");
    }
  }

  @Test
  void roleWithoutTheGrantCannotEnqueue() throws Exception {
    try (Connection c = db.connectAs(OUTSIDER, PASSWORD)) {
      ServerErrors e = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('not.allowed')"));
      assertThat(e.sqlState()).as("SQLSTATE when a role without the grant enqueues").isEqualTo("42501");
      ServerErrors batch = ServerErrors.of(() -> exec(c, "SELECT * FROM pgtask.enqueue_batch(ARRAY['not.allowed'])"));
      assertThat(batch.sqlState()).as("SQLSTATE when a role without the grant enqueues a batch").isEqualTo("42501");
    }
    try (Connection c = db.connect()) {
      assertThat(executableFunctions(c, OUTSIDER)).as("pgtask functions PUBLIC may execute").isEmpty();
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE kind = 'not.allowed'"))
          .as("tasks stored by a role without the grant").isZero();
    }
  }

  @Test
  void enqueueFunctionsAreSecurityDefinerWithAPinnedSearchPath() throws Exception {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("""
        SELECT p.proname, p.prosecdef, array_to_string(p.proconfig, ';')
        FROM pg_proc p WHERE p.pronamespace = 'pgtask'::regnamespace AND p.proname IN ('enqueue', 'enqueue_batch')
        ORDER BY 1""");
        ResultSet rs = ps.executeQuery()) {
      int n = 0;
      while (rs.next()) {
        n++;
        assertThat(rs.getBoolean(2)).as("%s is SECURITY DEFINER", rs.getString(1)).isTrue();
        assertThat(rs.getString(3)).as("%s's pinned settings", rs.getString(1))
            .contains("search_path=pg_catalog, pg_temp");
      }
      assertThat(n).as("enqueue functions found").isEqualTo(2);
    }
  }

  @Test
  void everySecurityDefinerFunctionPinsItsSearchPath() throws Exception {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("""
        SELECT p.proname FROM pg_proc p
        WHERE p.pronamespace = 'pgtask'::regnamespace AND p.prosecdef
          AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) s WHERE s LIKE 'search\\_path=%')""");
        ResultSet rs = ps.executeQuery()) {
      List<String> unpinned = new ArrayList<>();
      while (rs.next()) {
        unpinned.add(rs.getString(1));
      }
      assertThat(unpinned).as("SECURITY DEFINER functions without a pinned search_path").isEmpty();
    }
  }

  private static List<String> executableFunctions(Connection c, String role) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT p.proname FROM pg_proc p
        WHERE p.pronamespace = 'pgtask'::regnamespace AND has_function_privilege(?, p.oid, 'EXECUTE')""")) {
      ps.setString(1, role);
      try (ResultSet rs = ps.executeQuery()) {
        List<String> names = new ArrayList<>();
        while (rs.next()) {
          names.add(rs.getString(1));
        }
        return names;
      }
    }
  }

  private static List<String> privilegedRelations(Connection c, String role) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT r.relname FROM pg_class r
        WHERE r.relnamespace = 'pgtask'::regnamespace AND r.relkind IN ('r', 'v', 'm', 'p', 'S')
          AND (CASE WHEN r.relkind = 'S'
                    THEN has_sequence_privilege(?, r.oid, 'USAGE, SELECT, UPDATE')
                    ELSE has_table_privilege(?, r.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
               END)""")) {
      ps.setString(1, role);
      ps.setString(2, role);
      try (ResultSet rs = ps.executeQuery()) {
        List<String> names = new ArrayList<>();
        while (rs.next()) {
          names.add(rs.getString(1));
        }
        return names;
      }
    }
  }
}
