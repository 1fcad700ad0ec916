package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.DiscardTaskException;
import dev.pgtask.NewTask;
import dev.pgtask.RetryTaskException;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A failed attempt's outcome is recorded under the task's own locks: between the handler's failure
 * and its recorded outcome there is no moment in which the task row (or its tenant lock) is free
 * while the task is still {@code running}. So a rescue pass never takes a live worker's task (no
 * "worker lost" entry, no second run), and no other task of the tenant starts before the outcome.
 *
 * <p>To hit that window reliably, each handler outlasts its short lease and, just before it
 * throws, starts a probe on its own connection that loops the rescue pass's own test (the task is
 * running, its lease expired, its row lock free: {@code FOR UPDATE SKIP LOCKED}) and, when it
 * wins, runs the rescue statement in that transaction — what any worker's rescue pass would do.
 */
class FailureUnderOwnLocksTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("own_locks", 6);

  /** How many tasks per case: each one is a chance for the window to show. */
  static final int ROUNDS = 3;

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();
  final List<String> runs = new CopyOnWriteArrayList<>();
  final List<Thread> probes = new CopyOnWriteArrayList<>();
  final AtomicInteger rescuedByProbe = new AtomicInteger();
  final AtomicInteger tenantLockSeenFreeWhileRunning = new AtomicInteger();

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request");
  }

  @AfterEach
  void joinProbes() throws Exception {
    for (Thread t : probes) { // before the fixture closes the worker
      t.join(15_000);
    }
  }

  private void startWorker(Duration lease, boolean rescueProbe, boolean tenantProbe) {
    workers.start(workers.builder().concurrency(1).pollInterval(Duration.ofMillis(100))
        .leaseDuration(lease).rescueInterval(Duration.ofMillis(200))
        // a retry never comes round again within the test: a second run can only be a rescue's
        .retryBackoff(Duration.ofHours(1), Duration.ofHours(1))
        .shutdownTimeout(Duration.ofSeconds(2))
        .handler("own.fail", JsonNode.class, (ctx, p) -> {
          long id = ctx.taskId();
          runs.add(id + ":" + ctx.attempt());
          if (p.path("outcome").asText().equals("none")) {
            return;
          }
          // the work outlasts the claim's lease: only the row lock says this worker is alive
          if (rescueProbe && ctx.attempt() == 1) { // a run after a rescue is not raced again
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id
                    + " AND lease_until < now()") == 1);
            probe(ready -> rescueWhenUnlocked(id, ready));
          }
          if (tenantProbe) {
            probe(ready -> tryTenantLockWhileRunning(id, ready));
          }
          switch (p.path("outcome").asText()) {
            case "discard" -> throw new DiscardTaskException("handler gives up");
            case "snooze" -> throw new SnoozeTaskException(Duration.ofHours(1));
            case "retry" -> throw new RetryTaskException(Duration.ofHours(1), "handler retries later");
            default -> throw new IllegalStateException("handler failed");
          }
        }));
  }

  private void probe(ThrowingRunnable body) throws InterruptedException {
    java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
    Thread t = new Thread(() -> {
      try {
        body.run(ready);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, "own-locks-probe");
    t.setDaemon(true);
    probes.add(t);
    t.start();
    ready.await(); // the probe's connection is open and looping before the handler throws
  }

  @FunctionalInterface
  interface ThrowingRunnable {
    void run(java.util.concurrent.CountDownLatch ready) throws Exception;
  }

  /**
   * Loops the rescue's test for one task until it is no longer running; when its row lock is free
   * while it still runs with an expired lease, rescues it in that same transaction.
   */
  private void rescueWhenUnlocked(long id, java.util.concurrent.CountDownLatch ready) throws Exception {
    try (Connection c = queue.database().connect()) {
      try (var st = c.createStatement()) {
        st.execute("SET application_name = 'own-locks-probe'");
      }
      c.setAutoCommit(false);
      try (PreparedStatement free = c.prepareStatement("SELECT id FROM pgtask.task WHERE id = ? AND state = 'running' "
          + "AND lease_until < now() FOR UPDATE SKIP LOCKED");
          PreparedStatement state = c.prepareStatement("SELECT state FROM pgtask.task WHERE id = ?")) {
        free.setLong(1, id);
        state.setLong(1, id);
        ready.countDown();
        long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < until) {
          boolean found;
          try (ResultSet rs = free.executeQuery()) {
            found = rs.next();
          }
          if (found) {
            rescuedByProbe.addAndGet(MaintenanceQueries.rescueExpired(Sql.using(c), 10));
            c.commit();
            return;
          }
          String s;
          try (ResultSet rs = state.executeQuery()) {
            s = rs.next() ? rs.getString(1) : null;
          }
          c.rollback();
          if (!"running".equals(s)) {
            return;
          }
        }
      }
    }
  }

  /**
   * Loops taking the task's tenant lock (as another task of the tenant would) until the task is no
   * longer running; counts the times the lock was free while the task still showed running.
   */
  private void tryTenantLockWhileRunning(long id, java.util.concurrent.CountDownLatch ready) throws Exception {
    try (Connection c = queue.database().connect()) {
      c.setAutoCommit(false);
      long namespace = queue.sql().count("SELECT lock_namespace FROM pgtask.settings");
      long tenantId = queue.sql().count("SELECT tenant_id FROM pgtask.task WHERE id = " + id);
      try (PreparedStatement lock = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?::int, ?::int)");
          PreparedStatement state = c.prepareStatement("SELECT state FROM pgtask.task WHERE id = ?")) {
        lock.setLong(1, namespace);
        lock.setLong(2, tenantId);
        state.setLong(1, id);
        ready.countDown();
        long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < until) {
          boolean got;
          try (ResultSet rs = lock.executeQuery()) {
            rs.next();
            got = rs.getBoolean(1);
          }
          // read after the lock was taken: a fresh snapshot, later than the lock's release
          String s;
          try (ResultSet rs = state.executeQuery()) {
            s = rs.next() ? rs.getString(1) : null;
          }
          c.rollback();
          if (got && "running".equals(s)) {
            tenantLockSeenFreeWhileRunning.incrementAndGet();
          }
          if (!"running".equals(s)) {
            return;
          }
        }
      }
    }
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  private List<String> errors(long id) throws Exception {
    return queue.sql().rows("SELECT e ->> 'error' FROM pgtask.task, jsonb_array_elements(coalesce(errors, '[]')) "
        + "WITH ORDINALITY x(e, n) WHERE id = " + id + " ORDER BY n");
  }

  /**
   * Runs ROUNDS tasks that fail with {@code outcome}, each raced by a rescue; then a marker task
   * (concurrency 1: a rescued task, due at once, would run again before it).
   */
  private List<Long> raceRescue(String outcome) throws Exception {
    return onSlowServer(() -> raceRescueOnSlowServer(outcome));
  }

  private <T> T onSlowServer(java.util.concurrent.Callable<T> body) throws Exception {
    // a slow server: every UPDATE of a task (but the probe's) waits 20 ms before it locks a row.
    // It widens the window between a failed attempt's rollback and its outcome's UPDATE from well
    // under a millisecond to 20 ms, so the probe finds it every time; a worker that records the
    // outcome before it lets go of the row has no window to widen.
    queue.sql().exec("CREATE OR REPLACE FUNCTION public.own_locks_slow_update() RETURNS trigger LANGUAGE plpgsql AS $$ "
        + "BEGIN IF current_setting('application_name') <> 'own-locks-probe' THEN PERFORM pg_sleep(0.02); END IF; "
        + "RETURN NULL; END $$; "
        + "CREATE TRIGGER own_locks_slow_update BEFORE UPDATE ON pgtask.task "
        + "FOR EACH STATEMENT EXECUTE FUNCTION public.own_locks_slow_update()");
    try {
      return body.call();
    } finally {
      queue.sql().exec("DROP TRIGGER own_locks_slow_update ON pgtask.task; DROP FUNCTION public.own_locks_slow_update()");
    }
  }

  private List<Long> raceRescueOnSlowServer(String outcome) throws Exception {
    startWorker(Duration.ofMillis(300), true, false);
    List<Long> ids = new java.util.ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      long id = queue.pgtask().enqueue(NewTask.of("own.fail", Map.of("outcome", outcome), TaskOptions.defaults().withMaxAttempts(5)));
      ids.add(id);
      await().atMost(Duration.ofSeconds(15)).until(() -> !"running".equals(state(id)) && !"available".equals(state(id)));
      for (Thread t : probes) {
        t.join(15_000);
      }
    }
    long marker = queue.pgtask().enqueue(NewTask.of("own.fail", Map.of("outcome", "none")));
    workers.awaitState(marker, "completed", Duration.ofSeconds(15));
    for (long id : ids) {
      assertThat(errors(id)).as("error history of task " + id + " (" + outcome + "); rescued by the probe: "
          + rescuedByProbe.get()).noneMatch(e -> e.contains("worker lost"));
      assertThat(runs).as("runs of task " + id).filteredOn(r -> r.startsWith(id + ":")).containsExactly(id + ":1");
    }
    return ids;
  }

  @Test
  void aDiscardByTheHandlerIsRecordedUnderTheTasksLocksAndNeverLooksLikeALostWorker() throws Exception {
    for (long id : raceRescue("discard")) {
      assertThat(state(id)).isEqualTo("discarded");
      assertThat(errors(id)).as("error history of task " + id).hasSize(1).allMatch(e -> e.contains("handler gives up"));
    }
  }

  @Test
  void aSnoozeByTheHandlerIsRecordedUnderTheTasksLocksAndNeverLooksLikeALostWorker() throws Exception {
    for (long id : raceRescue("snooze")) {
      assertThat(state(id)).isEqualTo("scheduled");
      assertThat(errors(id)).as("error history of snoozed task " + id).isEmpty();
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id
          + " AND run_at > now() + interval '50 minutes'")).as("snoozed for the handler's hour").isEqualTo(1);
    }
  }

  @Test
  void aRetryByTheHandlerIsRecordedUnderTheTasksLocksAndNeverLooksLikeALostWorker() throws Exception {
    for (long id : raceRescue("retry")) {
      assertThat(state(id)).isEqualTo("retryable");
      assertThat(errors(id)).as("error history of task " + id).hasSize(1).allMatch(e -> e.contains("handler retries later"));
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id
          + " AND run_at > now() + interval '50 minutes'")).as("retried at the handler's time").isEqualTo(1);
    }
  }

  @Test
  void aHandlerExceptionIsRecordedUnderTheTasksLocksAndNeverLooksLikeALostWorker() throws Exception {
    for (long id : raceRescue("runtime")) {
      assertThat(state(id)).isEqualTo("retryable");
      assertThat(errors(id)).as("error history of task " + id).hasSize(1)
          .allMatch(e -> e.contains("IllegalStateException") && e.contains("handler failed"));
    }
  }

  @Test
  void theTenantLockOfAFailingTaskIsHeldUntilItsOutcomeIsRecorded() throws Exception {
    onSlowServer(() -> {
      tenantLockRace();
      return null;
    });
  }

  private void tenantLockRace() throws Exception {
    startWorker(Duration.ofSeconds(60), false, true);
    String tenant = "own-locks-" + System.nanoTime();
    List<Long> ids = new java.util.ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      // each waits for the one before (one tenant): every failure is probed
      ids.add(queue.pgtask().enqueue(NewTask.of("own.fail", Map.of("outcome", "runtime"),
          TaskOptions.defaults().withTenant(tenant))));
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id IN ("
        + ids.toString().replaceAll("[\\[\\]]", "") + ") AND state = 'retryable'") == ROUNDS);
    for (Thread t : probes) {
      t.join(15_000);
    }
    assertThat(probes).as("probes started").hasSize(ROUNDS);
    assertThat(tenantLockSeenFreeWhileRunning.get())
        .as("times another task of the tenant could take its lock while a failed task's outcome was not yet recorded")
        .isZero();
  }

}
