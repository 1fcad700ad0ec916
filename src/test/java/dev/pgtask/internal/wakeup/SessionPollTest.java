package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * While its listener listens, a worker's poll runs on the listener's session (docs/how-it-works.md,
 * "Maintenance: one elected worker"), and it is still the backstop of lost notifications: a task
 * whose notification never arrived starts at the next poll, and a cancel request that was never
 * notified reaches its running task at the next poll.
 */
class SessionPollTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("session_poll", 6);

  static final Duration POLL = Duration.ofMillis(500);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  PgTaskWorker worker;
  CountDownLatch started;
  CountDownLatch release;
  final AtomicBoolean interrupted = new AtomicBoolean();

  @BeforeEach
  void startListeningWorker() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request");
    started = new CountDownLatch(1);
    release = new CountDownLatch(1);
    // a long lease: the lease keeper's own check of the held tasks (every third of it) comes too late
    // to stand in for the poll's
    worker = workers.start(workers.builder().concurrency(2).queues("sp").pollInterval(POLL)
        .leaseDuration(Duration.ofSeconds(60)).shutdownTimeout(Duration.ofSeconds(1))
        .handler("sp.run", JsonNode.class, (ctx, p) -> {
          started.countDown();
          if (p.has("hold")) {
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              interrupted.set(true);
              throw e;
            }
          }
        }));
    workers.awaitListening(worker, Duration.ofSeconds(10));
  }

  @AfterEach
  void releaseHandlers() {
    release.countDown(); // before the fixture closes the worker
  }

  /**
   * Enqueues a task due in 2 s in a transaction whose triggers do not fire: no notification is sent
   * for it (neither "due now" nor "due in 2 s"), and the claims the worker made at start are over
   * before it is due.
   */
  private long enqueueUnnotifiedDueSoon(String payload) throws Exception {
    try (Connection c = queue.database().connect(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      st.execute("SET LOCAL session_replication_role = replica");
      long id;
      try (var rs = st.executeQuery("SELECT pgtask.enqueue('sp.run', '" + payload
          + "'::jsonb, queue := 'sp', run_at := now() + interval '2 seconds')")) {
        rs.next();
        id = rs.getLong(1);
      }
      c.commit();
      return id;
    }
  }

  @Test
  void aTaskWhoseNotificationWasLostStartsAtTheNextPollWhileTheWorkerListens() throws Exception {
    long claimsBefore = worker.stats().claimQueries();
    long id = enqueueUnnotifiedDueSoon("{}");
    assertThat(started.await(7, TimeUnit.SECONDS)).as("the unnotified task started at a poll (every "
        + POLL.toMillis() + " ms)").isTrue();
    await().atMost(Duration.ofSeconds(10))
        .until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)));
    assertThat(worker.listening()).as("the listener listened all along").isTrue();
    assertThat(worker.stats().listenerReconnects()).as("no reconnect woke the worker").isZero();
    assertThat(worker.stats().claimQueries() - claimsBefore)
        .as("claims: the poll on the session claims nothing itself, it wakes the claim loop when a task is due")
        .isBetween(1L, 3L);
  }

  @Test
  void anUnnotifiedCancelRequestReachesItsRunningTaskAtTheNextPollWhileTheWorkerListens() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("sp.run", Map.of("hold", true), TaskOptions.defaults().withQueue("sp")));
    assertThat(started.await(10, TimeUnit.SECONDS)).as("handler started").isTrue();
    // the request as pgtask.cancel_task writes it down, without its notification
    queue.sql().exec("INSERT INTO pgtask.cancel_request (task_id, attempt) VALUES (" + id + ", 1)");
    await("the cancellation, read at a poll (every " + POLL.toMillis() + " ms)").atMost(Duration.ofSeconds(5))
        .until(() -> "cancelled".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)));
    assertThat(interrupted.get()).as("handler interrupted").isTrue();
    assertThat(worker.listening()).as("the listener listened all along").isTrue();
  }
}
