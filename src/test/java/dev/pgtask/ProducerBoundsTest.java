package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.pgtask.testsupport.ServerErrors;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bounds the owner sets on a producer role (pgtask.set_producer_bounds): an enqueue outside them
 * is refused with a named error and stores nothing, from SQL (one task, a batch) and from Java; one
 * within them is stored; the owner is never bounded, a role without bounds is unchanged, and the
 * role that calls is found whether it logged in, inherits a bounded role or took one with SET ROLE.
 * docs/operations.md, "What a producer role can and cannot do".
 */
class ProducerBoundsTest {

  private static final String SUFFIX = UUID.randomUUID().toString().substring(0, 8).toLowerCase(Locale.ROOT);
  /** Bounded: priorities 0 to 10, no run_at in the past. */
  private static final String BOUNDED = "pgtask_test_bounded_" + SUFFIX;
  /** Logs in as itself and inherits BOUNDED's privileges (and so its bounds); no grant of its own. */
  private static final String MEMBER = "pgtask_test_bounded_member_" + SUFFIX;
  /** Granted, never bounded. */
  private static final String FREE = "pgtask_test_unbounded_" + SUFFIX;
  /** Bounded to priorities 5 and above, so that the default priority 0 is out of bounds. */
  private static final String HIGH = "pgtask_test_high_" + SUFFIX;
  private static final String PASSWORD = "pw-" + UUID.randomUUID();

  private static TestDatabase db;
  private static PgTask pgtask;

  @BeforeAll
  static void createRoles() throws Exception {
    db = TestDatabase.create("producer_bounds");
    pgtask = PgTask.create(db.dataSource());
    for (String role : List.of(BOUNDED, FREE, HIGH)) {
      TestDatabase.execAdmin("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    }
    TestDatabase.execAdmin("CREATE ROLE " + MEMBER + " LOGIN INHERIT PASSWORD '" + PASSWORD + "' IN ROLE " + BOUNDED);
    try (Connection c = db.connect()) {
      for (String role : List.of(BOUNDED, FREE, HIGH)) {
        exec(c, "SELECT pgtask.grant_producer('" + role + "')");
      }
      exec(c, "SELECT pgtask.set_producer_bounds('" + BOUNDED + "', min_priority => 0, max_priority => 10,"
          + " past_run_at => false)");
      exec(c, "SELECT pgtask.set_producer_bounds('" + HIGH + "', min_priority => 5)");
    }
  }

  @AfterAll
  static void dropRoles() {
    try {
      db.close();
    } finally {
      for (String role : List.of(MEMBER, BOUNDED, FREE, HIGH)) {
        TestDatabase.execAdmin("DROP ROLE IF EXISTS " + role);
      }
    }
  }

  @Test
  void aPriorityOutsideTheOwnersBoundsIsRefusedByNameWithTheBoundAndTheValueAndNothingIsStored() throws Exception {
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      ServerErrors above = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.above', priority => 11)"));
      assertThat(above.sqlState()).as("SQLSTATE of a priority above the bound").isEqualTo("23514");
      assertThat(above.constraint()).as("the bound named").isEqualTo("task_priority_bound");
      assertThat(above.message()).as("the message").isEqualTo("pgtask: invalid task: priority 11 is above 10, the"
          + " highest priority role " + BOUNDED + " may set (pgtask.producer_bounds)");
      ServerErrors below = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.below', priority => -1)"));
      assertThat(below.constraint()).as("the bound named for a priority below it").isEqualTo("task_priority_bound");
      assertThat(below.message()).as("the message").isEqualTo("pgtask: invalid task: priority -1 is below 0, the"
          + " lowest priority role " + BOUNDED + " may set (pgtask.producer_bounds)");
    }
    assertThat(stored("bound.above", "bound.below")).as("tasks stored by the refused enqueues").isZero();
  }

  @Test
  void aRunAtInThePastIsRefusedByNameWhenTheOwnerForbidsIt() throws Exception {
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      ServerErrors past = ServerErrors.of(() -> exec(c,
          "SELECT pgtask.enqueue('bound.past', run_at => now() - interval '1 millisecond')"));
      assertThat(past.sqlState()).as("SQLSTATE of a run_at in the past").isEqualTo("23514");
      assertThat(past.constraint()).as("the bound named").isEqualTo("task_run_at_bound");
      assertThat(past.message()).as("the message names the value, now() and the role")
          .startsWith("pgtask: invalid task: run_at ").contains(" is before now() (")
          .endsWith("): role " + BOUNDED + " may not set a run_at in the past (pgtask.producer_bounds)");
    }
    assertThat(stored("bound.past")).as("tasks stored by the refused enqueue").isZero();
  }

  @Test
  void aBatchWithOneTaskOutsideTheBoundsIsRefusedWholeNamingThatTask() throws Exception {
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      ServerErrors priority = ServerErrors.of(() -> exec(c, "SELECT * FROM pgtask.enqueue_batch("
          + "kinds => ARRAY['bound.batch', 'bound.batch', 'bound.batch'], priorities => ARRAY[0, 10, 11])"));
      assertThat(priority.sqlState()).as("SQLSTATE of the batch").isEqualTo("23514");
      assertThat(priority.constraint()).as("the bound named by the batch").isEqualTo("task_priority_bound");
      assertThat(priority.message()).as("the batch's message names the task")
          .startsWith("pgtask: invalid task (task 3 of 3): priority 11 is above 10");
      ServerErrors runAt = ServerErrors.of(() -> exec(c, "SELECT * FROM pgtask.enqueue_batch("
          + "kinds => ARRAY['bound.batch', 'bound.batch'], run_ats => ARRAY[now() + interval '1 hour', now() - interval '1 hour'])"));
      assertThat(runAt.constraint()).as("the bound named by the batch").isEqualTo("task_run_at_bound");
      assertThat(runAt.message()).as("the batch's message names the task").startsWith("pgtask: invalid task (task 2 of 2): run_at ");
    }
    assertThat(stored("bound.batch")).as("tasks stored by the refused batches").isZero();
  }

  @Test
  void theDefaultPriorityIsBoundedToo() throws Exception {
    try (Connection c = db.connectAs(HIGH, PASSWORD)) {
      ServerErrors one = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.default')"));
      assertThat(one.constraint()).as("the bound named for a task without a priority (0) below min_priority 5")
          .isEqualTo("task_priority_bound");
      ServerErrors nullPriority = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.default', priority => NULL)"));
      assertThat(nullPriority.constraint()).as("the bound named for a NULL priority (stored as 0)")
          .isEqualTo("task_priority_bound");
      ServerErrors batch = ServerErrors.of(() -> exec(c,
          "SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['bound.default'])"));
      assertThat(batch.constraint()).as("the bound named for a batch without priorities").isEqualTo("task_priority_bound");
      assertThat(queryLong(c, "SELECT pgtask.enqueue('bound.default.ok', priority => 5)"))
          .as("id of a task at the lowest priority allowed").isPositive();
    }
    assertThat(stored("bound.default")).as("tasks stored by the refused enqueues").isZero();
    assertThat(stored("bound.default.ok")).as("tasks stored within the bound").isEqualTo(1);
  }

  @Test
  void javaEnqueueOutsideTheBoundsThrowsInvalidTaskExceptionNamingTheBound() throws Exception {
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      c.setAutoCommit(false);
      InvalidTaskException one = catchThrowableOfType(InvalidTaskException.class, () -> pgtask.enqueue(c,
          NewTask.of("bound.java", java.util.Map.of(), TaskOptions.defaults().withPriority(11))));
      assertThat(one).as("what Java's enqueue throws for a priority above the bound").isNotNull();
      assertThat(one.constraint()).as("the bound named").isEqualTo("task_priority_bound");
      assertThat(one.getMessage()).as("the message").contains("priority 11 is above 10");
      c.rollback();
      InvalidTaskException batch = catchThrowableOfType(InvalidTaskException.class, () -> pgtask.enqueueAll(c, List.of(
          NewTask.of("bound.java", java.util.Map.of()),
          NewTask.of("bound.java", java.util.Map.of(), TaskOptions.defaults().withRunAt(Instant.parse("2000-01-01T00:00:00Z"))))));
      assertThat(batch).as("what Java's enqueueAll throws for a run_at in the past").isNotNull();
      assertThat(batch.constraint()).as("the bound named by the batch").isEqualTo("task_run_at_bound");
      assertThat(batch.getMessage()).as("the batch's message names the task").contains("(task 2 of 2)");
      c.rollback();
      // within the bounds, from Java: a delay is measured on the database clock, so it is never in the past
      pgtask.enqueue(c, NewTask.of("bound.java.ok", java.util.Map.of(),
          TaskOptions.defaults().withPriority(10).withDelay(Duration.ZERO)));
      pgtask.enqueueAll(c, List.of(NewTask.of("bound.java.ok", java.util.Map.of(),
          TaskOptions.defaults().withDelay(Duration.ofMinutes(1)))));
      c.commit();
    }
    assertThat(stored("bound.java")).as("tasks stored by the refused Java enqueues").isZero();
    assertThat(stored("bound.java.ok")).as("tasks stored by Java within the bounds").isEqualTo(2);
  }

  @Test
  void withinTheBoundsEveryChoiceIsStored() throws Exception {
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      queryLong(c, "SELECT pgtask.enqueue('bound.ok', priority => 0)");
      queryLong(c, "SELECT pgtask.enqueue('bound.ok', priority => 10, run_at => now())");
      queryLong(c, "SELECT pgtask.enqueue('bound.ok', priority => 5, run_at => now() + interval '1 day')");
      queryLong(c, "SELECT count(*) FROM pgtask.enqueue_batch(kinds => ARRAY['bound.ok', 'bound.ok'],"
          + " priorities => ARRAY[0, 10], run_ats => ARRAY[now(), NULL])");
    }
    assertThat(stored("bound.ok")).as("tasks stored within the bounds").isEqualTo(5);
  }

  @Test
  void theOwnerIsNeverBounded() throws Exception {
    try (Connection owner = db.connect()) {
      queryLong(owner, "SELECT pgtask.enqueue('bound.owner', priority => -2147483648, run_at => now() - interval '10 years')");
      queryLong(owner, "SELECT count(*) FROM pgtask.enqueue_batch(kinds => ARRAY['bound.owner'], priorities => ARRAY[99])");
    }
    assertThat(stored("bound.owner")).as("the owner's tasks outside every producer's bounds").isEqualTo(2);
  }

  @Test
  void aRoleWithoutBoundsChoosesAsBefore() throws Exception {
    try (Connection c = db.connectAs(FREE, PASSWORD)) {
      queryLong(c, "SELECT pgtask.enqueue('bound.free', priority => -2147483648, run_at => now() - interval '10 years')");
      queryLong(c, "SELECT count(*) FROM pgtask.enqueue_batch(kinds => ARRAY['bound.free'], priorities => ARRAY[2147483647],"
          + " run_ats => ARRAY[now() - interval '1 day'])");
    }
    assertThat(stored("bound.free")).as("tasks of a role without bounds").isEqualTo(2);
  }

  @Test
  void aRoleThatInheritsABoundedRoleIsBoundedByItsBounds() throws Exception {
    try (Connection c = db.connectAs(MEMBER, PASSWORD)) {
      ServerErrors e = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.member', priority => 11)"));
      assertThat(e.constraint()).as("the bound named for a member of the bounded role").isEqualTo("task_priority_bound");
      assertThat(e.message()).as("the message names the role that called").contains("role " + MEMBER + " may set");
      queryLong(c, "SELECT pgtask.enqueue('bound.member.ok', priority => 10)");
    }
    assertThat(stored("bound.member")).as("tasks stored by the refused enqueue").isZero();
    assertThat(stored("bound.member.ok")).as("the member's task within the bounds").isEqualTo(1);
  }

  @Test
  void aSessionThatTookABoundedRoleWithSetRoleIsBounded() throws Exception {
    try (Connection c = db.connect()) {
      exec(c, "SET ROLE " + BOUNDED);
      ServerErrors e = ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.setrole', priority => 11)"));
      assertThat(e.constraint()).as("the bound named after SET ROLE").isEqualTo("task_priority_bound");
      ServerErrors batch = ServerErrors.of(() -> exec(c,
          "SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['bound.setrole'], run_ats => ARRAY[now() - interval '1 second'])"));
      assertThat(batch.constraint()).as("the bound named for a batch after SET ROLE").isEqualTo("task_run_at_bound");
      exec(c, "RESET ROLE");
      queryLong(c, "SELECT pgtask.enqueue('bound.setrole.reset', priority => 11)");
    }
    assertThat(stored("bound.setrole")).as("tasks stored by the refused enqueues").isZero();
    assertThat(stored("bound.setrole.reset")).as("the owner's task once the role is reset").isEqualTo(1);
  }

  @Test
  void aWrapperFunctionOwnedByAnUnboundedRoleEnqueuesWithinTheCallersBounds() throws Exception {
    String wrapper = "public.enqueue_urgent_" + SUFFIX;
    try (Connection owner = db.connect()) {
      exec(owner, "CREATE FUNCTION " + wrapper + "() RETURNS bigint LANGUAGE sql SECURITY DEFINER"
          + " SET search_path = pg_catalog, pg_temp AS $$ SELECT pgtask.enqueue('bound.wrapper', priority => -5) $$");
      exec(owner, "ALTER FUNCTION " + wrapper + "() OWNER TO " + FREE);
      exec(owner, "REVOKE EXECUTE ON FUNCTION " + wrapper + "() FROM PUBLIC");
      exec(owner, "GRANT USAGE ON SCHEMA public TO " + BOUNDED + ", " + FREE);
      exec(owner, "GRANT EXECUTE ON FUNCTION " + wrapper + "() TO " + BOUNDED);
    }
    try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
      ServerErrors e = ServerErrors.of(() -> exec(c, "SELECT " + wrapper + "()"));
      assertThat(e.constraint()).as("the bound named when a bounded role calls an unbounded role's wrapper")
          .isEqualTo("task_priority_bound");
    }
    try (Connection c = db.connectAs(FREE, PASSWORD)) {
      assertThat(queryLong(c, "SELECT " + wrapper + "()")).as("id of the wrapper's task for an unbounded caller").isPositive();
    } finally {
      try (Connection owner = db.connect()) {
        exec(owner, "DROP FUNCTION " + wrapper + "()");
        exec(owner, "REVOKE USAGE ON SCHEMA public FROM " + BOUNDED + ", " + FREE);
      }
    }
    assertThat(stored("bound.wrapper")).as("tasks stored through the wrapper").isEqualTo(1);
  }

  @Test
  void invalidBoundsAreRefusedByNameAndChangeNothing() throws Exception {
    try (Connection c = db.connect()) {
      String before = bounds(c, BOUNDED);
      ServerErrors range = ServerErrors.of(() -> exec(c, "SELECT pgtask.set_producer_bounds('" + BOUNDED + "', 3, 1)"));
      assertThat(range.sqlState()).as("SQLSTATE of min above max").isEqualTo("23514");
      assertThat(range.constraint()).as("the rule named for min above max").isEqualTo("producer_bound_priority_range");
      assertThat(range.message()).as("the message").isEqualTo(
          "pgtask: cannot set producer bounds: min_priority 3 is above max_priority 1");
      ServerErrors unknown = ServerErrors.of(() -> exec(c, "SELECT pgtask.set_producer_bounds('no_such_role_" + SUFFIX + "', 0)"));
      assertThat(unknown.constraint()).as("the rule named for an unknown role").isEqualTo("producer_bound_role_exists");
      ServerErrors owner = ServerErrors.of(() -> exec(c, "SELECT pgtask.set_producer_bounds(current_user, 0)"));
      assertThat(owner.constraint()).as("the rule named for the owner, who is never bounded")
          .isEqualTo("producer_bound_role_owner");
      assertThat(bounds(c, BOUNDED)).as("the bounds after the refused changes").isEqualTo(before);
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.producer_bounds WHERE role_name NOT IN ('" + BOUNDED + "', '"
          + HIGH + "')")).as("rows for roles never bounded").isZero();
    }
  }

  @Test
  void boundsCanBeChangedAndRemovedAndTheFlagEnqueueReadsFollowsThem() throws Exception {
    String role = "pgtask_test_changing_" + SUFFIX;
    TestDatabase.execAdmin("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    try (Connection owner = db.connect(); Connection c = db.connectAs(role, PASSWORD)) {
      exec(owner, "SELECT pgtask.grant_producer('" + role + "')");
      exec(owner, "SELECT pgtask.set_producer_bounds('" + role + "', max_priority => 1)");
      assertThat(ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.changing', priority => 2)")).constraint())
          .as("the bound named under max_priority 1").isEqualTo("task_priority_bound");
      exec(owner, "SELECT pgtask.set_producer_bounds('" + role + "', max_priority => 2)");
      queryLong(c, "SELECT pgtask.enqueue('bound.changing', priority => 2)");
      exec(owner, "SELECT pgtask.set_producer_bounds('" + role + "')");
      assertThat(bounds(owner, role)).as("the role's row once its bounds are removed").isNull();
      queryLong(c, "SELECT pgtask.enqueue('bound.changing', priority => 100)");

      // the flag in pgtask.settings that spares unbounded databases the lookup: true exactly while a bound exists,
      // however the table changes
      owner.setAutoCommit(false);
      assertThat(flag(owner)).as("flag while roles are bounded").isTrue();
      exec(owner, "DELETE FROM pgtask.producer_bound");
      assertThat(flag(owner)).as("flag once every bound is gone").isFalse();
      exec(owner, "INSERT INTO pgtask.producer_bound (role_name, past_run_at) VALUES ('" + role + "', false)");
      assertThat(flag(owner)).as("flag once a bound is inserted directly").isTrue();
      owner.rollback();
      owner.setAutoCommit(true);
    } finally {
      try (Connection owner = db.connect()) {
        exec(owner, "SELECT pgtask.set_producer_bounds('" + role + "')");
        exec(owner, "REVOKE ALL ON SCHEMA pgtask FROM " + role);
        exec(owner, "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgtask FROM " + role);
      }
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + role);
    }
    assertThat(stored("bound.changing")).as("tasks stored within the bounds of the moment").isEqualTo(2);
  }

  @Test
  void boundsStayWithARenamedRolesOldNameAndBreakNoEnqueue() throws Exception {
    String role = "pgtask_test_renamed_" + SUFFIX;
    TestDatabase.execAdmin("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    try (Connection owner = db.connect()) {
      exec(owner, "SELECT pgtask.grant_producer('" + role + "')");
      exec(owner, "SELECT pgtask.set_producer_bounds('" + role + "', max_priority => 0)");
      TestDatabase.execAdmin("ALTER ROLE " + role + " RENAME TO " + role + "_new");
      assertThat(queryLong(owner, "SELECT count(*) FROM pgtask.producer_bounds WHERE role_name = '" + role
          + "' AND NOT role_exists")).as("the old name's row, shown as naming no role").isEqualTo(1);
      try (Connection c = db.connectAs(role + "_new", PASSWORD)) {
        queryLong(c, "SELECT pgtask.enqueue('bound.renamed', priority => 1)");
      }
      try (Connection c = db.connectAs(BOUNDED, PASSWORD)) {
        assertThat(ServerErrors.of(() -> exec(c, "SELECT pgtask.enqueue('bound.renamed.other', priority => 11)"))
            .constraint()).as("another role's bound, next to a row naming no role").isEqualTo("task_priority_bound");
      }
    } finally {
      try (Connection owner = db.connect()) {
        exec(owner, "DELETE FROM pgtask.producer_bound WHERE role_name = '" + role + "'");
        exec(owner, "REVOKE ALL ON SCHEMA pgtask FROM " + role + "_new");
        exec(owner, "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgtask FROM " + role + "_new");
      }
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + role + "_new");
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + role);
    }
    assertThat(stored("bound.renamed")).as("the renamed role's task, no longer bounded").isEqualTo(1);
  }

  private static boolean flag(Connection c) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("SELECT producer_bounds FROM pgtask.settings");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private static String bounds(Connection c, String role) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT concat_ws(',', min_priority, max_priority, past_run_at) FROM pgtask.producer_bounds WHERE role_name = ?""")) {
      ps.setString(1, role);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  private static long stored(String... kinds) throws Exception {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(
        "SELECT count(*) FROM pgtask.task WHERE kind = ANY (?)")) {
      ps.setArray(1, c.createArrayOf("text", kinds));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
