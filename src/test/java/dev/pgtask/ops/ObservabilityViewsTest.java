package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The operator views show what runs, on which backend, who holds which tenant, and who waits. */
class ObservabilityViewsTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("views", 8);

  @Test
  void viewsShowRunningTasksTheirBackendsTenantLocksWaitersAndWorkers() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2).workerId("viewer-1")
        .handler("test.hold", (ctx, p) -> {
          started.countDown();
          release.await(30, TimeUnit.SECONDS);
        }).build().start();
    CompletableFuture<Void> waiter = null;
    try {
      PgTask pgtask = PgTask.create(queue.pool());
      long id = pgtask.enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withTenant("acme")));
      pgtask.enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withTenant("acme")));
      pgtask.enqueue(NewTask.of("test.parked", null, TaskOptions.defaults().withQueue("parked")));
      queue.sql().exec("UPDATE pgtask.task SET run_at = now() - interval '5 minutes' WHERE queue = 'parked'");
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

      // pgtask.running: the task, its worker, the backend holding it, and its tenant lock
      String row = queue.sql().text("SELECT task_id || ' ' || kind || ' ' || tenant || ' ' || worker || ' ' || holds_tenant_lock "
          + "FROM pgtask.running");
      assertThat(row).isEqualTo(id + " test.hold acme viewer-1 true");
      long backend = queue.sql().count("SELECT backend_pid FROM pgtask.running");
      assertThat(queue.sql().count("SELECT count(*) FROM pg_locks WHERE pid = " + backend + " AND locktype = 'advisory'"))
          .as("the running view's backend holds the tenant lock").isEqualTo(1);

      // a session that waits for the same tenant lock shows up as a waiter
      long tenantId = queue.sql().count("SELECT id FROM pgtask.tenant WHERE name = 'acme'");
      long ns = queue.sql().count("SELECT lock_namespace FROM pgtask.settings");
      long[] waiterPid = new long[1];
      CountDownLatch waiting = new CountDownLatch(1);
      waiter = CompletableFuture.runAsync(() -> {
        try (Connection c = queue.database().connect(); Statement st = c.createStatement()) {
          c.setAutoCommit(false);
          try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            waiterPid[0] = rs.getLong(1);
          }
          waiting.countDown();
          st.execute("SELECT pg_advisory_xact_lock(" + ns + ", " + tenantId + ")");
          c.rollback();
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      assertThat(waiting.await(5, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() ->
          queue.sql().count("SELECT count(*) FROM pgtask.tenant_locks WHERE tenant = 'acme' AND " + waiterPid[0] + " = ANY(waiting_pids)") == 1);
      assertThat(queue.sql().text("SELECT holder_pid || ' ' || (application_name LIKE 'pgtask task " + id + " %') || ' ' || (held_for >= interval '0') "
          + "FROM pgtask.tenant_locks WHERE tenant = 'acme'")).isEqualTo(backend + " true true");

      // pgtask.queue_summary: counts per state, tenant waiters, lag of the oldest claimable task
      assertThat(queue.sql().text("SELECT running || ' ' || available || ' ' || waiting_for_tenant FROM pgtask.queue_summary WHERE queue = 'default'"))
          .isEqualTo("1 0 1");
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.queue_summary WHERE queue = 'parked' AND lag >= interval '5 minutes'")).isEqualTo(1);

      // pgtask.workers and pgtask.health
      assertThat(queue.sql().text("SELECT id || ' ' || concurrency || ' ' || array_to_string(queues, ',') FROM pgtask.workers"))
          .isEqualTo("viewer-1 2 default");
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.health WHERE notification_queue_usage >= 0 AND task_table_bytes > 0 "
          + "AND oldest_xact_pid IS NOT NULL AND oldest_xact_age >= interval '0'")).isEqualTo(1);
    } finally {
      release.countDown();
      worker.close();
      if (waiter != null) {
        waiter.get(10, TimeUnit.SECONDS);
      }
    }
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.workers")).as("workers after shutdown").isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.running")).isZero();
  }

  @Test
  void healthsOldestTransactionIsOneOfThisDatabaseNeverOneOfAnotherDatabaseOfTheServer() throws Exception {
    try (TestDatabase other = TestDatabase.create("views_other", false);
         Connection elsewhere = other.connect(); Statement inOther = elsewhere.createStatement();
         Connection here = queue.database().connect(); Statement inHere = here.createStatement()) {
      // the older transaction is in another database of the same server
      elsewhere.setAutoCommit(false);
      long otherPid = pid(inOther);
      inOther.execute("SELECT txid_current()");
      await().atMost(Duration.ofSeconds(5)).until(() -> queue.sql().count(
          "SELECT count(*) FROM pg_stat_activity WHERE pid = " + otherPid + " AND backend_xid IS NOT NULL") == 1);
      here.setAutoCommit(false);
      long herePid = pid(inHere);
      inHere.execute("SELECT txid_current()");
      await().atMost(Duration.ofSeconds(5)).until(() -> queue.sql().count(
          "SELECT count(*) FROM pg_stat_activity WHERE pid = " + herePid + " AND backend_xid IS NOT NULL") == 1);

      assertThat(queue.sql().count("SELECT oldest_xact_pid FROM pgtask.health"))
          .as("pgtask.health names the oldest transaction of its own database, not the older one of another database")
          .isEqualTo(herePid);
      elsewhere.rollback();
      here.rollback();
    }
  }

  @Test
  void healthCountsALimitWhoseSlotsHeldExceedItsMaxRunningAsOverAndNoneOtherwise() throws Exception {
    queue.sql().exec("SELECT pgtask.set_limit('kind', 'health.over', max_running => 1)");
    try (Connection holder = queue.database().connect(); Statement st = holder.createStatement()) {
      holder.setAutoCommit(false);
      // one slot held: what the limit admits, not over
      st.execute("SELECT pg_advisory_xact_lock(pgtask.slot_class(s.lock_namespace, 1024), l.id) "
          + "FROM pgtask.settings s, pgtask.flow_limit l WHERE l.key = 'health.over'");
      assertThat(queue.sql().text("SELECT slots_held || ' ' || max_running FROM pgtask.limits WHERE key = 'health.over'"))
          .isEqualTo("1 1");
      assertThat(queue.sql().count("SELECT limits_over FROM pgtask.health")).as("a full limit is not over").isZero();

      // a second lock in the limit's range (as an application taking locks in pgtask's classids would)
      st.execute("SELECT pg_advisory_xact_lock(pgtask.slot_class(s.lock_namespace, 1025), l.id) "
          + "FROM pgtask.settings s, pgtask.flow_limit l WHERE l.key = 'health.over'");
      assertThat(queue.sql().count("SELECT limits_over FROM pgtask.health"))
          .as("a limit with 2 slots held and max_running 1 is over").isEqualTo(1);
      assertThat(ops().health().limitsOver()).as("the Health record carries it").isEqualTo(1);
      holder.rollback();
      assertThat(queue.sql().count("SELECT limits_over FROM pgtask.health")).as("after the locks went").isZero();
    } finally {
      queue.sql().exec("SELECT pgtask.clear_limit('kind', 'health.over')");
    }
  }

  @Test
  void healthCountsALimitWithARunningTaskWhoseLeaseRanOutAsStuckAndNoneWhileTheLeaseHolds() throws Exception {
    queue.sql().exec("SELECT pgtask.set_limit('queue', 'limithealth', max_running => 2)");
    PgTask pgtask = PgTask.create(queue.pool());
    long id = pgtask.enqueue(NewTask.of("test.gone", null, TaskOptions.defaults().withQueue("limithealth")));
    try {
      // running under a live lease: counted, not stuck
      queue.sql().exec("UPDATE pgtask.task SET state = 'running', owner = 'gone-worker', attempt = 1, "
          + "attempted_at = now(), lease_until = now() + interval '10 minutes' WHERE id = " + id);
      assertThat(queue.sql().text("SELECT running || ' ' || stuck FROM pgtask.limits WHERE key = 'limithealth'"))
          .isEqualTo("1 0");
      assertThat(queue.sql().count("SELECT limits_stuck FROM pgtask.health")).as("while the lease holds").isZero();

      // its worker died: the lease ran out and the rescue pass has not taken it back yet
      queue.sql().exec("UPDATE pgtask.task SET lease_until = now() - interval '1 minute' WHERE id = " + id);
      assertThat(queue.sql().count("SELECT limits_stuck FROM pgtask.health"))
          .as("a limit with a running task past its lease is stuck").isEqualTo(1);
      assertThat(ops().health().limitsStuck()).as("the Health record carries it").isEqualTo(1);
      assertThat(queue.sql().count("SELECT limits_over FROM pgtask.health")).as("stuck is not over").isZero();
    } finally {
      queue.sql().exec("DELETE FROM pgtask.task WHERE id = " + id);
      queue.sql().exec("SELECT pgtask.clear_limit('queue', 'limithealth')");
    }
    assertThat(queue.sql().count("SELECT limits_stuck FROM pgtask.health")).as("after the task went").isZero();
  }

  private static PgTaskOperations ops() {
    return PgTaskOperations.create(queue.pool());
  }

  private static long pid(Statement st) throws Exception {
    try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
