package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.CancelResult;
import dev.pgtask.InvalidTaskException;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskBusyException;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskOptions;
import dev.pgtask.TaskStateException;
import dev.pgtask.TaskUpdate;
import dev.pgtask.testsupport.LogCapture;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Cancel, retry, delete and update: immediate on queued tasks, never blocking on running ones. */
class TaskOperationsTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("ops", 8, "CREATE TABLE effect (task_id bigint)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  PgTaskWorker worker;
  CountDownLatch release;
  CountDownLatch started;
  final AtomicBoolean interrupted = new AtomicBoolean();

  @BeforeEach
  void startWorker() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM effect");
    release = new CountDownLatch(1);
    started = new CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(2).queues("ops").pollInterval(Duration.ofMillis(300))
        .handler("test.hold", (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            st.execute("INSERT INTO effect VALUES (" + ctx.taskId() + ")");
          }
          started.countDown();
          try {
            release.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            interrupted.set(true);
            throw e;
          }
        }));
    // a task started before the worker's LISTEN pgtask_control could not be told of a cancellation
    // (the listener's session also runs polls and maintenance ticks, so its last statement says nothing: ask the worker)
    workers.awaitListening(worker, Duration.ofSeconds(30));
  }

  @AfterEach
  void releaseHandlers() {
    release.countDown(); // before the fixture closes the worker
  }

  private long runningTask() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withQueue("ops")));
    assertThat(started.await(10, TimeUnit.SECONDS)).as("handler started").isTrue();
    return id;
  }

  private long queuedTask(TaskOptions options) {
    // a queue no worker serves
    return queue.pgtask().enqueue(NewTask.of("test.hold", Map.of("v", 1), options.withQueue("parked")));
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  @Test
  void cancellingAQueuedTaskIsImmediateAndHandsTheTenantOn() throws Exception {
    long first = queuedTask(TaskOptions.defaults().withTenant("acme"));
    long second = queuedTask(TaskOptions.defaults().withTenant("acme"));
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + second + " AND blocked")).as("second waits").isEqualTo(1);
    assertThat(queue.pgtask().cancel(first)).isEqualTo(CancelResult.CANCELLED);
    assertThat(state(first)).isEqualTo("cancelled");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + second + " AND NOT blocked"))
        .as("the tenant's next task became its head").isEqualTo(1);
    assertThatThrownBy(() -> queue.pgtask().cancel(first)).isInstanceOf(TaskStateException.class).hasMessageContaining("already cancelled");
  }

  @Test
  void cancellingARunningTaskInterruptsAndRollsItBack() throws Exception {
    long id = runningTask();
    assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    workers.awaitState(id, "cancelled", Duration.ofSeconds(10));
    assertThat(interrupted.get()).as("handler interrupted").isTrue();
    assertThat(queue.sql().count("SELECT count(*) FROM effect")).as("effects of the cancelled attempt").isZero();
  }

  @Test
  void cancellingATaskLockedAheadByACommitBatchEndsItWithoutRunningIt() throws Exception {
    CountDownLatch blockerStarted = new CountDownLatch(1);
    CountDownLatch unblock = new CountDownLatch(1);
    java.util.Set<Long> ran = java.util.concurrent.ConcurrentHashMap.newKeySet();
    TaskOptions batchQueue = TaskOptions.defaults().withQueue("ops-batch");
    try (PgTaskWorker batching = PgTaskWorker.builder(queue.pool()).concurrency(1).prefetch(8).queues("ops-batch")
        .commitBatch(8, Duration.ofSeconds(30))
        .handler("test.batched", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          ran.add(ctx.taskId());
          if (p.has("block")) {
            blockerStarted.countDown();
            unblock.await(30, TimeUnit.SECONDS);
          }
        }, dev.pgtask.HandlerOptions.defaults().withSharedTransaction())
        .build().start()) {
      // the kind's first runs, alone: tasks share a transaction only when their kind is known to be short
      List<Long> warm = queue.pgtask().enqueueAll(List.of(NewTask.of("test.batched", Map.of(), batchQueue),
          NewTask.of("test.batched", Map.of(), batchQueue), NewTask.of("test.batched", Map.of(), batchQueue),
          NewTask.of("test.batched", Map.of(), batchQueue)));
      await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'completed' AND id IN ("
          + warm.toString().replaceAll("[\\[\\]]", "") + ")") == warm.size());
      ran.clear();
      List<Long> ids = queue.pgtask().enqueueAll(List.of(NewTask.of("test.batched", Map.of(), batchQueue),
          NewTask.of("test.batched", Map.of("block", true), batchQueue), NewTask.of("test.batched", Map.of(), batchQueue),
          NewTask.of("test.batched", Map.of(), batchQueue)));
      long first = ids.get(0);
      long blocker = ids.get(1);
      long target = ids.get(2);
      long last = ids.get(3);
      assertThat(blockerStarted.await(10, TimeUnit.SECONDS)).as("the blocking task started").isTrue();
      // the target is locked ahead by the batch's transaction, not started
      try (Connection other = queue.database().connect(); Statement st = other.createStatement()) {
        assertThatThrownBy(() -> st.executeQuery("SELECT 1 FROM pgtask.task WHERE id = " + target + " FOR UPDATE NOWAIT"))
            .as("locking the target's row").hasMessageContaining("could not obtain lock");
      }
      try (LogCapture log = LogCapture.start()) {
        assertThat(queue.pgtask().cancel(target)).isEqualTo(CancelResult.CANCEL_REQUESTED);
        // the worker heard the notification and verified the request: the task it locked ahead is told to stop
        java.util.regex.Pattern stopping = java.util.regex.Pattern.compile(
            "pgtask: task " + target + " attempt \\d+: cancellation requested; stopping it");
        await("the worker stops task " + target).atMost(Duration.ofSeconds(10))
            .until(() -> stopping.matcher(log.text()).find());
      }
      unblock.countDown();
      await().atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(state(target)) && "completed".equals(state(last)));
      assertThat(ran).as("handlers that ran").containsExactlyInAnyOrder(first, blocker, last);
      assertThat(state(first)).isEqualTo("completed");
      assertThat(state(blocker)).isEqualTo("completed");
    }
  }

  @Test
  void operationsOnARunningTaskFailFastNamingTheWorker() throws Exception {
    long id = runningTask();
    long t0 = System.nanoTime();
    assertThatThrownBy(() -> queue.pgtask().delete(id)).isInstanceOf(TaskBusyException.class)
        .hasMessageContaining("task " + id + " is running on worker " + worker.workerId() + " since");
    assertThatThrownBy(() -> queue.pgtask().update(id, TaskUpdate.payload(Map.of("v", 2)))).isInstanceOf(TaskBusyException.class)
        .hasMessageContaining("is running on worker " + worker.workerId());
    assertThatThrownBy(() -> queue.pgtask().retry(id)).isInstanceOf(TaskBusyException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("time to fail three operations").isLessThan(Duration.ofSeconds(2));
    assertThat(state(id)).isEqualTo("running");
    release.countDown();
    workers.awaitState(id, "completed", Duration.ofSeconds(10));
    assertThat(queue.sql().text("SELECT payload::text FROM pgtask.task WHERE id = " + id)).as("payload untouched").isEqualTo("{}");
  }

  @Test
  void plainSqlUpdateOfARunningTaskWaitsForItToFinish() throws Exception {
    long id = runningTask();
    try (Connection c = queue.database().connect(); Statement st = c.createStatement()) {
      st.execute("SET lock_timeout = '300ms'");
      assertThatThrownBy(() -> st.executeUpdate("UPDATE pgtask.task SET priority = 7 WHERE id = " + id))
          .as("a plain UPDATE blocks on the running task's row lock").hasMessageContaining("lock timeout");
    }
    CompletableFuture<Instant> updated = CompletableFuture.supplyAsync(() -> {
      try (Connection c = queue.database().connect(); Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE pgtask.task SET priority = 7 WHERE id = " + id);
        return Instant.now();
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    });
    // an absence (the UPDATE still waits), proved with a bounded wait
    await().pollDelay(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> true);
    assertThat(updated).as("UPDATE still waiting while the task runs").isNotDone();
    release.countDown();
    updated.get(10, TimeUnit.SECONDS);
    assertThat(state(id)).as("the task finished before the UPDATE went through").isEqualTo("completed");
  }

  @Test
  void retryDeleteAndUpdateOfQueuedAndFinishedTasks() throws Exception {
    long queued = queuedTask(TaskOptions.defaults());
    queue.pgtask().update(queued,
        TaskUpdate.payload(Map.of("v", 9)).withRunAt(Instant.parse("2100-01-01T00:00:00Z")).withPriority(3));
    assertThat(queue.sql().text("SELECT p.payload->>'v' || ' ' || p.priority || ' ' || t.state FROM pgtask.tasks t JOIN pgtask.task p USING (id) WHERE id = " + queued))
        .isEqualTo("9 3 scheduled");
    queue.pgtask().update(queued, TaskUpdate.priority(5));
    assertThat(queue.sql().text("SELECT p.payload->>'v' || ' ' || p.priority || ' ' || (p.run_at = '2100-01-01T00:00:00Z') FROM pgtask.task p WHERE id = " + queued))
        .as("what the change does not set stays as it is").isEqualTo("9 5 true");
    assertThatThrownBy(() -> queue.pgtask().update(queued, TaskUpdate.payload("[1]"))).isInstanceOf(InvalidTaskException.class);
    assertThatThrownBy(() -> queue.pgtask().retry(queued)).isInstanceOf(TaskStateException.class).hasMessageContaining("scheduled");
    queue.pgtask().cancel(queued);
    queue.pgtask().retry(queued);
    assertThat(state(queued)).isEqualTo("available");
    queue.pgtask().delete(queued);
    assertThat(state(queued)).isNull();
    assertThatThrownBy(() -> queue.pgtask().delete(queued)).isInstanceOf(TaskNotFoundException.class).hasMessageContaining("no such task");
    assertThatThrownBy(() -> queue.pgtask().cancel(queued)).isInstanceOf(TaskNotFoundException.class);
  }

  @Test
  void retryingADiscardedTaskGivesItAnotherAttempt() throws Exception {
    long id = queuedTask(TaskOptions.defaults().withMaxAttempts(1));
    queue.sql().exec("UPDATE pgtask.task SET state = 'discarded', attempt = 1, finished_at = now() WHERE id = " + id);
    queue.pgtask().retry(id);
    assertThat(queue.sql().text("SELECT state || ' ' || attempt || '/' || max_attempts FROM pgtask.tasks WHERE id = " + id))
        .isEqualTo("available 1/2");
  }
}
