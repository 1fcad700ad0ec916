package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.BulkResult;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskFilter;
import dev.pgtask.TaskOptions;
import dev.pgtask.TaskState;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The bulk operations (docs/operations.md, "Every task a filter matches"): pgtask.retry_tasks,
 * cancel_tasks and delete_tasks and their Java twins change exactly what the single-task operation
 * would, skip the rest (wrong state, or held by another transaction) without failing, report both per
 * state, change nothing on a dry run, refuse a bad filter by name, and cancel a running task as
 * cancel_task does.
 */
class BulkOperationsTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("bulk_ops", 8, "CREATE TABLE effect (task_id bigint)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  final CountDownLatch release = new CountDownLatch(1);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM effect");
  }

  @AfterEach
  void releaseHandlers() {
    release.countDown();
  }

  /** Tasks of kind {@code kind} in a queue no worker serves, moved to {@code state} by hand. */
  private List<Long> tasks(String kind, int n, String state) throws Exception {
    List<Long> ids = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(queue.pgtask().enqueue(NewTask.of(kind, Map.of("i", i), TaskOptions.defaults().withQueue("parked"))));
    }
    if (!state.equals("available")) {
      queue.sql().exec("UPDATE pgtask.task SET state = '" + state + "', attempt = 1"
          + (state.equals("running") ? ", owner = 'w', lease_until = now() + interval '1 hour'" : "") + ", finished_at = "
          + (state.equals("retryable") || state.equals("running") ? "NULL" : "now()")
          + ", errors = '[{\"attempt\": 1, \"error\": \"java.io.IOException: timeout\"}]' WHERE id IN ("
          + ids.toString().replaceAll("[\\[\\]]", "") + ")");
    }
    return ids;
  }

  private String states() throws SQLException {
    return String.join(",", queue.sql().rows("SELECT state || ' ' || count(*) FROM pgtask.tasks GROUP BY state ORDER BY state"));
  }

  private static String counts(BulkResult r) {
    return String.join(",", r.states().stream()
        .map(s -> s.state().sqlName() + " " + s.changed() + "/" + s.skipped()).toList());
  }

  @Test
  void bulkRetryChangesOnlyTheStatesItMayAndReportsChangedAndSkippedExactly() throws Exception {
    tasks("bulk.a", 3, "discarded");
    tasks("bulk.a", 2, "cancelled");
    tasks("bulk.a", 1, "retryable");
    tasks("bulk.a", 2, "completed");
    tasks("bulk.a", 2, "available");
    tasks("bulk.other", 4, "discarded");
    String before = states();

    TaskFilter filter = TaskFilter.matching().withKind("bulk.a");
    BulkResult dry = queue.pgtask().retryTasks(filter, true);
    assertThat(dry.dryRun()).isTrue();
    assertThat(counts(dry)).as("what a retry would change, per state (changed/skipped)")
        .isEqualTo("available 0/2,cancelled 2/0,completed 0/2,discarded 3/0,retryable 1/0");
    assertThat(states()).as("the tasks after the dry run").isEqualTo(before);

    BulkResult r = queue.pgtask().retryTasks(filter, false);
    assertThat(counts(r)).as("what the retry changed").isEqualTo(counts(dry));
    assertThat(r.changed() + " changed, " + r.skipped() + " skipped").isEqualTo("6 changed, 4 skipped");
    assertThat(queue.sql().rows("SELECT kind || ' ' || state || ' ' || count(*) FROM pgtask.tasks GROUP BY kind, state ORDER BY 1"))
        .containsExactly("bulk.a available 8", "bulk.a completed 2", "bulk.other discarded 4");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE kind = 'bulk.a' AND state = 'available' "
        + "AND max_attempts > attempt AND finished_at IS NULL")).as("retried with an attempt left").isEqualTo(8);
  }

  @Test
  void aTaskAnotherTransactionHoldsIsSkippedNotWaitedForAndTheRestIsChanged() throws Exception {
    List<Long> ids = tasks("bulk.held", 3, "discarded");
    try (Connection holder = queue.database().connect()) {
      holder.setAutoCommit(false);
      try (Statement st = holder.createStatement()) {
        st.execute("SELECT 1 FROM pgtask.task WHERE id = " + ids.get(0) + " FOR UPDATE");
      }
      BulkResult r = queue.pgtask().retryTasks(TaskFilter.matching().withKind("bulk.held").withState(TaskState.DISCARDED), false);
      assertThat(counts(r)).isEqualTo("discarded 2/1");
      holder.rollback();
    }
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + ids.get(0))).isEqualTo("discarded");
  }

  @Test
  void retryingManyTasksOfOneTenantGivesItOneHeadAndTheRestWait() throws Exception {
    for (int i = 0; i < 4; i++) {
      queue.pgtask().enqueue(NewTask.of("bulk.tenant", Map.of(), TaskOptions.defaults().withQueue("parked").withTenant("acme")));
    }
    queue.sql().exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now(), blocked = false WHERE kind = 'bulk.tenant'");
    assertThat(queue.pgtask().retryTasks(TaskFilter.matching().withTenant("acme"), false).changed()).isEqualTo(4);
    assertThat(states()).as("one head, the others waiting behind it").isEqualTo("available 1,waiting 3");
  }

  @Test
  void aRunningTaskUnderBulkCancelIsCancelledAsCancelTaskWouldAndQueuedOnesAtOnce() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean interrupted = new AtomicBoolean();
    PgTaskWorker w = workers.start(workers.builder().concurrency(1).queues("live")
        .handler("bulk.hold", (ctx, p) -> {
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
    workers.awaitListening(w, Duration.ofSeconds(30));
    long running = queue.pgtask().enqueue(NewTask.of("bulk.hold", null, TaskOptions.defaults().withQueue("live")));
    assertThat(started.await(10, TimeUnit.SECONDS)).as("handler started").isTrue();
    tasks("bulk.hold", 2, "available");
    tasks("bulk.hold", 1, "completed");

    BulkResult dry = queue.pgtask().cancelTasks(TaskFilter.matching().withKind("bulk.hold"), true);
    assertThat(counts(dry)).isEqualTo("available 2/0,completed 0/1,running 1/0");
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + running)).isEqualTo("running");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.cancel_request")).as("requests after the dry run").isZero();

    BulkResult r = queue.pgtask().cancelTasks(TaskFilter.matching().withKind("bulk.hold"), false);
    assertThat(counts(r)).isEqualTo("available 2/0,completed 0/1,running 1/0");
    // the running one is asked, not rewritten: its worker interrupts it and rolls its work back
    workers.awaitState(running, "cancelled", Duration.ofSeconds(10));
    assertThat(interrupted.get()).as("handler interrupted").isTrue();
    assertThat(queue.sql().count("SELECT count(*) FROM effect")).as("effects of the cancelled attempt").isZero();
    assertThat(queue.sql().rows("SELECT attempt || ' ' || outcome FROM pgtask.task_attempts WHERE task_id = " + running))
        .as("its attempt in the history").containsExactly("1 cancelled");
    assertThat(states()).isEqualTo("cancelled 3,completed 1");
  }

  @Test
  void bulkDeleteSkipsRunningTasksAndADryRunDeletesNothing() throws Exception {
    tasks("bulk.del", 2, "discarded");
    tasks("bulk.del", 1, "running");
    queue.sql().exec("INSERT INTO pgtask.task_attempt (task_id, attempt, outcome) SELECT id, 1, 'failed' FROM pgtask.task");
    TaskFilter filter = TaskFilter.matching().withErrorLike("%timeout%");
    assertThat(counts(queue.pgtask().deleteTasks(filter, true))).isEqualTo("discarded 2/0,running 0/1");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task")).as("tasks after the dry run").isEqualTo(3);
    assertThat(counts(queue.pgtask().deleteTasks(filter, false))).isEqualTo("discarded 2/0,running 0/1");
    assertThat(states()).isEqualTo("running 1");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task_attempt")).as("history left: the running task's")
        .isEqualTo(1);
  }

  @Test
  void theOperationsGuideExampleRuns() throws Exception {
    tasks("mail.send", 2, "discarded");
    dev.pgtask.PgTask pgtask = queue.pgtask();
    List<String> log = new java.util.ArrayList<>();
    // docs/operations.md, "Every task a filter matches", as written there
    TaskFilter failedMail = TaskFilter.matching().withKind("mail.send")
        .withState(TaskState.DISCARDED).withSince(Duration.ofHours(1));
    BulkResult preview = pgtask.retryTasks(failedMail, true);   // nothing changes
    if (preview.changed() < 10_000) {
      BulkResult done = pgtask.retryTasks(failedMail, false);
      log.add("retried " + done.changed() + ", skipped " + done.skipped());
    }
    assertThat(log).containsExactly("retried 2, skipped 0");
  }

  @Test
  void aFilterThatMatchesEverythingOrABadOneIsRefusedByName() throws Exception {
    tasks("bulk.safe", 1, "discarded");
    assertThatThrownBy(() -> queue.pgtask().deleteTasks(TaskFilter.matching(), false))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without a filter");
    assertThatThrownBy(() -> TaskFilter.matching().withSince(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("since must be positive");
    for (String[] call : List.of(
        new String[] {"SELECT * FROM pgtask.delete_tasks()", "task_filter_required"},
        new String[] {"SELECT * FROM pgtask.retry_tasks(state => 'done')", "task_filter_state"},
        new String[] {"SELECT * FROM pgtask.cancel_tasks(since => interval '-1 hour')", "task_filter_since"})) {
      assertThatThrownBy(() -> queue.sql().exec(call[0])).as(call[0])
          .isInstanceOfSatisfying(org.postgresql.util.PSQLException.class, e -> {
            assertThat(e.getSQLState()).isEqualTo("22023");
            assertThat(e.getServerErrorMessage().getConstraint()).isEqualTo(call[1]);
          });
    }
    assertThat(states()).as("the tasks after the refusals").isEqualTo("discarded 1");
  }
}
