package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A task behaves as if it ran alone: with the worker's defaults, nothing one task does (a setting,
 * a temporary object, the row locks it took) reaches another task's outcome. And where a kind opts
 * into sharing a transaction, a failure that another task may have caused (a deadlock between two
 * batches) runs the task again alone before it counts: no task is charged an attempt for another's
 * conflict.
 */
class TaskRunsAloneTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("runs_alone", 8,
      "CREATE TABLE counter (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0)",
      "INSERT INTO counter (id) VALUES (0), (1)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; UPDATE counter SET n = 0");
  }

  /**
   * A worker whose kinds keep the default (no {@code withSharedTransaction()}), with generous batch
   * bounds and prefetch: were the kinds allowed to share, their tasks would share transactions
   * even on a slow, loaded machine (within the default 10 ms bound a kind whose tasks take more
   * than 2.5 ms runs alone, which would hide a leak there).
   */
  private PgTaskWorker.Builder defaults() {
    return workers.builder().concurrency(4).prefetch(200).commitBatch(32, Duration.ofSeconds(1))
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(20));
  }

  private static List<Long> enqueue(String kind, int n) {
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      tasks.add(NewTask.of(kind, Map.of("i", i)));
    }
    return queue.pgtask().enqueueAll(tasks);
  }

  private static void awaitAllFinished(int n) {
    await(n + " tasks finished").atMost(Duration.ofSeconds(120)).until(() -> queue.sql().count(
        "SELECT count(*) FROM pgtask.task WHERE state IN ('completed', 'discarded', 'cancelled')") == n);
  }

  private static void assertAllCompletedAtFirstAttempt(int n) throws Exception {
    assertThat(queue.sql().rows("SELECT id || ' ' || state || ' attempt ' || attempt || ' ' || coalesce(errors::text, '') "
        + "FROM pgtask.task WHERE state <> 'completed' OR attempt <> 1 OR errors IS NOT NULL ORDER BY id LIMIT 5"))
        .as("tasks that did not complete at their first attempt without an error (of %d)", n).isEmpty();
  }

  @Test
  void aSettingATaskMakesNeverReachesAnotherTaskByDefault() throws Exception {
    AtomicInteger sawAnother = new AtomicInteger();
    workers.start(defaults().handler("alone.setting", JsonNode.class, (ctx, p) -> {
      try (Statement st = ctx.connection().createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT coalesce(current_setting('app.tenant', true), '')")) {
          rs.next();
          if (!rs.getString(1).isEmpty()) {
            sawAnother.incrementAndGet(); // a value another task set
          }
        }
        // the forms the text check cannot see: a leading comment (tracers prepend them) and a DO block
        if (p.path("i").asInt() % 2 == 0) {
          st.execute("/* rls */ SET LOCAL app.tenant = 't" + ctx.taskId() + "'");
        } else {
          st.execute("DO $$ BEGIN EXECUTE 'SET LOCAL app.tenant = ''t" + ctx.taskId() + "'''; END $$");
        }
      }
    }));
    enqueue("alone.setting", 600);
    awaitAllFinished(600);
    assertThat(sawAnother.get()).as("tasks that saw a setting another task made").isZero();
    assertAllCompletedAtFirstAttempt(600);
  }

  @Test
  void aTemporaryTableOfOneTaskNeverReachesAnotherByDefault() throws Exception {
    workers.start(defaults().handler("alone.temp", JsonNode.class, (ctx, p) -> {
      try (Statement st = ctx.connection().createStatement()) {
        st.execute("CREATE TEMP TABLE scratch (v int) ON COMMIT DROP");
        st.execute("INSERT INTO scratch VALUES (1)");
      }
    }));
    enqueue("alone.temp", 1_000);
    awaitAllFinished(1_000);
    assertAllCompletedAtFirstAttempt(1_000);
  }

  /** 2,000 tasks each updating one of two rows: a transaction that touches one row cannot deadlock on its own. */
  @Test
  void rowLocksOfOneTaskNeverCostAnotherAnAttemptByDefault() throws Exception {
    workers.start(defaults().handler("alone.row", JsonNode.class, (ctx, p) -> updateOneRow(ctx.connection(), p)));
    enqueue("alone.row", 2_000);
    awaitAllFinished(2_000);
    assertAllCompletedAtFirstAttempt(2_000);
    assertThat(queue.sql().count("SELECT sum(n) FROM counter")).as("updates committed").isEqualTo(2_000);
  }

  /**
   * A kind opted into shared transactions whose tasks collide when they share one (each creates the
   * same temporary table): the second task of each batch fails inside the shared transaction, runs
   * again alone, and completes at its first attempt; no task is charged for another's object.
   */
  @Test
  void aTaskThatFailsInASharedTransactionRunsAgainAloneBeforeItsFailureCounts() throws Exception {
    // task id -> the transaction its first run was in
    java.util.Map<Long, Long> firstTransactionOf = new java.util.concurrent.ConcurrentHashMap<>();
    workers.start(defaults().concurrency(1)
        .handler("alone.shared-temp", JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT txid_current()")) {
              rs.next();
              firstTransactionOf.putIfAbsent(ctx.taskId(), rs.getLong(1));
            }
            st.execute("CREATE TEMP TABLE scratch (v int) ON COMMIT DROP");
          }
        }, HandlerOptions.defaults().withSharedTransaction()));
    enqueue("alone.shared-temp", 300);
    awaitAllFinished(300);
    assertThat(new java.util.HashSet<>(firstTransactionOf.values()).size())
        .as("transactions of the tasks' first runs: fewer than tasks, so some were shared (the precondition)")
        .isLessThan(firstTransactionOf.size());
    assertAllCompletedAtFirstAttempt(300);
  }

  private static void updateOneRow(java.sql.Connection c, JsonNode p) throws Exception {
    try (Statement st = c.createStatement()) {
      st.execute("UPDATE counter SET n = n + 1 WHERE id = " + (p.path("i").asInt() * 7919 % 2));
    }
  }
}
