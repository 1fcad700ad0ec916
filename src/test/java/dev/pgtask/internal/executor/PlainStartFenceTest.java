package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.CancelResult;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A cancelled or rescued plain-mode task never starts: a plain task claimed by a worker and waiting
 * there for a free executor thread holds no row lock, so {@code pgtask.cancel_task} cancels it at
 * once and the rescue pass can take it back; when its turn comes the worker must check that the
 * claim still stands, not trust the notification it could not hear.
 *
 * <p>The worker's listener never connects during these tests (its connection factory waits on a
 * gate), so it hears no cancellation; it finds work by polling and by in-process wake-ups.
 */
class PlainStartFenceTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("plain_start_fence", 6);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  PgTaskWorker worker;
  CountDownLatch listenGate;
  CountDownLatch release;
  final List<String> runs = new CopyOnWriteArrayList<>(); // "id:attempt" per handler start

  @BeforeEach
  void startDeafWorker() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request");
    listenGate = new CountDownLatch(1);
    release = new CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(1).prefetch(1)
        .shutdownTimeout(Duration.ofSeconds(2))
        .listenConnection(() -> {
          listenGate.await();
          return queue.database().connect();
        })
        .handler("plain.task", JsonNode.class, (ctx, p) -> {
          runs.add(ctx.taskId() + ":" + ctx.attempt());
          if (p.path("hold").asBoolean()) {
            release.await(30, TimeUnit.SECONDS);
          }
        }, HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)));
  }

  @AfterEach
  void releaseHandlerAndListener() {
    release.countDown(); // before the fixture closes the worker
    listenGate.countDown();
  }

  private long enqueue(boolean hold) {
    return queue.pgtask().enqueue(NewTask.of("plain.task", hold ? Map.of("hold", true) : Map.of()));
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  /** A first task occupies the only thread; a second is claimed and waits here for it. */
  private long[] oneRunningOneWaiting() throws Exception {
    long first = enqueue(true);
    await("the first task runs").atMost(Duration.ofSeconds(10)).until(() -> runs.contains(first + ":1"));
    long waiting = enqueue(false);
    await("the second task is claimed").atMost(Duration.ofSeconds(10)).until(() -> "running".equals(state(waiting)));
    assertThat(runs).as("handlers started while the only thread is busy").containsExactly(first + ":1");
    assertThat(queue.sql().count("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgtask listen "
        + worker.workerId() + "'")).as("the worker's listener sessions (it must not hear the cancellation)").isZero();
    return new long[] {first, waiting};
  }

  @Test
  void aPlainTaskCancelledWhileWaitingForAThreadNeverStarts() throws Exception {
    long[] t = oneRunningOneWaiting();
    long waiting = t[1];
    assertThat(queue.pgtask().cancel(waiting)).as("a waiting plain task holds no row lock").isEqualTo(CancelResult.CANCELLED);
    release.countDown();
    // the positive condition: a task claimed after it has run, so the cancelled one's turn has passed
    await("the first task completes").atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(state(t[0])));
    long later = enqueue(false);
    await("a later task runs").atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(state(later)));
    assertThat(runs).as("handler starts of the cancelled task").noneMatch(r -> r.startsWith(waiting + ":"));
    assertThat(state(waiting)).isEqualTo("cancelled");
  }

  @Test
  void aPlainTaskRescuedWhileWaitingForAThreadNeverStartsOnItsStaleClaim() throws Exception {
    long[] t = oneRunningOneWaiting();
    long waiting = t[1];
    // as a rescue pass would find it, had the heartbeat stalled: lease expired, row not locked
    try (Connection c = queue.database().connect()) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.execute("UPDATE pgtask.task SET lease_until = now() - interval '1 second' WHERE id = " + waiting);
      }
      assertThat(MaintenanceQueries.rescueExpired(Sql.using(c), 10)).as("tasks rescued").isEqualTo(1);
      c.commit();
    }
    assertThat(queue.sql().text("SELECT state || ' ' || attempt FROM pgtask.tasks WHERE id = " + waiting)).isEqualTo("retryable 1");
    release.countDown();
    // the positive condition: the rescued task is claimed again and runs as attempt 2
    await("the rescued task runs again and completes").atMost(Duration.ofSeconds(10))
        .until(() -> "completed".equals(state(waiting)));
    assertThat(runs).as("handler starts of the rescued task: only its new claim's attempt")
        .filteredOn(r -> r.startsWith(waiting + ":")).containsExactly(waiting + ":2");
  }
}
