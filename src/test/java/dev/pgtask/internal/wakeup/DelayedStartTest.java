package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tasks due later start when they are due, not at the next poll, whoever made them due: the
 * wake-up notification of a task due later carries its delay, and the worker sets its one
 * due-time timer. The workers here poll once a minute, so a start within the bound can only come
 * from that timer.
 */
class DelayedStartTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("delayed_start", 6);

  private static final Duration POLL = Duration.ofMinutes(1);
  // generous: the benchmark measures the real figure (tens of milliseconds at most)
  private static final Duration LATE_BOUND = Duration.ofMillis(1_500);

  final Map<Long, Instant> startedAt = new ConcurrentHashMap<>();
  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  HikariDataSource otherPool;

  @BeforeEach
  void startWorker() throws SQLException {
    queue.sql().exec("DELETE FROM pgtask.task");
    otherPool = queue.database().pool(2);
    PgTaskWorker worker = workers.start(workers.builder().concurrency(2).pollInterval(POLL)
        .handler("test.delayed", (ctx, payload) -> startedAt.put(ctx.taskId(), Instant.now()))
        .handler("test.long", (ctx, payload) -> Thread.sleep(800))); // the task's work
    // the worker's first claim (at start) has happened, and its LISTENs are in place
    await().atMost(Duration.ofSeconds(10)).until(() -> worker.lastClaimAt() != null && worker.listening());
  }

  @AfterEach
  void closeOtherPool() {
    otherPool.close();
  }

  private Duration lateness(long id, Instant due) {
    await().atMost(POLL.dividedBy(2)).until(() -> startedAt.containsKey(id));
    return Duration.between(due, startedAt.get(id));
  }

  @Test
  void aTaskEnqueuedByAnotherProcessForLaterStartsAtItsTimeNotAtTheNextPoll() {
    // another pool: the worker hears of the task only through LISTEN/NOTIFY, as from another process
    PgTask elsewhere = PgTask.create(otherPool);
    Instant due = Instant.now().plusSeconds(2);
    long id = elsewhere.enqueue(NewTask.of("test.delayed", null, TaskOptions.defaults().withRunAt(due)));
    Duration late = lateness(id, due);
    assertThat(late).as("start minus run_at").isGreaterThanOrEqualTo(Duration.ZERO).isLessThan(LATE_BOUND);
  }

  @Test
  void aTaskEnqueuedFromSqlForLaterStartsAtItsTime() throws SQLException {
    long id = Long.parseLong(queue.sql().text(
        "SELECT pgtask.enqueue('test.delayed', run_at => clock_timestamp() + interval '1500 milliseconds')"));
    Instant due = Instant.parse(queue.sql().text(
        "SELECT to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM pgtask.task WHERE id = " + id));
    assertThat(lateness(id, due)).isLessThan(LATE_BOUND);
  }

  @Test
  void aTenantsTaskHandedTheHeadForLaterStartsAtItsTime() throws SQLException {
    // the tenant's running task holds the head; the next one, due in 2 s, waits behind it and is
    // handed the head (by the completion's trigger) while still not due
    PgTask pgtask = PgTask.create(otherPool);
    pgtask.enqueue(NewTask.of("test.long", null, TaskOptions.defaults().withTenant("t1")));
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
        "SELECT count(*) FROM pgtask.task WHERE kind = 'test.long' AND state = 'running'") == 1);
    Instant due = Instant.now().plusSeconds(2);
    long id = pgtask.enqueue(NewTask.of("test.delayed", null, TaskOptions.defaults().withTenant("t1").withRunAt(due)));
    assertThat(queue.sql().text("SELECT blocked::text FROM pgtask.task WHERE id = " + id))
        .as("waiting behind its tenant's running task").isEqualTo("true");
    assertThat(lateness(id, due)).isLessThan(LATE_BOUND);
  }

  @Test
  void manyTasksDueAtDifferentTimesEachStartOnTime() throws Exception {
    PgTask elsewhere = PgTask.create(otherPool);
    Map<Long, Instant> due = new ConcurrentHashMap<>();
    Instant base = Instant.now().plusMillis(1_500);
    for (int i = 0; i < 6; i++) {
      // enqueued latest-first: each new one is earlier than the timer the worker already has
      Instant at = base.plusMillis(300L * (5 - i));
      due.put(elsewhere.enqueue(NewTask.of("test.delayed", null, TaskOptions.defaults().withRunAt(at))), at);
    }
    for (Map.Entry<Long, Instant> e : due.entrySet()) {
      assertThat(lateness(e.getKey(), e.getValue())).as("task due at %s", e.getValue()).isLessThan(LATE_BOUND);
    }
  }

  @Test
  void delayedTasksEnqueuedBeforeTheWorkerStartedStartAtTheirTimeNotAtTheFirstPoll() throws Exception {
    // enqueued while no worker of queue "deploy" listens: their notifications reach nobody
    PgTask elsewhere = PgTask.create(otherPool);
    Map<Long, Instant> due = new ConcurrentHashMap<>();
    Instant base = Instant.now().plusMillis(5_000); // a start takes up to about 2 s (the listener's wait)
    for (int i = 0; i < 3; i++) {
      Instant at = base.plusMillis(700L * i);
      due.put(elsewhere.enqueue(NewTask.of("test.delayed", null, TaskOptions.defaults().withQueue("deploy")
          .withRunAt(at))), at);
    }
    try (PgTaskWorker deployed = workers.builder().queues("deploy").concurrency(2).pollInterval(POLL)
        .workerId("deployed-1")
        .handler("test.delayed", (ctx, payload) -> startedAt.put(ctx.taskId(), Instant.now()))
        .build().start()) {
      assertThat(Instant.now()).as("the worker started before the first task was due").isBefore(base);
      for (Map.Entry<Long, Instant> e : due.entrySet()) {
        assertThat(lateness(e.getKey(), e.getValue())).as("task due at %s", e.getValue()).isLessThan(LATE_BOUND);
      }
    }
  }
}
