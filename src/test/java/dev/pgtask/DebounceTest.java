package dev.pgtask;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.testsupport.NotificationFence;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.ServerErrors;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Debounce: while a task enqueued with a debounce key has not started, the next enqueue of that key
 * replaces its payload and moves its start to now + the interval (one task, one run, the last
 * payload); a started task is never rewritten; bad input is refused by name with nothing stored;
 * tenant heads and wake-ups hold for a debounced task as for any other.
 */
class DebounceTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("debounce", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  private final List<Integer> ran = new CopyOnWriteArrayList<>();

  @AfterEach
  void clean() throws Exception {
    workers.closeAll();
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  /** Enqueues through SQL in its own transaction and returns the id. */
  private static long sqlEnqueue(String args) throws SQLException {
    try (Connection c = queue.database().connect(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT pgtask.enqueue(" + args + ")")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long count(String sql) throws SQLException {
    return queue.sql().count(sql);
  }

  /** A handler that records each run's payload {@code n}. */
  private TaskHandler<JsonNode> recording() {
    return (ctx, payload) -> ran.add(payload.get("n").asInt());
  }

  @Test
  void tenRapidEnqueuesOfOneKeyStoreOneTaskWithTheLastPayloadThatAWorkerRunsOnceWhenTheLastIntervalEnds()
      throws Exception {
    // a poll far beyond the test: the task is started by the wake-up its last enqueue sent
    PgTaskWorker worker = workers.start(workers.builder().queues("rapid").concurrency(2).pollInterval(Duration.ofSeconds(60))
        .handler("debounce.rapid", recording()));
    workers.awaitListening(worker, Duration.ofSeconds(10));
    long first = 0;
    for (int n = 1; n <= 10; n++) {
      long id = sqlEnqueue("kind => 'debounce.rapid', queue => 'rapid', payload => '{\"n\": " + n + "}',"
          + " dedupe_key => 'rapid-key', debounce => interval '1.5 seconds'");
      if (n == 1) {
        first = id;
      }
      assertThat(id).as("id returned to enqueue %d of the key", n).isEqualTo(first);
    }
    long lastEnqueue = System.nanoTime();
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE kind = 'debounce.rapid'"))
        .as("tasks stored for 10 enqueues of one debounce key").isEqualTo(1);
    assertThat(queue.sql().text("SELECT payload->>'n' FROM pgtask.task WHERE id = " + first))
        .as("payload of the pending task: the last enqueue's").isEqualTo("10");
    workers.awaitState(first, "completed", Duration.ofSeconds(10));
    assertThat(Duration.ofNanos(System.nanoTime() - lastEnqueue))
        .as("from the last enqueue to the run's completion (1.5 s debounce, poll 60 s)")
        .isLessThan(Duration.ofSeconds(5));
    assertThat(ran).as("payloads the worker ran").containsExactly(10);
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE id = " + first + " AND attempted_at >= run_at"))
        .as("the run started no earlier than the last enqueue's now() + interval").isEqualTo(1);
  }

  @Test
  void eachEnqueueMovesTheStartToItsNowPlusItsInterval() throws Exception {
    try (Connection c = queue.database().connect()) {
      c.setAutoCommit(false);
      for (String interval : List.of("1 hour", "2 hours", "10 minutes")) {
        long id;
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pgtask.enqueue(kind => 'debounce.move',"
                 + " dedupe_key => 'move-key', debounce => interval '" + interval + "')")) {
          rs.next();
          id = rs.getLong(1);
        }
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT t.run_at = now() + interval '" + interval + "', t.run_at"
                 + " FROM pgtask.task t WHERE t.id = " + id)) {
          rs.next();
          assertThat(rs.getBoolean(1)).as("run_at %s is the enqueue's now() + %s", rs.getString(2), interval)
              .isTrue();
        }
        c.commit(); // the next enqueue's now() is later
      }
    }
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE kind = 'debounce.move'"))
        .as("tasks of the key").isEqualTo(1);
  }

  @Test
  void anEnqueueWhileTheTaskRunsCreatesTheNextTaskAndLeavesTheRunningTasksPayloadAlone() throws Exception {
    CountDownLatch firstRunning = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    workers.start(workers.builder().queues("running").concurrency(2).handler("debounce.running", (ctx, p) -> {
      ran.add(p.get("n").asInt());
      if (p.get("n").asInt() == 1) {
        firstRunning.countDown();
        release.await(30, TimeUnit.SECONDS);
      }
    }));
    long first = queue.pgtask().enqueue(NewTask.of("debounce.running", Map.of("n", 1),
        TaskOptions.defaults().withQueue("running").withDedupeKey("running-key").withDebounce(Duration.ofMillis(50))));
    assertThat(firstRunning.await(10, TimeUnit.SECONDS)).as("the first task runs").isTrue();
    long second = queue.pgtask().enqueue(NewTask.of("debounce.running", Map.of("n", 2),
        TaskOptions.defaults().withQueue("running").withDedupeKey("running-key").withDebounce(Duration.ofMillis(50))));
    assertThat(second).as("id of the enqueue made while the key's task runs").isNotEqualTo(first);
    assertThat(workers.state(first)).as("the first task when the second enqueue returned: it waited for nothing")
        .isEqualTo("running");
    assertThat(queue.sql().text("SELECT payload->>'n' FROM pgtask.task WHERE id = " + first))
        .as("payload of the running task").isEqualTo("1");
    release.countDown();
    workers.awaitState(first, "completed", Duration.ofSeconds(10));
    workers.awaitState(second, "completed", Duration.ofSeconds(10));
    assertThat(ran).as("payloads run, in order").containsExactly(1, 2);
  }

  @Test
  void aFailedRunsRetryAndThePendingTaskEnqueuedWhileItRanBothRun() throws Exception {
    CountDownLatch firstRunning = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger firstRuns = new AtomicInteger();
    workers.start(workers.builder().queues("retry").concurrency(2).retryBackoff(Duration.ofMillis(10), Duration.ofMillis(10))
        .handler("debounce.retry", (ctx, p) -> {
          ran.add(p.get("n").asInt());
          if (p.get("n").asInt() == 1 && firstRuns.incrementAndGet() == 1) {
            firstRunning.countDown();
            release.await(30, TimeUnit.SECONDS);
            throw new IllegalStateException("first run fails");
          }
        }));
    long first = sqlEnqueue("kind => 'debounce.retry', queue => 'retry', payload => '{\"n\": 1}',"
        + " dedupe_key => 'retry-key', debounce => interval '10 milliseconds'");
    assertThat(firstRunning.await(10, TimeUnit.SECONDS)).as("the first task runs").isTrue();
    // pending for long enough that the failed run's retry comes back while it waits
    long second = sqlEnqueue("kind => 'debounce.retry', queue => 'retry', payload => '{\"n\": 2}',"
        + " dedupe_key => 'retry-key', debounce => interval '1 second'");
    release.countDown();
    // the retry (retryable, then available, with the key) and the pending task never collide
    workers.awaitState(first, "completed", Duration.ofSeconds(10));
    workers.awaitState(second, "completed", Duration.ofSeconds(10));
    assertThat(ran).as("payloads run: the first, its retry, then the pending one").containsExactly(1, 1, 2);
  }

  @Test
  void aDebouncedEnqueueWithoutADedupeKeyIsRefusedByNameAndStoresNothing() throws Exception {
    assertRefused("kind => 'debounce.bad', debounce => interval '1 second'", "needs a dedupe_key");
  }

  @Test
  void aDebounceOfZeroOrLessOrOverADayIsRefusedByNameAndStoresNothing() throws Exception {
    assertRefused("kind => 'debounce.bad', dedupe_key => 'k', debounce => interval '0'", "above zero");
    assertRefused("kind => 'debounce.bad', dedupe_key => 'k', debounce => interval '-1 second'", "above zero");
    assertRefused("kind => 'debounce.bad', dedupe_key => 'k', debounce => interval '1 day 1 second'",
        "at most 1 day");
  }

  @Test
  void aDebounceWithARunAtIsRefusedByNameAndStoresNothing() throws Exception {
    assertRefused("kind => 'debounce.bad', dedupe_key => 'k', debounce => interval '1 second',"
        + " run_at => now() + interval '1 minute'", "not both");
  }

  @Test
  void aDebouncedEnqueueOfAnotherKindQueueOrTenantThanThePendingTaskIsRefusedAndChangesNothing() throws Exception {
    long held = sqlEnqueue("kind => 'debounce.holder', payload => '{\"n\": 1}', dedupe_key => 'held',"
        + " debounce => interval '1 hour'");
    String runAt = queue.sql().text("SELECT run_at::text FROM pgtask.task WHERE id = " + held);
    for (String other : List.of("kind => 'debounce.other'", "kind => 'debounce.holder', queue => 'elsewhere'",
        "kind => 'debounce.holder', tenant => 'never-registered'")) {
      ServerErrors e = ServerErrors.of(() -> sqlEnqueue(other + ", payload => '{\"n\": 2}', dedupe_key => 'held',"
          + " debounce => interval '1 second'"));
      assertThat(e.sqlState()).as("SQLSTATE for %s", other).isEqualTo("23514");
      assertThat(e.constraint()).as("constraint for %s", other).isEqualTo("task_debounce");
      assertThat(e.message()).as("message for %s", other).contains("task " + held);
    }
    assertThat(queue.sql().text("SELECT payload->>'n' || ' ' || run_at::text FROM pgtask.task WHERE id = " + held))
        .as("the pending task's payload and run_at").isEqualTo("1 " + runAt);
    assertThat(count("SELECT count(*) FROM pgtask.task")).as("tasks stored").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgtask.tenant WHERE name = 'never-registered'")).as("tenants registered").isZero();
  }

  @Test
  void javaRefusesADebounceWithoutADedupeKeyAndInABatchByNameAndStoresNothing() throws Exception {
    assertThatThrownBy(() -> queue.pgtask().enqueue(NewTask.of("debounce.java", Map.of(),
        TaskOptions.defaults().withDebounce(Duration.ofSeconds(1)))))
        .isInstanceOfSatisfying(InvalidTaskException.class,
            e -> assertThat(e.constraint()).as("constraint without a dedupe key").isEqualTo("task_debounce"));
    assertThatThrownBy(() -> queue.pgtask().enqueue(NewTask.of("debounce.java", Map.of(),
        TaskOptions.defaults().withDedupeKey("java-key").withDebounce(Duration.ofDays(2)))))
        .isInstanceOfSatisfying(InvalidTaskException.class,
            e -> assertThat(e.constraint()).as("constraint of a 2-day debounce").isEqualTo("task_debounce"));
    assertThatThrownBy(() -> queue.pgtask().enqueueAll(List.of(
        NewTask.of("debounce.java", Map.of(), TaskOptions.defaults()),
        NewTask.of("debounce.java", Map.of(), TaskOptions.defaults().withDedupeKey("k").withDebounce(Duration.ofSeconds(1))))))
        .isInstanceOfSatisfying(InvalidTaskException.class, e -> {
          assertThat(e.constraint()).as("constraint of a debounced task in a batch").isEqualTo("task_debounce");
          assertThat(e.getMessage()).as("message").contains("task 2");
        });
    assertThat(count("SELECT count(*) FROM pgtask.task")).as("tasks stored").isZero();
  }

  @Test
  void javaDebouncesLikeSqlOneTaskTheLastPayloadAndTheSameId() throws Exception {
    TaskOptions options = TaskOptions.defaults().withDedupeKey("java-key").withDebounce(Duration.ofMinutes(5));
    long first = queue.pgtask().enqueue(NewTask.of("debounce.java", Map.of("n", 1), options));
    long again = queue.pgtask().enqueue(NewTask.of("debounce.java", Map.of("n", 2), options));
    assertThat(again).as("id of the second enqueue").isEqualTo(first);
    assertThat(queue.sql().text("SELECT payload->>'n' FROM pgtask.task WHERE id = " + first)).isEqualTo("2");
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE id = " + first
        + " AND run_at BETWEEN now() + interval '4 minutes' AND now() + interval '5 minutes'"))
        .as("the task starts 5 minutes after the last enqueue").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE dedupe_key IS NOT NULL"))
        .as("tasks holding a plain dedupe key: the debounce key is a key space of its own").isZero();
  }

  @Test
  void aTenantsDebouncedTaskWaitsBehindItsRunningTaskThroughEveryEnqueueAndRunsAfterIt() throws Exception {
    CountDownLatch headRunning = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger running = new AtomicInteger();
    AtomicInteger overlap = new AtomicInteger();
    workers.start(workers.builder().queues("tenant").concurrency(4).handler("debounce.tenant", (ctx, p) -> {
      if (running.incrementAndGet() > 1) {
        overlap.incrementAndGet();
      }
      try {
        ran.add(p.get("n").asInt());
        if (p.get("n").asInt() == 0) {
          headRunning.countDown();
          release.await(30, TimeUnit.SECONDS);
        }
      } finally {
        running.decrementAndGet();
      }
    }));
    long head = sqlEnqueue("kind => 'debounce.tenant', queue => 'tenant', tenant => 'acme', payload => '{\"n\": 0}'");
    assertThat(headRunning.await(10, TimeUnit.SECONDS)).as("the tenant's first task runs").isTrue();
    long debounced = 0;
    for (int n = 1; n <= 3; n++) {
      debounced = sqlEnqueue("kind => 'debounce.tenant', queue => 'tenant', tenant => 'acme', payload => '{\"n\": "
          + n + "}', dedupe_key => 'tenant-key', debounce => interval '20 milliseconds'");
      assertThat(queue.sql().text("SELECT blocked FROM pgtask.task WHERE id = " + debounced))
          .as("the debounced task after enqueue %d, while its tenant's task runs: waiting", n).isEqualTo("t");
    }
    long id = debounced;
    Awaitility.await("the debounced task's run_at passes").atMost(Duration.ofSeconds(5))
        .until(() -> count("SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND run_at < now()") == 1);
    assertThat(workers.state(debounced)).as("the due debounced task while its tenant's task runs").isEqualTo("waiting");
    release.countDown();
    workers.awaitState(head, "completed", Duration.ofSeconds(10));
    workers.awaitState(debounced, "completed", Duration.ofSeconds(10));
    assertThat(ran).as("payloads run, in order").containsExactly(0, 3);
    assertThat(overlap.get()).as("runs of the tenant overlapping another").isZero();
  }

  @Test
  void aTenantsHeadMovedLaterByADebounceHandsTheHeadToItsNextDueTask() throws Exception {
    long debounced = sqlEnqueue("kind => 'debounce.head', queue => 'head', tenant => 'beta',"
        + " dedupe_key => 'head-key', debounce => interval '1 minute'");
    long next = sqlEnqueue("kind => 'debounce.head', queue => 'head', tenant => 'beta',"
        + " run_at => now() + interval '2 minutes'");
    assertThat(queue.sql().text("SELECT blocked FROM pgtask.task WHERE id = " + next))
        .as("the later task, behind the debounced head due sooner").isEqualTo("t");
    sqlEnqueue("kind => 'debounce.head', queue => 'head', tenant => 'beta',"
        + " dedupe_key => 'head-key', debounce => interval '1 hour'");
    assertThat(queue.sql().rows("SELECT id || CASE WHEN blocked THEN ' waits' ELSE ' head' END"
        + " FROM pgtask.task WHERE tenant_id IS NOT NULL ORDER BY id"))
        .as("the debounced task (now due in an hour) and the next, which became a head")
        .containsExactly(debounced + " head", next + " head");
  }

  @Test
  void aDebouncedEnqueueWakesTheQueueForTheMovedStart() throws Exception {
    try (Connection listener = queue.database().connect()) {
      NotificationFence fence = new NotificationFence(listener, queue.pgtask());
      sqlEnqueue("kind => 'debounce.wake', queue => 'wake', dedupe_key => 'wake-key', debounce => interval '1 minute'");
      fence.collect();
      sqlEnqueue("kind => 'debounce.wake', queue => 'wake', dedupe_key => 'wake-key', debounce => interval '1 hour'");
      List<String> payloads = fence.collect();
      assertThat(payloads).as("notifications of the enqueue that moved the task an hour later").hasSize(1);
      assertThat(payloads.get(0)).as("its payload: the queue and when the task is due").startsWith("pgtask:wake ");
      long ms = Long.parseLong(payloads.get(0).substring("pgtask:wake ".length()));
      assertThat(ms).as("ms until due").isBetween(3_500_000L, 3_600_000L);
    }
  }

  private static void assertRefused(String args, String messagePart) throws Exception {
    long before = count("SELECT count(*) FROM pgtask.task");
    ServerErrors e = ServerErrors.of(() -> sqlEnqueue(args));
    assertThat(e.sqlState()).as("SQLSTATE for %s", args).isEqualTo("23514");
    assertThat(e.constraint()).as("constraint for %s", args).isEqualTo("task_debounce");
    assertThat(e.message()).as("message for %s", args).contains(messagePart);
    assertThat(count("SELECT count(*) FROM pgtask.task")).as("tasks stored after %s", args).isEqualTo(before);
  }
}
