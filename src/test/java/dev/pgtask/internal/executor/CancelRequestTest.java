package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.CancelResult;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.sql.TaskSql;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A cancellation of a running task is not lost when its worker does not hear the notification:
 * {@code pgtask.cancel_task} writes the request down, the worker reads it when its listener
 * connects, and a run that ends any other way than by completing ends the task cancelled.
 */
class CancelRequestTest {

  @RegisterExtension
  static final QueueDatabase queue =
      new QueueDatabase("cancel_request", 8, "CREATE TABLE effect (task_id bigint)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  PgTaskWorker worker;
  // the worker's LISTEN connection is made only once this opens
  CountDownLatch listenGate;
  CountDownLatch started;
  CountDownLatch release;
  final AtomicBoolean interrupted = new AtomicBoolean();
  final Set<Long> ran = ConcurrentHashMap.newKeySet();

  @BeforeEach
  void startWorkerNotYetListening() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request; DELETE FROM effect");
    listenGate = new CountDownLatch(1);
    started = new CountDownLatch(1);
    release = new CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(2).queues("cr")
        .shutdownTimeout(Duration.ofSeconds(1))
        .listenConnection(() -> {
          listenGate.await();
          return queue.database().connect();
        })
        .handler("cr.hold", JsonNode.class, (ctx, p) -> {
          ran.add(ctx.taskId());
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
          if (p.has("fail")) {
            throw new IllegalStateException("the handler failed");
          }
          if (p.has("snooze")) {
            throw new dev.pgtask.SnoozeTaskException(Duration.ofMinutes(5));
          }
        }));
  }

  @AfterEach
  void releaseListenerAndHandlers() {
    listenGate.countDown(); // before the fixture closes the worker
    release.countDown();
  }

  private long runningTask(Map<String, ?> payload) throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("cr.hold", payload, TaskOptions.defaults().withQueue("cr")));
    assertThat(started.await(10, TimeUnit.SECONDS)).as("handler started").isTrue();
    return id;
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  private boolean listening() {
    return worker.listening();
  }

  @Test
  void aCancellationRequestedWhileTheWorkerWasNotListeningIsReadAtItsNextPoll() throws Exception {
    long id = runningTask(Map.of());
    assertThat(listening()).as("the worker's listener connected").isFalse();
    assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    assertThat(queue.sql().text("SELECT task_id || ' ' || attempt FROM pgtask.cancel_request")).as("the request, written down")
        .isEqualTo(id + " 1");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.running WHERE task_id = " + id + " AND cancel_requested_at IS NOT NULL"))
        .as("shown by pgtask.running").isEqualTo(1);
    // unheard (no listener), but read from pgtask.cancel_request at the worker's next poll (200 ms)
    workers.awaitState(id, "cancelled", Duration.ofSeconds(10));
    assertThat(listening()).as("still without a listener").isFalse();
    listenGate.countDown();
    assertThat(interrupted.get()).as("handler interrupted").isTrue();
    assertThat(queue.sql().count("SELECT count(*) FROM effect")).as("effects of the cancelled attempt").isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.running")).isZero();

    // the rescue pass deletes requests whose attempt is no longer running
    dev.pgtask.internal.WorkerAccess.runtime(worker).maintenance().runNow(dev.pgtask.internal.maintenance.RescuePass.class);
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.cancel_request")).as("requests left").isZero();
  }

  @Test
  void aRunThatFailsAfterAnUnheardCancellationEndsCancelledInsteadOfRetrying() throws Exception {
    long id = runningTask(Map.of("fail", true));
    assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    release.countDown(); // the handler throws; the worker never heard the request
    await().atMost(Duration.ofSeconds(10)).until(() -> !"running".equals(state(id)));
    assertThat(state(id)).isEqualTo("cancelled");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND finished_at IS NOT NULL")).isEqualTo(1);
    assertThat(queue.sql().text("SELECT string_agg(e ->> 'error', ' | ' ORDER BY ord) FROM pgtask.task, "
        + "jsonb_array_elements(errors) WITH ORDINALITY AS x(e, ord) WHERE id = " + id))
        .as("the error history").contains("the handler failed").endsWith(TaskSql.CANCELLED_AS_REQUESTED);
    assertThat(worker.stats().cancelled()).as("counted as cancelled").isEqualTo(1);
    assertThat(worker.stats().retried()).as("counted as retried").isZero();
  }

  @Test
  void aRunThatSnoozesAfterAnUnheardCancellationEndsCancelledInsteadOfWaiting() throws Exception {
    long id = runningTask(Map.of("snooze", true));
    assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    release.countDown(); // the handler asks to run again in 5 minutes; the worker never heard the request
    await().atMost(Duration.ofSeconds(10)).until(() -> !"running".equals(state(id)));
    assertThat(state(id)).isEqualTo("cancelled");
    assertThat(queue.sql().text("SELECT errors -> -1 ->> 'error' FROM pgtask.task WHERE id = " + id))
        .isEqualTo(TaskSql.CANCELLED_AS_REQUESTED);
  }

  @Test
  void aTaskReleasedAtShutdownAfterAnUnheardCancellationEndsCancelled() throws Exception {
    long id = runningTask(Map.of());
    assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    worker.close(); // interrupts the handler after the shutdown timeout and releases the task
    assertThat(state(id)).isEqualTo("cancelled");
    assertThat(queue.sql().count("SELECT count(*) FROM effect")).isZero();
  }

  @Test
  void aHintNamingATaskBeforeItIsClaimedChangesNothing() throws Exception {
    listenGate.countDown();
    await().atMost(Duration.ofSeconds(10)).until(this::listening);
    TaskOptions soon = TaskOptions.defaults().withQueue("cr").withDelay(Duration.ofSeconds(1));
    long named = queue.pgtask().enqueue(NewTask.of("cr.hold", Map.of(), soon));
    // what a NOTIFY pgtask_control from any role amounts to: a hint, with no request behind it
    dev.pgtask.internal.WorkerAccess.runtime(worker).executor().hint(named);
    queue.sql().exec("NOTIFY pgtask_control, 'cancel " + named + " 1'");
    release.countDown();
    workers.awaitState(named, "completed", Duration.ofSeconds(10));
    assertThat(ran).as("handlers that ran").containsExactly(named);
  }

  @Test
  void aCancelRequestStandingWhenItsTaskIsLockedEndsItCancelledWithoutRunning() throws Exception {
    listenGate.countDown();
    await().atMost(Duration.ofSeconds(10)).until(this::listening);
    TaskOptions soon = TaskOptions.defaults().withQueue("cr").withDelay(Duration.ofSeconds(1));
    long cancelled = queue.pgtask().enqueue(NewTask.of("cr.hold", Map.of(), soon));
    long otherAttempt = queue.pgtask().enqueue(NewTask.of("cr.hold", Map.of(), soon));
    // what cancel_task writes when it finds the row locked by the claim, between claim and start
    queue.sql().exec("INSERT INTO pgtask.cancel_request (task_id, attempt) VALUES (" + cancelled + ", 1), ("
        + otherAttempt + ", 2)");
    release.countDown();
    await().atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(state(cancelled))
        && "completed".equals(state(otherAttempt)));
    assertThat(ran).as("handlers that ran").containsExactly(otherAttempt);
  }
}
