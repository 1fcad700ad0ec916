package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Which waiting task becomes a tenant's head, by due time (docs/how-it-works.md, "Hand-off"): a due
 * task ahead of any that is not, then (priority, run_at, id); when none is due, the one due first;
 * and no due task ever waits behind a head that is not due. The worker-level scenario is
 * {@code worker.TenantDueHandOffTest}.
 */
class TenantDueHeadsTest {

  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("tenant_due_heads");
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void aDueWaitingTaskIsHandedTheHeadAheadOfABetterPriorityTaskNotDueYet() throws Exception {
    try (Connection c = db.connect()) {
      long a = enqueue(c, "due-first", "now()", 0);
      run(c, a);
      long b = enqueue(c, "due-first", "now()", 3);
      long later = enqueue(c, "due-first", "now() + interval '1 hour'", 0);
      complete(c, a);
      assertThat(blocked(c, b)).as("the due task (priority 3) after the head completed waits").isFalse();
      assertThat(blocked(c, later)).as("the task due in an hour (priority 0) waits").isTrue();
    }
  }

  @Test
  void whenNoWaitingTaskIsDueTheOneDueFirstBecomesTheHead() throws Exception {
    try (Connection c = db.connect()) {
      long a = enqueue(c, "none-due", "now()", 0);
      run(c, a);
      long inAnHour = enqueue(c, "none-due", "now() + interval '1 hour'", 0);
      long inTenMinutes = enqueue(c, "none-due", "now() + interval '10 minutes'", 5);
      complete(c, a);
      assertThat(blocked(c, inTenMinutes)).as("the task due in 10 minutes (priority 5) waits").isFalse();
      assertThat(blocked(c, inAnHour)).as("the task due in an hour (priority 0) waits").isTrue();
    }
  }

  @Test
  void aWaitingTaskDueBeforeTheHeadsLeftIsPromotedWhenTheRunningHeadFinishes() throws Exception {
    try (Connection c = db.connect()) {
      long a = enqueue(c, "before-heads", "now()", 0);
      run(c, a);
      long inAnHour = enqueue(c, "before-heads", "now() + interval '1 hour'", 0);
      long inTenMinutes = enqueue(c, "before-heads", "now() + interval '10 minutes'", 0);
      assertThat(blocked(c, inAnHour)).as("a task due in an hour, while the tenant's head runs, waits").isTrue();
      // a second head, scheduled in an hour (as a failed head waiting for its retry is)
      exec(c, "UPDATE pgtask.task SET blocked = false WHERE id = " + inAnHour);
      complete(c, a);
      assertThat(blocked(c, inTenMinutes)).as("the task due in 10 minutes, ahead of the head due in an hour, waits")
          .isFalse();
    }
  }

  @Test
  void aWaitingTaskMovedEarlierThanEveryHeadBecomesAnotherHead() throws Exception {
    try (Connection c = db.connect()) {
      long head = enqueue(c, "moved", "now() + interval '1 hour'", 0);
      long waiting = enqueue(c, "moved", "now() + interval '2 hours'", 0);
      long behindDue = enqueue(c, "moved-behind-due", "now()", 0);
      long stays = enqueue(c, "moved-behind-due", "now() + interval '2 hours'", 0);
      assertThat(blocked(c, waiting) && blocked(c, stays)).as("tasks due after their tenant's head wait").isTrue();

      exec(c, "SELECT pgtask.update_task(" + waiting + ", run_at => now())");
      assertThat(blocked(c, waiting)).as("the task moved to now, ahead of the head due in an hour, waits").isFalse();
      assertThat(blocked(c, head)).as("the head due in an hour waits").isFalse();
      exec(c, "SELECT pgtask.update_task(" + stays + ", run_at => now() + interval '1 minute')");
      assertThat(blocked(c, stays)).as("a task moved earlier but still after its tenant's due head waits").isTrue();
    }
  }

  @Test
  void theHandOffFindsTheDueTaskBehindABacklogNotDueYetWithoutReadingTheBacklog() throws Exception {
    Assumptions.assumeTrue(Integer.parseInt(text("SHOW server_version_num")) >= 150000,
        "pg_stat_force_next_flush() is PostgreSQL 15 on");
    try (Connection c = db.connect()) {
      long a = enqueue(c, "long-backlog", "now()", 0);
      run(c, a);
      // due from an hour on: with now() + 1 s a loaded machine made the backlog's first task due (and of
      // better priority) before the due task was even enqueued, a chance failure
      exec(c, "SELECT count(*) FROM pgtask.enqueue_batch(array_fill('k'::text, ARRAY[20000]), "
          + "tenants => array_fill('long-backlog'::text, ARRAY[20000]), "
          + "run_ats => (SELECT array_agg(now() + interval '1 hour' + i * interval '1 second') FROM generate_series(1, 20000) i), "
          + "priorities => array_fill(0, ARRAY[20000]))");
      long due = enqueue(c, "long-backlog", "now()", 3);
      exec(c, "ANALYZE pgtask.task");
      long before = readSoFar(c);
      complete(c, a);
      long read = readSoFar(c) - before;
      assertThat(blocked(c, due)).as("the due task behind 20,000 of better priority due later waits").isFalse();
      assertThat(read).as("task rows and index entries read by the hand-off (20,000 waiting)").isLessThan(100);
    }
  }

  /**
   * Index entries of pgtask.task's indexes read plus rows read by sequential scans, as the
   * cumulative statistics hold them once this session has sent its counts (it sends them when it
   * goes idle after pg_stat_force_next_flush(), PostgreSQL 15 on).
   */
  private static long readSoFar(Connection c) throws SQLException {
    exec(c, "SELECT pg_stat_force_next_flush()");
    return queryLong(c, "SELECT (SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
        + "WHERE relid = 'pgtask.task'::regclass) + (SELECT coalesce(seq_tup_read, 0) FROM pg_stat_user_tables "
        + "WHERE relid = 'pgtask.task'::regclass)");
  }

  private static long enqueue(Connection c, String tenant, String runAtExpression, int priority) throws SQLException {
    return queryLong(c, "SELECT pgtask.enqueue(kind => 'k', tenant => '" + tenant + "', run_at => " + runAtExpression
        + ", priority => " + priority + ")");
  }

  private static void run(Connection c, long id) throws SQLException {
    exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'w', lease_until = now() + interval '1 minute' "
        + "WHERE id = " + id);
  }

  private static void complete(Connection c, long id) throws SQLException {
    exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now(), owner = NULL, lease_until = NULL WHERE id = " + id);
  }

  private static String text(String sql) throws SQLException {
    try (Connection c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static boolean blocked(Connection c, long id) throws SQLException {
    return queryLong(c, "SELECT blocked::int FROM pgtask.task WHERE id = " + id) == 1;
  }
}
