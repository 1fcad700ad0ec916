package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.CancelResult;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Only the owner decides a task's fate: a notification on {@code pgtask_control} is a hint that
 * the worker checks against durable state, so what a role without any pgtask rights sends (it can
 * always NOTIFY) cancels nothing — neither a running task nor one that does not exist yet — and a
 * flood of such messages neither delays the worker's wake-ups nor grows its memory. The owner's
 * {@code pgtask.cancel_task} still cancels a running task.
 */
class CancelAuthorityTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("cancel_authority", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  static final String SUFFIX = UUID.randomUUID().toString().substring(0, 8).toLowerCase(Locale.ROOT);
  static final String INTRUDER = "pgtask_test_intruder_" + SUFFIX;
  static final String PASSWORD = "pw-" + UUID.randomUUID();

  PgTaskWorker worker;
  CountDownLatch release;
  final Set<Long> started = ConcurrentHashMap.newKeySet();
  final Set<Long> interrupted = ConcurrentHashMap.newKeySet();
  final Map<Long, Long> startedAtNanos = new ConcurrentHashMap<>();

  @BeforeAll
  static void createIntruder() {
    TestDatabase.execAdmin("CREATE ROLE " + INTRUDER + " LOGIN PASSWORD '" + PASSWORD + "'");
    TestDatabase.execAdmin("GRANT CONNECT ON DATABASE " + queue.database().name() + " TO " + INTRUDER);
  }

  @AfterAll
  static void dropIntruder() {
    TestDatabase.execAdmin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + INTRUDER + "'");
    TestDatabase.execAdmin("REVOKE CONNECT ON DATABASE " + queue.database().name() + " FROM " + INTRUDER);
    TestDatabase.execAdmin("DROP ROLE IF EXISTS " + INTRUDER);
  }

  @BeforeEach
  void startListeningWorker() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request");
    release = new CountDownLatch(1);
    worker = workers.start(workers.builder().concurrency(2).queues("auth")
        // only notifications (and in-process enqueues) wake it within the test
        .pollInterval(Duration.ofSeconds(60))
        .shutdownTimeout(Duration.ofSeconds(2))
        .handler("auth.task", JsonNode.class, (ctx, p) -> {
          startedAtNanos.putIfAbsent(ctx.taskId(), System.nanoTime());
          started.add(ctx.taskId());
          if (p.path("hold").asBoolean()) {
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              interrupted.add(ctx.taskId());
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

  private long enqueue(boolean hold) {
    return queue.pgtask().enqueue(NewTask.of("auth.task", hold ? Map.of("hold", true) : Map.of(),
        TaskOptions.defaults().withQueue("auth")));
  }

  private long runningTask() {
    long id = enqueue(true);
    await("task " + id + " started").atMost(Duration.ofSeconds(10)).until(() -> started.contains(id));
    return id;
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  private static void asIntruder(String... statements) throws Exception {
    try (Connection c = queue.database().connectAs(INTRUDER, PASSWORD); Statement st = c.createStatement()) {
      for (String s : statements) {
        st.execute(s);
      }
    }
  }

  /**
   * The positive condition that the worker has read every notification sent before: the owner
   * cancels a running marker task, and its notification arrives after all earlier ones.
   */
  private void ownerCancelsMarker(long marker) throws Exception {
    assertThat(queue.pgtask().cancel(marker)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    await("the owner's cancellation of marker " + marker + " applied").atMost(Duration.ofSeconds(10))
        .until(() -> "cancelled".equals(state(marker)));
  }

  @Test
  void aCancelNotificationFromANonOwnerRoleDoesNotCancelARunningTask() throws Exception {
    long target = runningTask();
    long marker = runningTask();
    asIntruder("NOTIFY pgtask_control, 'cancel " + target + " 1'", "NOTIFY pgtask_control, 'cancel " + target + "'");
    ownerCancelsMarker(marker);
    assertThat(interrupted).as("handlers interrupted").containsExactly(marker);
    release.countDown();
    await("the target finishes").atMost(Duration.ofSeconds(10)).until(() -> !"running".equals(state(target)));
    assertThat(state(target)).as("state of the task a non-owner asked to cancel").isEqualTo("completed");
  }

  @Test
  void aCancelNotificationFromANonOwnerRoleForAFutureTaskIdDoesNotCancelThatTask() throws Exception {
    long marker = runningTask();
    String sequence = queue.sql().text("SELECT pg_get_serial_sequence('pgtask.task', 'id')");
    long next = queue.sql().count("SELECT last_value + CASE WHEN is_called THEN 1 ELSE 0 END FROM " + sequence);
    StringBuilder notes = new StringBuilder();
    for (long id = next; id < next + 5; id++) {
      notes.append("NOTIFY pgtask_control, 'cancel ").append(id).append(" 1'; ");
      notes.append("NOTIFY pgtask_control, 'cancel ").append(id).append("'; ");
    }
    asIntruder(notes.toString());
    ownerCancelsMarker(marker);
    long target = enqueue(false);
    assertThat(target).as("the id the intruder named").isBetween(next, next + 4);
    await("the future task finishes").atMost(Duration.ofSeconds(10)).until(() -> !"running".equals(state(target))
        && !"available".equals(state(target)));
    assertThat(state(target)).as("state of a task a non-owner named before it existed").isEqualTo("completed");
    assertThat(started).as("handlers started").contains(target);
  }

  /**
   * Measured on today's executor (2 shared cores): 31 ms quiet, 1.3–1.9 s after the first flood,
   * 4.5–12.7 s after the second (each cancellation for an unknown task is kept 60 s and every new
   * one scans them all). Ignored hints should cost microseconds each: 1 s is generous.
   */
  @Test
  void aFloodOfControlNotificationsForUnknownTasksDoesNotDelayWakeUps() throws Exception {
    wakeUpLatency(); // warm-up
    Duration quiet = wakeUpLatency();
    asIntruder("SELECT count(pg_notify('pgtask_control', 'cancel ' || g || ' 1')) "
        + "FROM generate_series(1000000000, 1000019999) g");
    Duration afterFlood = wakeUpLatency();
    System.out.printf("CancelAuthorityTest: wake-up latency %d ms quiet, %d ms right after 20,000 control notifications%n",
        quiet.toMillis(), afterFlood.toMillis());
    assertThat(afterFlood).as("wake-up latency of a task enqueued right after a flood of 20,000 control notifications")
        .isLessThan(Duration.ofSeconds(1));
    // and again: whatever the flood left behind does not slow the next notifications either
    asIntruder("SELECT count(pg_notify('pgtask_control', 'cancel ' || g)) FROM generate_series(2000000000, 2000019999) g");
    Duration afterSecondFlood = wakeUpLatency();
    System.out.printf("CancelAuthorityTest: wake-up latency %d ms right after a second flood%n", afterSecondFlood.toMillis());
    assertThat(afterSecondFlood).as("wake-up latency right after a second flood of 20,000 control notifications")
        .isLessThan(Duration.ofSeconds(1));
  }

  /** Enqueues from SQL on a connection outside the worker's pool (so only the notification wakes it). */
  private Duration wakeUpLatency() throws Exception {
    long t0;
    long id;
    try (Connection c = queue.database().connect(); Statement st = c.createStatement()) {
      t0 = System.nanoTime();
      try (var rs = st.executeQuery("SELECT pgtask.enqueue(kind => 'auth.task', queue => 'auth')")) {
        rs.next();
        id = rs.getLong(1);
      }
    }
    await("task " + id + " started").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
        .until(() -> startedAtNanos.containsKey(id));
    return Duration.ofNanos(startedAtNanos.get(id) - t0);
  }

  @Test
  void theOwnersCancelTaskStillInterruptsARunningTaskAndEndsItCancelled() throws Exception {
    long target = runningTask();
    assertThat(queue.pgtask().cancel(target)).isEqualTo(CancelResult.CANCEL_REQUESTED);
    await("cancelled").atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(state(target)));
    assertThat(interrupted).as("handlers interrupted").containsExactly(target);
  }
}
