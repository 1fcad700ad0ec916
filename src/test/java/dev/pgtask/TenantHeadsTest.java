package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Tenant-fair scheduling at the SQL level, as docs/how-it-works.md describes it: in each queue, a
 * tenant's "head" tasks are claimable, its other queued tasks wait (blocked) and are handed the head in
 * (priority, run_at, id) order. Tasks are finished here by plain UPDATE/DELETE, as a worker would.
 */
class TenantHeadsTest {

  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("tenant_heads");
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void aTenantsFirstTaskIsItsHeadAndLaterOnesWait() throws Exception {
    try (Connection c = db.connect()) {
      long head = enqueue(c, "first-waits", "now()", 0);
      long second = enqueue(c, "first-waits", "now()", 0);
      long otherTenant = enqueue(c, "someone-else", "now()", 0);
      assertThat(blocked(c, head)).as("a tenant's first task waits").isFalse();
      assertThat(blocked(c, second)).as("a tenant's second task waits").isTrue();
      assertThat(blocked(c, otherTenant)).as("another tenant's first task waits").isFalse();
      assertThat(viewState(c, second)).as("a waiting task shows in pgtask.tasks as").isEqualTo("waiting");
    }
  }

  @Test
  void finishingTheHeadHandsItToTheNextWaitingTaskByPriorityThenRunAtThenId() throws Exception {
    try (Connection c = db.connect()) {
      long head = enqueue(c, "handoff", "now() - interval '1 hour'", 0);
      long low = enqueue(c, "handoff", "now()", 5);
      long urgentLater = enqueue(c, "handoff", "now() - interval '20 minutes'", 1);
      long urgentEarlier = enqueue(c, "handoff", "now() - interval '30 minutes'", 1);
      assertThat(blocked(c, low) && blocked(c, urgentLater) && blocked(c, urgentEarlier))
          .as("tasks enqueued behind a due head wait").isTrue();

      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + head);
      assertThat(blocked(c, urgentEarlier)).as("after the head completed, the lowest priority, earliest run_at waits")
          .isFalse();
      assertThat(blocked(c, urgentLater)).as("the next in line still waits").isTrue();

      exec(c, "DELETE FROM pgtask.task WHERE id = " + urgentEarlier);
      assertThat(blocked(c, urgentLater)).as("after the head was deleted, the next in line waits").isFalse();

      exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'w', lease_until = now() + interval '1 minute' "
          + "WHERE id = " + urgentLater);
      assertThat(blocked(c, low)).as("while the head runs, the last task waits").isTrue();
      exec(c, "UPDATE pgtask.task SET state = 'retryable', owner = NULL, lease_until = NULL, "
          + "run_at = now() + interval '1 minute' WHERE id = " + urgentLater);
      assertThat(blocked(c, low)).as("after the head failed and retries later, the last task waits").isFalse();
    }
  }

  @Test
  void aNewTaskDueEarlierThanEveryHeadBecomesAnotherHead() throws Exception {
    try (Connection c = db.connect()) {
      long scheduled = enqueue(c, "early-bird", "now() + interval '1 hour'", 0);
      long later = enqueue(c, "early-bird", "now() + interval '2 hours'", 0);
      long dueNow = enqueue(c, "early-bird", "now()", 0);
      assertThat(blocked(c, scheduled)).as("the tenant's first task, scheduled in an hour, waits").isFalse();
      assertThat(blocked(c, later)).as("a task due after the head waits").isTrue();
      assertThat(blocked(c, dueNow)).as("a task due before every head waits").isFalse();
    }
  }

  @Test
  void whileTheRemainingHeadsAreScheduledLaterOnlyADueWaitingTaskIsPromoted() throws Exception {
    try (Connection c = db.connect()) {
      long scheduled = enqueue(c, "later-heads", "now() + interval '1 hour'", 0);
      long dueHead = enqueue(c, "later-heads", "now() - interval '1 minute'", 0);
      long notDue = enqueue(c, "later-heads", "now() + interval '2 hours'", -10);
      long due = enqueue(c, "later-heads", "now()", 0);
      assertThat(blocked(c, notDue) && blocked(c, due)).as("tasks behind the due head wait").isTrue();
      assertThat(blocked(c, scheduled)).as("the scheduled head waits").isFalse();

      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + dueHead);
      assertThat(blocked(c, due)).as("the due waiting task, after the due head completed, waits").isFalse();
      assertThat(blocked(c, notDue)).as("the not-yet-due waiting task (despite its priority) waits").isTrue();
    }
  }

  @Test
  void oneStatementFinishingManyHeadsHandsOnEachTenantOnce() throws Exception {
    try (Connection c = db.connect()) {
      long[] heads = new long[3];
      long[] next = new long[3];
      long[] last = new long[3];
      for (int t = 0; t < 3; t++) {
        heads[t] = enqueue(c, "many-" + t, "now() - interval '1 hour'", 0);
        next[t] = enqueue(c, "many-" + t, "now() - interval '30 minutes'", 0);
        last[t] = enqueue(c, "many-" + t, "now()", 0);
      }
      // a second head of tenant many-0 (due earlier than every head it has): two heads of one
      // tenant end in the same statement below, and the tenant still gets one new head
      long secondHead = enqueue(c, "many-0", "now() - interval '2 hours'", 0);
      assertThat(blocked(c, secondHead)).as("a task due before every head is another head").isFalse();

      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id IN ("
          + heads[0] + ", " + heads[1] + ", " + heads[2] + ", " + secondHead + ")");
      for (int t = 0; t < 3; t++) {
        assertThat(blocked(c, next[t])).as("tenant many-%d's next task after the statement", t).isFalse();
        assertThat(blocked(c, last[t])).as("tenant many-%d's last task after the statement", t).isTrue();
      }
    }
  }

  @Test
  void theRepairPassGivesAHeadToATenantLeftWithOnlyWaitingTasks() throws Exception {
    try (Connection c = db.connect()) {
      long head = enqueue(c, "orphaned", "now()", 0);
      long waiting = enqueue(c, "orphaned", "now()", 0);
      long busyHead = enqueue(c, "still-running", "now()", 0);
      long busyWaiting = enqueue(c, "still-running", "now()", 0);
      exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'w', lease_until = now() + interval '1 minute' "
          + "WHERE id = " + busyHead);
      // the head finishes without the hand-off trigger (as the race between an enqueue and a
      // hand-off can leave a tenant): only a waiting task is left
      exec(c, "SET session_replication_role = replica");
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + head);
      exec(c, "RESET session_replication_role");
      assertThat(blocked(c, waiting)).as("the orphaned tenant's task before the repair pass waits").isTrue();

      int repaired = dev.pgtask.internal.sql.MaintenanceQueries.repairTenantHeads(dev.pgtask.internal.sql.Sql.using(c));
      assertThat(repaired).as("tenants given a head by the repair pass").isEqualTo(1);
      assertThat(blocked(c, waiting)).as("the orphaned tenant's task after the repair pass waits").isFalse();
      assertThat(blocked(c, busyWaiting)).as("a tenant whose head runs keeps its task waiting").isTrue();
    }
  }

  @Test
  void tenantIdsComeFromTheRegistryAndAKnownTenantBurnsNoId() throws Exception {
    try (Connection c = db.connect()) {
      enqueue(c, "registry-a", "now()", 0);
      long a = queryLong(c, "SELECT id FROM pgtask.tenant WHERE name = 'registry-a'");
      for (int i = 0; i < 3; i++) {
        enqueue(c, "registry-a", "now()", 0);
      }
      queryLong(c, "SELECT count(*) FROM pgtask.enqueue_batch(kinds => ARRAY['k', 'k'], tenants => ARRAY['registry-a', 'registry-a'])");
      enqueue(c, "registry-b", "now()", 0);
      long b = queryLong(c, "SELECT id FROM pgtask.tenant WHERE name = 'registry-b'");
      assertThat(b).as("registry id of the next new tenant after re-using registry-a five times").isEqualTo(a + 1);
      assertThat(queryLong(c, "SELECT count(DISTINCT tenant_id) FROM pgtask.task t JOIN pgtask.tenant n ON n.id = t.tenant_id "
          + "WHERE n.name = 'registry-a'")).as("registry ids used by registry-a's tasks").isEqualTo(1);
    }
  }

  @Test
  void headsArePerTenantAndQueueSoAHeadInAnUnservedQueueBlocksNothingElsewhere() throws Exception {
    try (Connection c = db.connect()) {
      long unserved = enqueueIn(c, "per-queue", "nobody-works-here", "now() - interval '1 hour'");
      long unservedNext = enqueueIn(c, "per-queue", "nobody-works-here", "now()");
      long served = enqueueIn(c, "per-queue", "default", "now()");
      long servedNext = enqueueIn(c, "per-queue", "default", "now()");
      assertThat(blocked(c, unserved)).as("the tenant's head in the unserved queue waits").isFalse();
      assertThat(blocked(c, unservedNext)).as("the next task in the unserved queue waits").isTrue();
      assertThat(blocked(c, served)).as("the same tenant's first task in another queue waits").isFalse();
      assertThat(blocked(c, servedNext)).as("the next task in the other queue waits").isTrue();

      // hand-off stays within the queue: the served head runs and completes
      exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'w', lease_until = now() + interval '1 minute' "
          + "WHERE id = " + served);
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + served);
      assertThat(blocked(c, servedNext)).as("after the served head completed, the next in its queue waits").isFalse();
      assertThat(blocked(c, unservedNext)).as("after the served head completed, the next in the unserved queue waits")
          .isTrue();
      // and the repair pass works per queue too
      exec(c, "SET session_replication_role = replica");
      exec(c, "DELETE FROM pgtask.task WHERE id = " + unserved);
      exec(c, "RESET session_replication_role");
      dev.pgtask.internal.sql.MaintenanceQueries.repairTenantHeads(dev.pgtask.internal.sql.Sql.using(c));
      assertThat(blocked(c, unservedNext)).as("after the repair pass, the unserved queue's orphaned task waits").isFalse();
    }
  }

  private static long enqueueIn(Connection c, String tenant, String queue, String runAtExpression) throws SQLException {
    return queryLong(c, "SELECT pgtask.enqueue(kind => 'k', tenant => '" + tenant + "', queue => '" + queue
        + "', run_at => " + runAtExpression + ")");
  }

  private static long enqueue(Connection c, String tenant, String runAtExpression, int priority) throws SQLException {
    return queryLong(c, "SELECT pgtask.enqueue(kind => 'k', tenant => '" + tenant + "', run_at => " + runAtExpression
        + ", priority => " + priority + ")");
  }

  private static boolean blocked(Connection c, long id) throws SQLException {
    return queryLong(c, "SELECT blocked::int FROM pgtask.task WHERE id = " + id) == 1;
  }

  private static String viewState(Connection c, long id) throws SQLException {
    try (var ps = c.prepareStatement("SELECT state FROM pgtask.tasks WHERE id = " + id); var rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }
}
