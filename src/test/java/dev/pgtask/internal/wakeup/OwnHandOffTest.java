package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.NotificationFence;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A worker's completion that hands a tenant's next task on in one of the worker's own queues
 * wakes that worker in-process and sends no notification: every listening session would be
 * signalled, and every idle worker would claim, for a task this worker takes itself. Hand-offs
 * into a queue it does not serve, and those of a stopping worker, still notify; a claim that takes
 * all it asked for notifies its queues, so idle workers claim what it could not take; within a
 * quiet interval ({@code SpillPolicy.QUIET_NANOS}, 100 ms) after a notification of the queue,
 * which every idle worker heard too, it holds that notification back and sends it a quiet
 * interval later if a task is still claimable then: at most about one such notification per
 * quiet interval, whatever the number of workers.
 *
 * <p>The workers poll every ten minutes: a task that starts within seconds was woken. A LISTEN
 * session of the test sees every notification; each check ends with a "fence", an enqueue into a
 * queue of its own whose notification marks the end of what came before (notifications arrive in
 * commit order).
 */
class OwnHandOffTest {

  private static final Duration NO_POLL = Duration.ofMinutes(10);
  private static final long QUIET = TimeUnit.MILLISECONDS.toNanos(100); // SpillPolicy.QUIET_NANOS

  TestDatabase db;
  HikariDataSource pool;
  PgTask pgtask;
  Connection listener;
  NotificationFence fence;
  final Set<String> started = ConcurrentHashMap.newKeySet();
  final CountDownLatch release = new CountDownLatch(1);
  final CountDownLatch releaseSecond = new CountDownLatch(1);

  @BeforeEach
  void listen() throws Exception {
    db = TestDatabase.create("ownhandoff");
    pool = db.pool(8);
    pgtask = PgTask.create(pool);
    listener = db.connect();
    fence = new NotificationFence(listener, PgTask.create(db.dataSource()));
  }

  @AfterEach
  void close() throws Exception {
    release.countDown();
    releaseSecond.countDown();
    listener.close();
    pool.close();
    db.close();
  }

  private PgTaskWorker.Builder worker(String queue, int concurrency) {
    return PgTaskWorker.builder(pool)
        .queues(queue)
        .concurrency(concurrency)
        .pollInterval(NO_POLL)
        .handler("handoff.step", JsonNode.class, (ctx, p) -> {
          started.add(p.get("name").asText());
          if (p.path("block").asBoolean()) {
            (p.path("second").asBoolean() ? releaseSecond : release).await(30, TimeUnit.SECONDS);
          }
        });
  }

  private static NewTask step(String name, boolean block, TaskOptions options) {
    return NewTask.of("handoff.step", Map.of("name", name, "block", block), options);
  }

  private void awaitListening(int workers) {
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      try (Connection c = db.connect();
          java.sql.ResultSet rs = c.createStatement().executeQuery(
              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  + "AND application_name LIKE 'pgtask listen %'")) {
        rs.next();
        return rs.getInt(1) == workers;
      }
    });
  }

  @Test
  void aCompletionHandsTheTenantsNextTaskToItsOwnWorkerWithoutANotification() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("own").withTenant("acme");
    try (PgTaskWorker w = worker("own", 2).build().start()) {
      awaitListening(1);
      pgtask.enqueueAll(List.of(step("first", true, tenant), step("second", false, tenant)));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      notificationsUntilFence();

      release.countDown();
      awaitCompleted("second");
      assertThat(notificationsUntilFence())
          .as("notifications from the completion that handed the tenant's next task on, and its claim")
          .doesNotContain("pgtask:own");
    }
  }

  @Test
  void aHandOffIntoAQueueTheWorkerDoesNotServeStillNotifies() throws Exception {
    try (PgTaskWorker w = worker("own", 2).build().start()) {
      awaitListening(1);
      pgtask.enqueue(step("running", true, TaskOptions.defaults().withQueue("own").withTenant("acme")));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("running"));
      notificationsUntilFence();
      // the tenant's head in a queue this worker does not serve: due, but passed over by every claim
      // while the tenant has a task running
      pgtask.enqueue(step("elsewhere", false, TaskOptions.defaults().withQueue("other").withTenant("acme")));
      assertThat(notificationsUntilFence()).as("the enqueue into queue other").containsExactly("pgtask:other");

      release.countDown();
      awaitCompleted("running");
      assertThat(notificationsUntilFence()).as("notifications from the completion of the tenant's running task")
          .containsExactly("pgtask:other");
    }
  }

  /**
   * The worker (one thread, no prefetch) completes a tenant's task and so hands on the tenant's
   * next one, while another task waits in the queue: the claim after the commit has room for one of
   * the two, and notifies the queue for the other.
   */
  @Test
  void aClaimAfterAHandOffThatLeavesClaimableTasksBehindNotifiesItsQueues() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("full").withTenant("acme");
    try (PgTaskWorker w = worker("full", 1).prefetch(0).build().start()) {
      awaitListening(1);
      pgtask.enqueueAll(List.of(step("first", true, tenant), step("next", false, tenant)));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      pgtask.enqueue(step("waiting", false, TaskOptions.defaults().withQueue("full")));
      assertThat(notificationsUntilFence()).as("the enqueues").containsExactly("pgtask:full", "pgtask:full");
      // the quiet interval after the last notification of the queue passes: the claim sends its own
      Thread.sleep(TimeUnit.NANOSECONDS.toMillis(QUIET) + 50); // a time the protocol needs to pass, not a condition

      release.countDown();
      awaitCompleted("next");
      awaitCompleted("waiting");
      assertThat(notificationsUntilFence())
          .as("the claim after the hand-off, which had room for one of the two claimable tasks")
          .containsExactly("pgtask:full");
    }
  }

  /**
   * As above, but the hand-off comes right after the enqueue's notification, which every idle
   * worker heard: the claim holds its notification back, and since the handed-on task keeps the
   * worker busy and the other task is still claimable a quiet interval later, the worker sends it
   * then, once.
   */
  @Test
  void aSpillHeldBackAfterARecentNotificationIsSentOnceWhileATaskIsStillClaimable() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("held").withTenant("acme");
    try (PgTaskWorker w = worker("held", 1).prefetch(0).build().start()) {
      awaitListening(1);
      pgtask.enqueueAll(List.of(step("first", true, tenant),
          NewTask.of("handoff.step", Map.of("name", "next", "block", true, "second", true), tenant)));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      notificationsUntilFence();

      long enqueued = System.nanoTime();
      pgtask.enqueue(step("waiting", false, TaskOptions.defaults().withQueue("held")));
      release.countDown(); // "first" completes and hands "next" on: its claim takes "next", its only room
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("next"));
      long handedOn = System.nanoTime();
      List<String> received = new java.util.ArrayList<>();
      await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(() -> {
        received.addAll(notificationsUntilFence());
        return received.size() >= 2;
      });
      long spilled = System.nanoTime(); // by then the second notification had arrived
      if (handedOn - enqueued < QUIET / 2) {
        // the claim came well within the quiet interval after the enqueue's notification: its own
        // waited for the interval's end
        assertThat(TimeUnit.NANOSECONDS.toMillis(spilled - enqueued)).as("ms from the enqueue to the spill")
            .isGreaterThanOrEqualTo(TimeUnit.NANOSECONDS.toMillis(QUIET));
      }
      // two quiet intervals more: a second notification for the same left-behind task would show now
      Thread.sleep(TimeUnit.NANOSECONDS.toMillis(QUIET) * 2); // an absence (no second spill), proved with a bounded wait
      received.addAll(notificationsUntilFence());
      assertThat(received).as("the enqueue of \"waiting\", then the spill for it").containsExactly("pgtask:held", "pgtask:held");
      assertThat(started).as("\"waiting\": left for another worker while this one runs \"next\"").doesNotContain("waiting");
      releaseSecond.countDown();
      awaitCompleted("waiting");
    }
  }

  /**
   * As above, but what the enqueue's notification announced is not claimable by this worker (a
   * kind it has no handler for), so at the end of the quiet interval nothing is: the owed
   * notification is not sent.
   */
  @Test
  void aHeldBackSpillIsNotSentWhenNothingIsClaimableAtTheEndOfTheQuietInterval() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("gone").withTenant("acme");
    try (PgTaskWorker w = worker("gone", 1).prefetch(0).build().start()) {
      awaitListening(1);
      pgtask.enqueueAll(List.of(step("first", true, tenant),
          NewTask.of("handoff.step", Map.of("name", "next", "block", true, "second", true), tenant)));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      notificationsUntilFence();

      pgtask.enqueue(NewTask.of("handoff.unserved", Map.of(), TaskOptions.defaults().withQueue("gone")));
      release.countDown(); // "first" completes and hands "next" on: a full claim within the quiet interval
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5)).until(() -> started.contains("next"));
      // the owed spill's time (a quiet interval and its jitter after the enqueue's notification) passes
      Thread.sleep(TimeUnit.NANOSECONDS.toMillis(QUIET) * 3); // an absence (no spill), proved with a bounded wait
      assertThat(notificationsUntilFence()).as("the enqueue's only: nothing this worker could claim was left")
          .containsExactly("pgtask:gone");
      releaseSecond.countDown();
    }
  }

  /**
   * A worker working through many tenants' tasks hands on at each completion and its claims come
   * back full, but it notifies the queue about once per quiet interval, not once per claim.
   */
  @Test
  void aBusyWorkersSpillsComeAboutOncePerQuietIntervalNotOncePerHandOff() throws Exception {
    List<NewTask> tasks = new java.util.ArrayList<>();
    for (int t = 0; t < 40; t++) {
      for (int i = 0; i < 6; i++) {
        tasks.add(step("busy-" + t + "-" + i, false, TaskOptions.defaults().withQueue("busy").withTenant("t" + t)));
      }
    }
    try (PgTaskWorker w = worker("busy", 2).prefetch(0).build().start()) {
      awaitListening(1);
      notificationsUntilFence();
      long start = System.nanoTime();
      pgtask.enqueueAll(tasks);
      await().atMost(Duration.ofSeconds(60)).until(() -> started.size() == tasks.size());
      long elapsed = System.nanoTime() - start;
      List<String> received = notificationsUntilFence();
      long claims = w.stats().claimQueries();
      assertThat(received).as("notifications for queue busy (the enqueue's and the spills) in %d ms, with %d claims",
          TimeUnit.NANOSECONDS.toMillis(elapsed), claims)
          .hasSizeLessThanOrEqualTo((int) (elapsed / QUIET) + 3);
      assertThat(claims).as("claims after hand-offs, most of them full").isGreaterThan(2L * received.size());
    }
  }

  @Test
  void aClaimAfterAHandOffThatTakesTheLastTaskNotifiesNothing() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("last").withTenant("acme");
    try (PgTaskWorker w = worker("last", 1).prefetch(0).build().start()) {
      awaitListening(1);
      pgtask.enqueueAll(List.of(step("first", true, tenant), step("next", false, tenant)));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      notificationsUntilFence();

      release.countDown();
      awaitCompleted("next");
      assertThat(notificationsUntilFence()).as("notifications after the hand-off").isEmpty();
    }
  }

  @Test
  void aFullClaimWokenByAnEnqueueNotifiesNothing() throws Exception {
    try (PgTaskWorker w = worker("enq", 1).prefetch(0).build().start()) {
      awaitListening(1);
      notificationsUntilFence();
      pgtask.enqueueAll(List.of(step("first", true, TaskOptions.defaults().withQueue("enq")),
          step("second", false, TaskOptions.defaults().withQueue("enq"))));
      await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
      assertThat(notificationsUntilFence()).as("the enqueue's notification only, which every worker heard")
          .containsExactly("pgtask:enq");
      release.countDown();
    }
  }

  @Test
  void aStoppingWorkersHandOffNotifiesTheOtherWorkers() throws Exception {
    TaskOptions tenant = TaskOptions.defaults().withQueue("own").withTenant("acme");
    PgTaskWorker w = worker("own", 2).shutdownTimeout(Duration.ofSeconds(20)).build().start();
    awaitListening(1);
    pgtask.enqueueAll(List.of(step("first", true, tenant), step("second", false, tenant)));
    await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first"));
    notificationsUntilFence();

    Thread closing = new Thread(w::close);
    closing.start();
    // the worker has begun to stop (it no longer listens) while its task still runs
    awaitListening(0);
    release.countDown();
    closing.join(30_000);
    assertThat(closing.isAlive()).as("the worker still stopping").isFalse();
    assertThat(started).as("tasks the stopping worker started").doesNotContain("second");
    assertThat(notificationsUntilFence()).as("notifications from the stopping worker's completion")
        .containsExactly("pgtask:own");
  }

  /**
   * A stopping worker puts back at once the tasks it claimed and has not started, and the put-back
   * wakes the queue's other workers, also for tasks without a tenant (whose put-back hands no
   * tenant's head on): they run those tasks while the stopping worker's own task still runs (they
   * poll every ten minutes).
   */
  @Test
  void aStoppingWorkersWaitingTasksStartOnTheOtherWorkersWhileItsRunningTaskFinishes() throws Exception {
    TaskOptions q = TaskOptions.defaults().withQueue("leave");
    PgTaskWorker stopping = worker("leave", 1).prefetch(3).shutdownTimeout(Duration.ofSeconds(20)).build().start();
    awaitListening(1);
    pgtask.enqueueAll(List.of(step("first", true, q), step("second", false, q),
        step("third", false, q), step("fourth", false, q)));
    await().atMost(Duration.ofSeconds(10)).until(() -> started.contains("first") && claimedBy(stopping) == 4);
    try (PgTaskWorker other = worker("leave", 3).build().start()) {
      awaitListening(2);
      Thread closing = new Thread(stopping::close);
      closing.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> started.containsAll(List.of("second", "third", "fourth")));
      assertThat(closing.isAlive()).as("the stopping worker, its first task still running").isTrue();
      for (String name : List.of("second", "third", "fourth")) {
        awaitCompleted(name);
      }
      assertThat(new dev.pgtask.testsupport.Db(db).count("SELECT count(*) FROM pgtask.task WHERE state = 'completed' AND owner = '"
          + other.workerId() + "'")).as("tasks the other worker completed").isEqualTo(3);
      release.countDown();
      closing.join(30_000);
      assertThat(closing.isAlive()).as("the worker still stopping").isFalse();
      awaitCompleted("first");
    }
  }

  /** How many tasks {@code w} holds claimed in the table. */
  private int claimedBy(PgTaskWorker w) throws SQLException {
    try (Connection c = db.connect();
        java.sql.PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM pgtask.task WHERE state = 'running' AND owner = ?")) {
      ps.setString(1, w.workerId());
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /** Waits until the task named {@code name} is completed in the table (its transaction committed). */
  private void awaitCompleted(String name) {
    await().atMost(Duration.ofSeconds(5)).until(() -> {
      try (Connection c = db.connect();
          java.sql.PreparedStatement ps = c.prepareStatement(
              "SELECT count(*) FROM pgtask.task WHERE payload ->> 'name' = ? AND state = 'completed'")) {
        ps.setString(1, name);
        try (java.sql.ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1) == 1;
        }
      }
    });
  }

  private List<String> notificationsUntilFence() throws SQLException {
    return fence.collect();
  }
}
