package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
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
  void theRepairPassReadsTheWaitingIndexOncePerTenantAndQueueNotOncePerWaitingTask() throws Exception {
    try (Connection c = db.connect()) {
      // a backlog: 20,000 tasks of 5 tenants, all but the 5 heads waiting (issue 31: the pass read
      // every waiting task's index entry, 470-570 ms of each rescue round beside 2,500,000 of them)
      queryLong(c, "SELECT count(*) FROM pgtask.enqueue_batch(kinds => array_fill('k'::text, ARRAY[20000]), "
          + "tenants => (SELECT array_agg('repair-reads-' || (i % 5)) FROM generate_series(1, 20000) i))");
      try {
        c.setAutoCommit(false);
        // counted within one transaction: its reads are not reported before it ends
        long before = waitingTasksRead(c);
        dev.pgtask.internal.sql.MaintenanceQueries.repairTenantHeads(dev.pgtask.internal.sql.Sql.using(c));
        long read = waitingTasksRead(c) - before;
        c.commit();
        assertThat(read).as("waiting index entries and task rows the repair pass read, beside 19,995 waiting tasks")
            .isLessThan(1_000);
      } finally {
        c.setAutoCommit(true);
        exec(c, "DELETE FROM pgtask.task WHERE tenant_id IN (SELECT id FROM pgtask.tenant WHERE name LIKE 'repair-reads-%')");
      }
    }
  }

  private static long waitingTasksRead(Connection c) throws SQLException {
    // this transaction's reads, not yet reported: the waiting index's entries (idx_tup_read) and
    // the task rows read by sequential scans (seq_tup_read), whichever way the table is read
    return queryLong(c, "SELECT pg_stat_get_xact_tuples_returned('pgtask.task_tenant_waiting_idx'::regclass) "
        + "+ pg_stat_get_xact_tuples_returned('pgtask.task'::regclass)");
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

  /**
   * enqueue_batch decides a batch's heads in one statement; the answer must be the one the row
   * trigger gives when the same tasks are enqueued one at a time in input order: against heads
   * already in the table (running, scheduled later, due), among the batch's own tasks (a tenant
   * new to the registry, many tasks of one tenant, a task due earlier than the tenant's earlier
   * ones becoming another head), per queue, and next to tasks without a tenant.
   */
  @Test
  void aBatchDecidesTheSameHeadsAsEnqueuingItsTasksOneAtATime() throws Exception {
    try (Connection c = db.connect()) {
      List<Boolean> batch = batchHeads(c, "batch-", true);
      List<Boolean> oneAtATime = batchHeads(c, "single-", false);
      assertThat(batch).as("blocked, per task in input order, of the batch").isEqualTo(oneAtATime);
      assertThat(batch).as("blocked flags of the batch").contains(true, false);
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.tenant WHERE name LIKE 'batch-%'"))
          .as("tenants registered by the batch and its set-up").isEqualTo(5);
      assertThat(queryLong(c, "SELECT max(n) FROM (SELECT count(*) AS n FROM pgtask.task t JOIN pgtask.tenant tn ON tn.id = t.tenant_id "
          + "WHERE tn.name LIKE 'batch-%' AND NOT t.blocked AND t.state = 'available' GROUP BY t.tenant_id, t.queue) x"))
          .as("most heads of one tenant in one queue after the batch (a task due before the tenant's earlier ones)")
          .isGreaterThan(1);
    }
  }

  /** Enqueues the same 150 tasks (tenants named with the prefix) after the same set-up; returns blocked per task. */
  private static List<Boolean> batchHeads(Connection c, String prefix, boolean asBatch) throws SQLException {
    // already in the table: a running head in bq1, a head scheduled in 30 minutes in bq1, a due head in bq2
    long running = enqueueIn(c, prefix + "running", "bq1", "now()");
    exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'w', lease_until = now() + interval '1 minute' "
        + "WHERE id = " + running);
    enqueueIn(c, prefix + "scheduled", "bq1", "now() + interval '30 minutes'");
    enqueueIn(c, prefix + "due", "bq2", "now()");
    String inputs = "SELECT i AS ord, 'k'::text AS kind, "
        + "CASE WHEN i % 6 = 5 THEN NULL ELSE '" + prefix + "' || (ARRAY['running', 'scheduled', 'due', 'new', 'many'])[1 + i % 6] END AS tenant, "
        + "CASE WHEN i % 6 = 4 THEN 'bq1' ELSE (ARRAY['bq1', 'bq2'])[1 + (i * 7 / 6) % 2] END AS queue, "
        + "now() + ((i * 37) % 13 - 6) * interval '10 minutes' AS run_at "
        + "FROM generate_series(1, 150) i";
    List<Long> ids = new ArrayList<>();
    if (asBatch) {
      try (var ps = c.prepareStatement("WITH inp AS (" + inputs + ") SELECT b.id FROM pgtask.enqueue_batch("
          + "kinds => (SELECT array_agg(kind ORDER BY ord) FROM inp), queues => (SELECT array_agg(queue ORDER BY ord) FROM inp), "
          + "tenants => (SELECT array_agg(tenant ORDER BY ord) FROM inp), run_ats => (SELECT array_agg(run_at ORDER BY ord) FROM inp)) b "
          + "ORDER BY b.ord");
          var rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    } else {
      try (var ps = c.prepareStatement(inputs + " ORDER BY ord"); var rs = ps.executeQuery()) {
        List<String[]> rows = new ArrayList<>();
        while (rs.next()) {
          rows.add(new String[] {rs.getString("tenant"), rs.getString("queue"), rs.getString("run_at")});
        }
        for (String[] r : rows) {
          try (var one = c.prepareStatement("SELECT pgtask.enqueue(kind => 'k', tenant => ?, queue => ?, run_at => ?::timestamptz)")) {
            one.setString(1, r[0]);
            one.setString(2, r[1]);
            one.setString(3, r[2]);
            try (var rs1 = one.executeQuery()) {
              rs1.next();
              ids.add(rs1.getLong(1));
            }
          }
        }
      }
    }
    List<Boolean> blocked = new ArrayList<>();
    for (long id : ids) {
      blocked.add(blocked(c, id));
    }
    return blocked;
  }

  @Test
  void aBatchOfManyTasksOfOneNewTenantHasOneHeadAndHandsItOnInTurn() throws Exception {
    try (Connection c = db.connect()) {
      List<Long> ids = new ArrayList<>();
      try (var ps = c.prepareStatement("SELECT b.id FROM pgtask.enqueue_batch(kinds => array_fill('k'::text, ARRAY[500]), "
          + "tenants => array_fill('one-of-many'::text, ARRAY[500])) b ORDER BY b.ord");
          var rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.tenant WHERE name = 'one-of-many'")).as("registry rows of the tenant")
          .isEqualTo(1);
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE id = ANY ('{" + ids.get(0) + "," + ids.get(499)
          + "}'::bigint[]) OR NOT blocked AND tenant_id = (SELECT id FROM pgtask.tenant WHERE name = 'one-of-many')"))
          .as("the first and last task, and every head of the tenant").isEqualTo(2);
      assertThat(blocked(c, ids.get(0))).as("the batch's first task waits").isFalse();
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + ids.get(0));
      assertThat(blocked(c, ids.get(1))).as("after the first completed, the second waits").isFalse();
      assertThat(blocked(c, ids.get(2))).as("after the first completed, the third waits").isTrue();
    }
  }

  /**
   * With dedupe keys, a task held back by its key is not inserted, so it must not make the
   * batch's later tasks of its tenant wait behind it.
   */
  @Test
  void aBatchTaskHeldBackByItsDedupeKeyIsNoHeadForTheTenantsNextTask() throws Exception {
    try (Connection c = db.connect()) {
      long holder = queryLong(c, "SELECT pgtask.enqueue(kind => 'k', dedupe_key => 'held-key')");
      List<Long> ids = new ArrayList<>();
      try (var ps = c.prepareStatement("SELECT b.id FROM pgtask.enqueue_batch(kinds => ARRAY['k', 'k'], "
          + "tenants => ARRAY['dedupe-tenant', 'dedupe-tenant'], dedupe_keys => ARRAY['held-key', NULL]) b ORDER BY b.ord");
          var rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
      assertThat(blocked(c, ids.get(1))).as("the tenant's task after the held-back one waits").isFalse();
      assertThat(ids.get(0)).as("the id answered for the held key").isEqualTo(holder);
    }
  }

  @Test
  void aHandOffReadsTheTasksItHandsOnNotTheTasksBeforeThem() throws Exception {
    try (Connection c = db.connect()) {
      // history of lower ids: a join of the picked head with the table was planned as a merge join
      // over the primary key, which read every row up to the picked id on each hand-off (4,850 rows
      // here; a larger table gets a nested loop instead, so the history is kept small)
      exec(c, "INSERT INTO pgtask.task (kind, queue, state, finished_at) SELECT 'k', 'history', 'completed', now()"
          + " FROM generate_series(1, 4000)");
      exec(c, "ANALYZE pgtask.task");
      long head = enqueue(c, "reads", "now()", 0);
      long next = enqueue(c, "reads", "now()", 0);
      c.setAutoCommit(false);
      try {
        long before = rowsFetchedByIndexScans(c);
        exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + head);
        long read = rowsFetchedByIndexScans(c) - before;
        assertThat(blocked(c, next)).as("the next task is the head").isFalse();
        assertThat(read).as("task rows fetched by index scans for one completion and its hand-off").isLessThan(100);
      } finally {
        c.rollback();
        c.setAutoCommit(true);
        exec(c, "DELETE FROM pgtask.task WHERE queue = 'history' OR tenant_id = (SELECT tenant_id FROM pgtask.task WHERE id = "
            + head + ")");
      }
    }
  }

  @Test
  void aCompletionWhoseTenantWaitsOnlyInAnotherQueueSkipsTheHandOffQuery() throws Exception {
    try (Connection c = db.connect()) {
      // the tenant's backlog in a queue nobody serves (an outage): a head and tasks waiting behind it
      enqueueIn(c, "elsewhere", "down", "now() - interval '1 hour'");
      long waitingElsewhere = enqueueIn(c, "elsewhere", "down", "now()");
      long head = enqueueIn(c, "elsewhere", "default", "now()");
      c.setAutoCommit(false);
      try {
        long before = scansOf(c, "pgtask.task_tenant_waiting_idx");
        exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + head);
        long scans = scansOf(c, "pgtask.task_tenant_waiting_idx") - before;
        assertThat(blocked(c, waitingElsewhere)).as("the task waiting in the other queue still waits").isTrue();
        // one probe per ended head's tenant and queue; the hand-off's query would read it again
        assertThat(scans).as("scans of the waiting index for a completion with nothing to hand on in its queue")
            .isEqualTo(1);
      } finally {
        c.rollback();
        c.setAutoCommit(true);
        exec(c, "DELETE FROM pgtask.task WHERE tenant_id = (SELECT tenant_id FROM pgtask.task WHERE id = " + head + ")");
      }
    }
  }

  /** Index scans of {@code index} in this session's transaction, not reported yet. */
  private static long scansOf(Connection c, String index) throws SQLException {
    return queryLong(c, "SELECT pg_stat_get_xact_numscans('" + index + "'::regclass)");
  }

  /**
   * Rows of pgtask.task this session fetched by index scans and has not reported yet: nothing is
   * reported inside a transaction, so two reads in one transaction count what it read in between.
   */
  private static long rowsFetchedByIndexScans(Connection c) throws SQLException {
    return queryLong(c, "SELECT coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = 'pgtask.task'::regclass");
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
