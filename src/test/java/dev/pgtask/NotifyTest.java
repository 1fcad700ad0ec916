package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.internal.wakeup.WakePayload;
import dev.pgtask.testsupport.NotificationFence;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Wake-ups: a commit that enqueued tasks sends one NOTIFY on channel "pgtask" per queue, whose
 * payload is the queue name only; nothing is sent for a rolled-back transaction.
 *
 * <p>Each test ends with a "fence": a committed enqueue into a queue of its own. Notifications
 * arrive in commit order, so everything received before the fence's is what the test caused,
 * and nothing waits on a fixed quiet time.
 */
class NotifyTest {


  private static TestDatabase db;
  private static PgTask pgtask;
  private static Connection listener;
  private static NotificationFence fence;

  @BeforeAll
  static void listen() throws SQLException {
    db = TestDatabase.create("notify");
    pgtask = PgTask.create(db.dataSource());
    listener = db.connect();
    fence = new NotificationFence(listener, pgtask);
  }

  @AfterAll
  static void close() throws SQLException {
    listener.close();
    db.close();
  }

  @BeforeEach
  void drainEarlierNotifications() throws SQLException {
    notificationsUntilFence();
  }

  @Test
  void tenThousandTaskBatchInOneTransactionSendsOneNotification() throws Exception {
    List<NewTask> batch = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      batch.add(NewTask.of("bulk", Map.of("i", i), TaskOptions.defaults().withQueue("bulk")));
    }
    pgtask.enqueueAll(batch);
    assertThat(notificationsUntilFence()).as("notifications for a 10,000-task batch into queue bulk")
        .containsExactly("pgtask:bulk");
  }

  /**
   * A batch's delayed tasks still set the workers' timers: per queue, one "<queue> <ms>" for its
   * earliest later task (the delay from the database clock, never more than the task's), beside
   * the "<queue>" for its tasks due now.
   */
  @Test
  void aBatchWithDelayedTasksSendsPerQueueOneWakeUpForItsEarliestLaterTask() throws Exception {
    pgtask.enqueueAll(List.of(
        NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("later-q").withDelay(java.time.Duration.ofSeconds(9))),
        NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("later-q").withDelay(java.time.Duration.ofSeconds(2))),
        NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("later-q").withDelay(java.time.Duration.ofSeconds(5))),
        NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("mixed-q").withDelay(java.time.Duration.ofSeconds(3))),
        NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("mixed-q"))));
    List<String> received = notificationsUntilFence();
    assertThat(received).as("notifications for a batch of delayed tasks in two queues").hasSize(3)
        .contains("pgtask:mixed-q");
    assertThat(received.stream().filter(n -> n.startsWith("pgtask:later-q ")).toList())
        .as("later-q's wake-up").singleElement()
        .satisfies(n -> assertThat(Long.parseLong(n.substring("pgtask:later-q ".length()))).isBetween(1L, 2_000L));
    assertThat(received.stream().filter(n -> n.startsWith("pgtask:mixed-q ")).toList())
        .as("mixed-q's wake-up for its later task").singleElement()
        .satisfies(n -> assertThat(Long.parseLong(n.substring("pgtask:mixed-q ".length()))).isBetween(1L, 3_000L));
  }

  @Test
  void transactionIntoThreeQueuesSendsOneNotificationPerQueueCarryingOnlyTheQueueName() throws Exception {
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        pgtask.enqueue(tx, NewTask.of("k", Map.of("secret", "do-not-send"), TaskOptions.defaults().withQueue("mail")));
      }
      pgtask.enqueueAll(tx, List.of(
          NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("billing.eu").withTenant("acme")),
          NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("mail"))));
      exec(tx, "SELECT pgtask.enqueue(kind => 'k', queue => 'reports:daily', payload => '{\"x\": 1}')");
      tx.commit();
    }
    assertThat(notificationsUntilFence()).as("notifications for a transaction into three queues")
        .containsExactlyInAnyOrder("pgtask:mail", "pgtask:billing.eu", "pgtask:reports:daily");
  }

  @Test
  void rolledBackTransactionSendsNothing() throws Exception {
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      pgtask.enqueue(tx, NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("rolled-back")));
      pgtask.enqueueAll(tx, List.of(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("rolled-back"))));
      tx.rollback();
    }
    assertThat(notificationsUntilFence()).as("notifications for a rolled-back transaction").isEmpty();
  }

  @Test
  void hundredSingleEnqueuesInOneTransactionSendOneNotification() throws Exception {
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 100; i++) {
        pgtask.enqueue(tx, NewTask.of("k", Map.of("i", i), TaskOptions.defaults().withQueue("singles")));
      }
      tx.commit();
    }
    assertThat(notificationsUntilFence()).as("notifications for 100 single enqueues in one transaction")
        .containsExactly("pgtask:singles");
  }

  @Test
  void eachAutocommitEnqueueSendsItsOwnNotification() throws Exception {
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("auto")));
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("auto")));
    assertThat(notificationsUntilFence()).as("notifications for two enqueues in two transactions")
        .containsExactly("pgtask:auto", "pgtask:auto");
  }

  @Test
  void taskWaitingBehindItsTenantsHeadSendsNothing() throws Exception {
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("tenant-q").withTenant("busy")));
    assertThat(notificationsUntilFence()).as("notifications for a tenant's first (head) task")
        .containsExactly("pgtask:tenant-q");
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("tenant-q").withTenant("busy")));
    assertThat(notificationsUntilFence()).as("notifications for a task that waits behind its tenant's head")
        .isEmpty();
  }

  @Test
  void handingATenantsHeadToAWaitingTaskWakesThatTasksQueue() throws Exception {
    long head = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("handoff-q").withTenant("handoff")));
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("handoff-q").withTenant("handoff")));
    assertThat(notificationsUntilFence()).as("notifications for a head and a task waiting behind it")
        .containsExactly("pgtask:handoff-q");
    // heads are per tenant and queue: the same tenant's task in another queue is a head there
    pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("elsewhere-q").withTenant("handoff")));
    assertThat(notificationsUntilFence()).as("notifications for the tenant's first task in another queue")
        .containsExactly("pgtask:elsewhere-q");
    try (Connection c = db.connect()) {
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + head);
    }
    assertThat(notificationsUntilFence()).as("notifications when the head completed and the waiting task took over")
        .containsExactly("pgtask:handoff-q");
  }

  /**
   * A task put back from running, due at once (a stopping worker's release, a rescue, a retry
   * without backoff), wakes its queue, with or without a tenant: without a notification, the other
   * workers would find it at their next poll.
   */
  @Test
  void aRunningTaskPutBackDueNowWakesItsQueueWithOrWithoutATenant() throws Exception {
    long alone = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("putback-q")));
    long tenants = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("putback-t").withTenant("pb")));
    try (Connection c = db.connect()) {
      claim(c, alone);
      claim(c, tenants);
      assertThat(notificationsUntilFence()).as("notifications for the enqueues and claims")
          .containsExactlyInAnyOrder("pgtask:putback-q", "pgtask:putback-t");
      exec(c, "UPDATE pgtask.task SET state = 'available', attempt = 0, owner = NULL, lease_until = NULL WHERE id = " + alone);
      assertThat(notificationsUntilFence()).as("notifications when a task without a tenant was put back")
          .containsExactly("pgtask:putback-q");
      exec(c, "UPDATE pgtask.task SET state = 'retryable', owner = NULL, lease_until = NULL WHERE id = " + tenants);
      assertThat(notificationsUntilFence()).as("notifications when a tenant's task was put back")
          .containsExactly("pgtask:putback-t");
    }
  }

  /**
   * Claims, completions, lease renewals and a retry due later leave no task claimable and send
   * nothing (the failing worker's own timer claims the retry; a notification to every listening
   * session for each failure would cost more than the poll it saves).
   */
  @Test
  void claimsCompletionsRenewalsAndARetryDueLaterSendNothing() throws Exception {
    long done = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("quiet-q")));
    long failed = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("quiet-q")));
    notificationsUntilFence();
    try (Connection c = db.connect()) {
      claim(c, done);
      claim(c, failed);
      exec(c, "UPDATE pgtask.task SET lease_until = now() + interval '2 minutes' WHERE state = 'running'");
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now(), lease_until = NULL WHERE id = " + done);
      exec(c, "UPDATE pgtask.task SET state = 'retryable', owner = NULL, lease_until = NULL, "
          + "run_at = now() + interval '1 minute' WHERE id = " + failed);
    }
    assertThat(notificationsUntilFence()).as("notifications for a claim, a renewal, a completion and a later retry")
        .isEmpty();
  }

  /** An operator's retry of a finished task runs it at once: its queue is woken. */
  @Test
  void retryingAFinishedTaskWakesItsQueue() throws Exception {
    long id = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("retry-q")));
    try (Connection c = db.connect()) {
      claim(c, id);
      exec(c, "UPDATE pgtask.task SET state = 'discarded', finished_at = now(), lease_until = NULL WHERE id = " + id);
      notificationsUntilFence();
      exec(c, "SELECT pgtask.retry_task(" + id + ")");
    }
    assertThat(notificationsUntilFence()).as("notifications for pgtask.retry_task").containsExactly("pgtask:retry-q");
  }

  /**
   * A queued task moved earlier sets the workers' timers ({@code <queue> <ms>}) or wakes them when
   * it is due now; moved later, or into the same time, it sends nothing; moved into another queue,
   * it wakes that queue.
   */
  @Test
  void aQueuedTaskMovedEarlierOrIntoAnotherQueueWakesItsQueue() throws Exception {
    long id = pgtask.enqueue(NewTask.of("k", Map.of(),
        TaskOptions.defaults().withQueue("move-q").withDelay(java.time.Duration.ofHours(1))));
    notificationsUntilFence();
    try (Connection c = db.connect()) {
      exec(c, "SELECT pgtask.update_task(" + id + ", run_at => now() + interval '2 seconds')");
      assertThat(notificationsUntilFence()).as("notifications for a task moved two seconds ahead").singleElement()
          .satisfies(n -> assertThat(n).startsWith("pgtask:move-q "))
          .satisfies(n -> assertThat(Long.parseLong(n.substring("pgtask:move-q ".length()))).isBetween(1L, 2_000L));
      exec(c, "SELECT pgtask.update_task(" + id + ", run_at => now() + interval '1 minute')");
      exec(c, "SELECT pgtask.update_task(" + id + ", priority => 5)");
      assertThat(notificationsUntilFence()).as("notifications for a task moved later, and for a new priority").isEmpty();
      exec(c, "SELECT pgtask.update_task(" + id + ", run_at => now())");
      assertThat(notificationsUntilFence()).as("notifications for a task moved to now").containsExactly("pgtask:move-q");
      exec(c, "UPDATE pgtask.task SET queue = 'moved-q' WHERE id = " + id);
      assertThat(notificationsUntilFence()).as("notifications for a task moved into another queue")
          .containsExactly("pgtask:moved-q");
    }
  }

  /**
   * The payloads the database sends (db/R__02a_wakeup.sql, cancel_task, notify_schedules) are the
   * ones the workers' codec decodes ({@code WakePayload}): none of them is dropped as not pgtask's.
   */
  @Test
  void everyPayloadTheDatabaseSendsDecodesAsTheWorkersCodecReadsIt() throws Exception {
    long id;
    try (java.sql.Statement st = listener.createStatement()) {
      st.execute("LISTEN pgtask_control");
    }
    try (Connection c = db.connect()) {
      pgtask.enqueueAll(List.of(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("codec-q")),
          NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("codec-q").withDelay(java.time.Duration.ofSeconds(4)))));
      id = pgtask.enqueue(NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("codec-run")));
      claim(c, id);
      exec(c, "SELECT pgtask.cancel_task(" + id + ")"); // running, unlocked: cancelled, its worker told
      exec(c, "SELECT pgtask.notify_schedules()");
    }
    List<WakePayload.Message> decoded;
    try {
      decoded = notificationsUntilFence().stream()
          .map(n -> WakePayload.decode(n.substring(0, n.indexOf(':')), n.substring(n.indexOf(':') + 1))).toList();
    } finally {
      try (java.sql.Statement st = listener.createStatement()) {
        st.execute("UNLISTEN pgtask_control");
      }
    }
    assertThat(decoded).as("the database's notifications, decoded").doesNotContainNull().hasSize(5)
        .contains(new WakePayload.DueNow("codec-q"), new WakePayload.DueNow("codec-run"), new WakePayload.Cancel(id),
            new WakePayload.SchedulesChanged());
    assertThat(decoded).filteredOn(m -> m instanceof WakePayload.DueLater).singleElement()
        .satisfies(m -> {
          WakePayload.DueLater later = (WakePayload.DueLater) m;
          assertThat(later.queue()).isEqualTo("codec-q");
          assertThat(later.delay()).isBetween(java.time.Duration.ofMillis(1), java.time.Duration.ofSeconds(4));
        });
  }

  /** Marks a task running, as a worker's claim does. */
  private static void claim(Connection c, long id) throws SQLException {
    exec(c, "UPDATE pgtask.task SET state = 'running', attempt = attempt + 1, owner = 'notify-test', "
        + "lease_until = now() + interval '1 minute', attempted_at = now() WHERE id = " + id);
  }

  private static List<String> notificationsUntilFence() throws SQLException {
    return fence.collect();
  }
}
