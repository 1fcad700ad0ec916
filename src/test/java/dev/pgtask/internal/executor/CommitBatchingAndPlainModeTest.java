package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Commit batching keeps each task atomic; plain mode runs without a transaction and stays fenced. */
class CommitBatchingAndPlainModeTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("batching", 10,
      "CREATE TABLE effect (task_id bigint, attempt int, tenant text, started_at timestamptz, finished_at timestamptz)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks(4);

  PgTaskWorker worker;

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM effect");
  }

  @Test
  void batchedCommitsKeepEachTaskAtomicAndTenantsExclusive() throws Exception {
    worker = workers.start(workers.builder().concurrency(4).prefetch(100).commitBatch(16, Duration.ofMillis(100))
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .handler("test.effect", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            st.execute("INSERT INTO effect VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ", "
                + (ctx.tenant() == null ? "NULL" : "'" + ctx.tenant() + "'") + ", clock_timestamp(), NULL)");
            st.execute("UPDATE effect SET finished_at = clock_timestamp() WHERE task_id = " + ctx.taskId()
                + " AND attempt = " + ctx.attempt());
          }
          if (ctx.taskId() % 7 == 0 && ctx.attempt() == 1) {
            throw new IllegalStateException("first attempt of every 7th task fails");
          }
        }, dev.pgtask.HandlerOptions.defaults().withSharedTransaction()));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 600; i++) {
      TaskOptions o = i % 3 == 0 ? TaskOptions.defaults() : TaskOptions.defaults().withTenant("t" + (i % 10));
      tasks.add(NewTask.of("test.effect", null, o));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("completed", 600, Duration.ofSeconds(60));
    assertThat(queue.sql().count("SELECT count(*) FROM effect")).as("one effect per task: failed attempts rolled back to their savepoint").isEqualTo(600);
    assertThat(queue.sql().count("SELECT count(*) FROM effect e JOIN pgtask.task t ON t.id = e.task_id WHERE e.attempt <> t.attempt"))
        .as("effects from attempts that did not complete").isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id % 7 = 0 AND (attempt <> 2 OR jsonb_array_length(errors) <> 1)"))
        .as("every 7th task: one recorded failure, then success").isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM effect a JOIN effect b ON a.tenant = b.tenant AND a.task_id < b.task_id "
        + "AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)"))
        .as("overlapping executions of one tenant").isZero();
  }

  @Test
  void aBatchLockedAheadNamesEachTaskWhileItRunsAndGivesBackWhatItDidNotRunOnShutdown() throws Exception {
    List<String> names = java.util.Collections.synchronizedList(new ArrayList<>());
    java.util.concurrent.CountDownLatch firstStarted = new java.util.concurrent.CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(1).prefetch(40).commitBatch(32, Duration.ofSeconds(30))
        .shutdownTimeout(Duration.ofSeconds(10))
        .handler("test.named", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement();
              var rs = st.executeQuery("SELECT current_setting('application_name')")) {
            rs.next();
            names.add(ctx.taskId() + "=" + rs.getString(1));
          }
          firstStarted.countDown();
          Thread.sleep(100); // the task's work: a few run before the shutdown, the rest stay locked ahead
        }, dev.pgtask.HandlerOptions.defaults().withSharedTransaction()));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      tasks.add(NewTask.of("test.named", null));
    }
    queue.pgtask().enqueueAll(tasks);
    assertThat(firstStarted.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    // a few of the batch's tasks ran (100 ms each, one at a time); the rest are locked ahead, not run
    await("three handlers ran").atMost(Duration.ofSeconds(10)).until(() -> names.size() >= 3);
    worker.close();

    assertThat(names).as("application_name seen by each handler").isNotEmpty()
        .allSatisfy(n -> assertThat(n.substring(n.indexOf('=') + 1))
            .startsWith("pgtask task " + n.substring(0, n.indexOf('=')) + " "));
    long completed = queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'");
    assertThat(completed).as("tasks whose handler ran before the shutdown").isEqualTo(names.size());
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'available' AND attempt = 0 AND owner IS NULL"))
        .as("tasks locked ahead in the batch but not run: given back, attempt not spent").isEqualTo(30 - completed);
  }

  @Test
  void aSettingAHandlerMakesNeverReachesTheNextTasksOfItsBatch() throws Exception {
    // documented in configuration.md: SET LOCAL / set_config(..., true) ends the batch after its task
    java.util.Map<Long, String> seen = new ConcurrentHashMap<>();
    java.util.Map<Long, Long> transactionOf = new ConcurrentHashMap<>();
    // reads the setting an earlier task may have left; sets it transaction-locally when told to
    dev.pgtask.TaskHandler<com.fasterxml.jackson.databind.JsonNode> readAndMaybeSet = (ctx, p) -> {
      try (Statement st = ctx.connection().createStatement();
          java.sql.ResultSet rs = st.executeQuery("SELECT coalesce(current_setting('app.last_task', true), ''), txid_current()")) {
        rs.next();
        seen.put(ctx.taskId(), rs.getString(1));
        transactionOf.put(ctx.taskId(), rs.getLong(2));
      }
      if (p != null && p.path("set").asBoolean()) {
        try (var ps = ctx.connection().prepareStatement("SELECT set_config('app.last_task', ?, true)")) {
          ps.setString(1, Long.toString(ctx.taskId()));
          ps.execute();
        }
      }
    };
    worker = workers.start(workers.builder().concurrency(1).prefetch(100).commitBatch(16, Duration.ofSeconds(5))
        .handler("test.reader", com.fasterxml.jackson.databind.JsonNode.class, readAndMaybeSet,
            HandlerOptions.defaults().withSharedTransaction())
        .handler("test.setter", com.fasterxml.jackson.databind.JsonNode.class, readAndMaybeSet,
            HandlerOptions.defaults().withSharedTransaction()));
    List<NewTask> warm = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      // the kinds' first runs, alone; the setter sets nothing yet, so it is batched like the reader
      warm.add(NewTask.of("test.reader", null));
      warm.add(NewTask.of("test.setter", null));
    }
    queue.pgtask().enqueueAll(warm);
    workers.awaitTasks("completed", 8, Duration.ofSeconds(30));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      tasks.add(i % 10 == 3 ? NewTask.of("test.setter", java.util.Map.of("set", true)) : NewTask.of("test.reader", null));
    }
    List<Long> ids = queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("completed", 48, Duration.ofSeconds(30));
    assertThat(ids.stream().map(seen::get).toList()).as("settings seen by the tasks after a task that set one").allMatch(String::isEmpty);
    assertThat(ids.stream().map(transactionOf::get).distinct().count()).as("transactions for 40 tasks (batching happened)")
        .isLessThan(30);
  }

  @Test
  void plainModeRunsWithoutATransactionCompletesInBatchesAndKeepsLeasesAlive() throws Exception {
    Set<String> seen = ConcurrentHashMap.newKeySet();
    AtomicReference<String> tenantConnection = new AtomicReference<>();
    worker = workers.start(workers.builder().concurrency(4).leaseDuration(Duration.ofMillis(600))
        .handler("test.plain", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          if (ctx.tenant() != null) {
            tenantConnection.set(ctx.connection().getMetaData().getURL());
            return;
          }
          try {
            ctx.connection();
            seen.add("connection");
          } catch (IllegalStateException e) {
            seen.add("no transaction");
          }
          if (p.path("slow").asBoolean()) {
            Thread.sleep(2_000); // work that outlasts the 600 ms lease
          }
        }, HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      tasks.add(NewTask.of("test.plain", null));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("completed", 1_000, Duration.ofSeconds(30));
    assertThat(seen).as("what plain handlers saw of a transaction").containsExactly("no transaction");

    long slow = queue.pgtask().enqueue(NewTask.of("test.plain", java.util.Map.of("slow", true)));
    await().atMost(Duration.ofSeconds(5)).until(() -> "running".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + slow)));
    Maintenance rescue = Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(worker));
    long until = System.nanoTime() + Duration.ofMillis(1_500).toNanos();
    while (System.nanoTime() < until) {
      assertThat(rescue.runNow(dev.pgtask.internal.maintenance.RescuePass.class)).as("plain task rescued although its worker renews the lease").isZero();
      // the pace of the rescue passes while the task runs, not a wait for a condition
      await().pollDelay(Duration.ofMillis(200)).atMost(Duration.ofSeconds(1)).until(() -> true);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + slow)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + slow)).isEqualTo(1);

    queue.pgtask().enqueue(NewTask.of("test.plain", null, TaskOptions.defaults().withTenant("acme")));
    await().atMost(Duration.ofSeconds(5)).until(() -> tenantConnection.get() != null);
    assertThat(tenantConnection.get()).as("a plain-mode kind's task with a tenant runs in a transaction").startsWith("jdbc:postgresql:");
  }

  @Test
  void cancellingARunningPlainTaskEndsItAtOnceAndInterruptsItsHandler() throws Exception {
    java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch interrupted = new java.util.concurrent.CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(2)
        .pollInterval(PgTaskWorker.DEFAULT_POLL_INTERVAL) // the cancellation is heard, not found by a poll
        .handler("test.plain.hold", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          started.countDown();
          try {
            Thread.sleep(30_000); // the task's work: only the cancellation's interrupt ends it early
          } catch (InterruptedException e) {
            interrupted.countDown();
            throw e;
          }
        }, HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)));
    // the worker hears the cancellation on its LISTEN pgtask_control connection
    workers.awaitListening(worker, Duration.ofSeconds(10));
    long id = queue.pgtask().enqueue(NewTask.of("test.plain.hold", null));
    assertThat(started.await(10, java.util.concurrent.TimeUnit.SECONDS)).as("handler started").isTrue();
    // a plain handler holds no row lock: the task is cancelled at once, and its worker is told
    assertThat(queue.pgtask().cancel(id)).isEqualTo(dev.pgtask.CancelResult.CANCELLED);
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)).isEqualTo("cancelled");
    assertThat(interrupted.await(10, java.util.concurrent.TimeUnit.SECONDS)).as("handler interrupted").isTrue();
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .until(() -> "cancelled".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)));
  }
}
