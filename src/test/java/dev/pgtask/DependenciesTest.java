package dev.pgtask;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Dependencies: a child waits pending until its last parent completes and is released in the
 * transaction that completes it (woken like a new task, its tenant's head rule kept); a failed
 * parent cancels it (recursively, with the reason), lets it run, or holds it for an operator; a
 * missing parent is refused by name with nothing stored; results pass from parents to children;
 * an enqueue racing a parent's completion never leaves the child pending.
 */
class DependenciesTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dependencies", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  private static final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterAll
  static void stopThreads() {
    threads.shutdownNow();
  }

  @AfterEach
  void clean() throws Exception {
    workers.closeAll();
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  private static long sql(String call) throws SQLException {
    try (Connection c = queue.database().connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(call)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String state(long id) throws SQLException {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  private static String lastError(long id) throws SQLException {
    return queue.sql().text("SELECT last_error FROM pgtask.tasks WHERE id = " + id);
  }

  /** Marks a task finished as a worker's statement would (top level, no worker needed). */
  private static void finish(long id, String state) throws SQLException {
    queue.sql().exec("UPDATE pgtask.task SET state = '" + state + "', finished_at = clock_timestamp() WHERE id = " + id);
  }

  @Test
  void aDiamondRunsInOrderWithRealWorkersAndEachChildReadsItsParentsResults() throws Exception {
    List<String> order = new CopyOnWriteArrayList<>();
    Map<String, Map<Long, JsonNode>> seen = new ConcurrentHashMap<>();
    TaskHandler<JsonNode> handler = (ctx, payload) -> {
      String name = payload.get("name").asText();
      seen.put(name, ctx.parentResults());
      order.add(name);
      ctx.setResult(Map.of("from", name));
    };
    // a poll far beyond the test: children start on the wake-up their release sends
    PgTaskWorker worker = workers.start(workers.builder().queues("diamond").concurrency(4)
        .pollInterval(Duration.ofSeconds(60)).handler("dep.node", handler));
    workers.awaitListening(worker, Duration.ofSeconds(10));
    TaskOptions q = TaskOptions.defaults().withQueue("diamond");
    NewTask a = NewTask.of("dep.node", Map.of("name", "A"), q);
    NewTask b = NewTask.of("dep.node", Map.of("name", "B"), q.withDependsOn(a));
    NewTask c = NewTask.of("dep.node", Map.of("name", "C"), q.withDependsOn(a));
    NewTask d = NewTask.of("dep.node", Map.of("name", "D"), q.withDependsOn(b, c));
    List<Long> ids = queue.pgtask().enqueueAll(List.of(a, b, c, d));
    await("D completed").atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(state(ids.get(3))));

    assertThat(order).as("run order").hasSize(4);
    assertThat(order.get(0)).isEqualTo("A");
    assertThat(order.subList(1, 3)).containsExactlyInAnyOrder("B", "C");
    assertThat(order.get(3)).isEqualTo("D");
    assertThat(seen.get("A")).as("A has no parents").isEmpty();
    assertThat(seen.get("B").get(ids.get(0)).get("from").asText()).as("B reads A's result").isEqualTo("A");
    assertThat(seen.get("D").keySet()).as("D's parents").containsExactly(ids.get(1), ids.get(2));
    assertThat(seen.get("D").get(ids.get(2)).get("from").asText()).as("D reads C's result").isEqualTo("C");
    assertThat(queue.sql().text("SELECT result ->> 'from' FROM pgtask.parent_results(" + ids.get(3) + ") WHERE parent_id = "
        + ids.get(1))).as("SQL reads B's result").isEqualTo("B");
  }

  @Test
  void aChildWaitsPendingInvisibleToTheClaimAndExplainNamesItsParentsAndTheirStates() throws Exception {
    long a = sql("SELECT pgtask.enqueue('dep.x')");
    long b = sql("SELECT pgtask.enqueue('dep.x', run_at => now() + interval '1 hour')");
    long child = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + a + ", " + b + "]::bigint[])");
    assertThat(state(child)).isEqualTo("pending");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + child
        + " AND state IN ('available', 'retryable') AND NOT blocked")).as("child in the claim index's predicate").isZero();
    String explain = queue.sql().text("SELECT pgtask.explain_task(" + child + ")");
    assertThat(explain).contains("waits for 2 of its 2 parent").contains("task " + a + " (available)")
        .contains("task " + b + " (scheduled)");
    finish(a, "completed");
    assertThat(state(child)).as("after one of two parents").isEqualTo("pending");
    assertThat(queue.sql().text("SELECT pgtask.explain_task(" + child + ")")).contains("waits for 1 of its 2");
    finish(b, "completed");
    assertThat(state(child)).as("released by the statement that completed its last parent").isEqualTo("available");
  }

  @Test
  void aMissingParentIsRefusedByNameAndNothingIsStoredFromSqlAndJava() throws Exception {
    long before = queue.sql().count("SELECT count(*) FROM pgtask.task");
    ServerErrors e = ServerErrors.of(() -> sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[987654321]::bigint[])"));
    assertThat(e.sqlState()).isEqualTo("23514");
    assertThat(e.constraint()).isEqualTo("task_parent_missing");
    assertThat(e.message()).contains("987654321");
    assertThatThrownBy(() -> queue.pgtask().enqueue(NewTask.of("dep.x", Map.of(),
        TaskOptions.defaults().withDependsOn(987654321L))))
        .isInstanceOfSatisfying(InvalidTaskException.class, x -> assertThat(x.constraint()).isEqualTo("task_parent_missing"));
    // a cycle cannot be built: a batch task can only name earlier ones (and itself is not earlier)
    NewTask later = NewTask.of("dep.x", Map.of());
    NewTask first = NewTask.of("dep.x", Map.of(), TaskOptions.defaults().withDependsOn(later));
    assertThatThrownBy(() -> queue.pgtask().enqueueAll(List.of(first, later)))
        .isInstanceOfSatisfying(InvalidTaskException.class, x -> assertThat(x.constraint()).isEqualTo("task_parent_missing"));
    ServerErrors self = ServerErrors.of(() -> sql("SELECT id FROM pgtask.enqueue_batch(ARRAY['dep.x'],"
        + " depends_on => ARRAY['[{\"batch\": 1}]']::jsonb[])"));
    assertThat(self.constraint()).as("a task naming itself").isEqualTo("task_parent_missing");
    ServerErrors policy = ServerErrors.of(() -> sql("SELECT pgtask.enqueue('dep.x', depends_on => '{}'::bigint[],"
        + " on_parent_failure => 'maybe')"));
    assertThat(policy.constraint()).isEqualTo("task_parent_policy");
    ServerErrors dedupe = ServerErrors.of(() -> sql("SELECT pgtask.enqueue('dep.x', depends_on => '{}'::bigint[],"
        + " dedupe_key => 'k')"));
    assertThat(dedupe.constraint()).isEqualTo("task_depends_on_dedupe");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task")).as("tasks stored").isEqualTo(before);
  }

  @Test
  void aFailedParentCancelsItsChildrenRecursivelyWithTheReasonByDefault() throws Exception {
    long a = sql("SELECT pgtask.enqueue('dep.x')");
    long b = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + a + "]::bigint[])");
    long c = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + b + "]::bigint[])");
    finish(a, "discarded");
    assertThat(state(b)).isEqualTo("cancelled");
    assertThat(lastError(b)).isEqualTo("cancelled: parent task " + a + " was discarded");
    assertThat(state(c)).as("grandchild").isEqualTo("cancelled");
    assertThat(lastError(c)).isEqualTo("cancelled: parent task " + b + " was cancelled");
    // a parent that is retried has not failed: only its final state counts
    long p = sql("SELECT pgtask.enqueue('dep.x')");
    long k = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + p + "]::bigint[])");
    queue.sql().exec("UPDATE pgtask.task SET state = 'retryable', attempt = 1, run_at = now() + interval '1 minute' WHERE id = " + p);
    assertThat(state(k)).as("child of a retryable parent").isEqualTo("pending");
    // cancelling or deleting an unfinished parent resolves its children too
    queue.sql().exec("SELECT pgtask.cancel_task(" + p + ")");
    assertThat(state(k)).isEqualTo("cancelled");
    long r = sql("SELECT pgtask.enqueue('dep.x')");
    long s = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + r + "]::bigint[])");
    queue.sql().exec("SELECT pgtask.delete_task(" + r + ")");
    assertThat(state(s)).isEqualTo("cancelled");
    assertThat(lastError(s)).isEqualTo("cancelled: parent task " + r + " was deleted");
  }

  @Test
  void underRunAFailedParentCountsAsDoneAndTheChildRunsAfterItsOtherParents() throws Exception {
    long a = sql("SELECT pgtask.enqueue('dep.x')");
    long b = sql("SELECT pgtask.enqueue('dep.x')");
    long child = queue.pgtask().enqueue(NewTask.of("dep.x", Map.of(),
        TaskOptions.defaults().withDependsOn(a, b).withOnParentFailure(ParentFailure.RUN)));
    finish(a, "discarded");
    assertThat(state(child)).isEqualTo("pending");
    finish(b, "completed");
    assertThat(state(child)).isEqualTo("available");
  }

  @Test
  void underWaitAFailedParentHoldsTheChildForAnOperatorWhoReleasesItOrRetriesTheParent() throws Exception {
    long a = sql("SELECT pgtask.enqueue('dep.x')");
    long child = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + a + "]::bigint[], on_parent_failure => 'wait')");
    finish(a, "discarded");
    assertThat(state(child)).isEqualTo("pending");
    assertThat(queue.sql().text("SELECT pgtask.explain_task(" + child + ")")).contains("pgtask.release_task(" + child + ")");
    queue.sql().exec("SELECT pgtask.release_task(" + child + ")");
    assertThat(state(child)).as("released by the operator").isEqualTo("available");
    ServerErrors again = ServerErrors.of(() -> queue.sql().exec("SELECT pgtask.release_task(" + child + ")"));
    assertThat(again.sqlState()).as("release of a task that is not pending").isEqualTo("55000");

    long p = sql("SELECT pgtask.enqueue('dep.x')");
    long k = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + p + "]::bigint[], on_parent_failure => 'wait')");
    finish(p, "discarded");
    queue.sql().exec("SELECT pgtask.retry_task(" + p + ")");
    assertThat(state(k)).isEqualTo("pending");
    finish(p, "completed");
    assertThat(state(k)).as("the retried parent completed").isEqualTo("available");
  }

  @Test
  void aReleasedChildKeepsItsTenantAndWaitsBehindItsTenantsHead() throws Exception {
    long head = sql("SELECT pgtask.enqueue('dep.x', tenant => 'acme')");
    long parent = sql("SELECT pgtask.enqueue('dep.x')");
    long child = sql("SELECT pgtask.enqueue('dep.x', tenant => 'acme', depends_on => ARRAY[" + parent + "]::bigint[])");
    assertThat(state(head)).isEqualTo("available");
    finish(parent, "completed");
    assertThat(state(child)).as("released behind its tenant's head").isEqualTo("waiting");
    finish(head, "completed");
    assertThat(state(child)).as("handed the head").isEqualTo("available");
    // with no head, a released child is its tenant's head at once
    long p2 = sql("SELECT pgtask.enqueue('dep.x')");
    long c2 = sql("SELECT pgtask.enqueue('dep.x', tenant => 'solo', depends_on => ARRAY[" + p2 + "]::bigint[])");
    finish(p2, "completed");
    assertThat(state(c2)).isEqualTo("available");
  }

  @Test
  void aResultAbove64KiBIsRefusedByNameAndTheTaskGoesOnWithNothingStored() throws Exception {
    Map<Long, String> caught = new ConcurrentHashMap<>();
    TaskHandler<JsonNode> big = (ctx, payload) -> {
      try {
        ctx.setResult(Map.of("blob", "x".repeat(70_000)));
      } catch (InvalidTaskException e) {
        caught.put(ctx.taskId(), e.constraint());
      }
    };
    workers.start(workers.builder().queues("results").concurrency(2).handler("dep.big", big));
    long id = queue.pgtask().enqueue(NewTask.of("dep.big", Map.of(), TaskOptions.defaults().withQueue("results")));
    workers.awaitState(id, "completed", Duration.ofSeconds(10));
    assertThat(caught).containsEntry(id, "task_result_size");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND result IS NULL")).isEqualTo(1);
    ServerErrors direct = ServerErrors.of(() -> queue.sql().exec("UPDATE pgtask.task SET result = jsonb_build_object('b', repeat('x', 70000))"
        + " WHERE id = " + id));
    assertThat(direct.constraint()).isEqualTo("task_result_size");
  }

  @Test
  void retentionKeepsAParentWhileAChildOfItHasNotFinished() throws Exception {
    long a = sql("SELECT pgtask.enqueue('dep.x')");
    long b = sql("SELECT pgtask.enqueue('dep.x')");
    long child = sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + a + ", " + b + "]::bigint[])");
    queue.sql().exec("UPDATE pgtask.task SET state = 'completed', finished_at = now() - interval '30 days', result = '{\"v\": 1}'"
        + " WHERE id = " + a);
    int pruned = dev.pgtask.internal.sql.Sql.using(queue.pool()).transactionResult(cfg -> dev.pgtask.internal.sql.MaintenanceQueries.pruneFinished(
        cfg.dsl(), Duration.ofDays(1), Duration.ofDays(1), 100));
    assertThat(pruned).isZero();
    assertThat(queue.sql().text("SELECT result ->> 'v' FROM pgtask.parent_results(" + child + ") WHERE parent_id = " + a))
        .isEqualTo("1");
    finish(b, "completed");
    queue.sql().exec("UPDATE pgtask.task SET state = 'completed', finished_at = clock_timestamp() WHERE id = " + child);
    pruned = dev.pgtask.internal.sql.Sql.using(queue.pool()).transactionResult(cfg -> dev.pgtask.internal.sql.MaintenanceQueries.pruneFinished(
        cfg.dsl(), Duration.ofDays(1), Duration.ofDays(1), 100));
    assertThat(pruned).as("the parent, once its child finished").isEqualTo(1);
  }

  @Test
  void anEnqueueRacingTheCompletionOfItsParentNeverLeavesTheChildPending() throws Exception {
    // 1. the parent's transaction completes it first (holding its row as a worker does), the child's
    //    enqueue comes while that is uncommitted: the enqueue waits, then reads the completion
    long parent = sql("SELECT pgtask.enqueue('dep.x')");
    long child;
    try (Connection t = queue.database().connect()) {
      t.setAutoCommit(false);
      try (Statement s = t.createStatement()) {
        s.execute("SELECT 1 FROM pgtask.task WHERE id = " + parent + " FOR NO KEY UPDATE");
        s.execute("UPDATE pgtask.task SET state = 'completed', finished_at = clock_timestamp() WHERE id = " + parent);
      }
      Future<Long> enqueue = threads.submit(() -> sql("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + parent + "]::bigint[])"));
      await("the enqueue waits for the parent's row").atMost(Duration.ofSeconds(10))
          .until(() -> enqueue.isDone() || waitingOnLock());
      t.commit();
      child = enqueue.get(10, TimeUnit.SECONDS);
    }
    assertThat(state(child)).as("child enqueued while its parent completed").isEqualTo("available");

    // 2. the child's enqueue first, uncommitted; the parent completes meanwhile in another transaction
    long parent2 = sql("SELECT pgtask.enqueue('dep.x')");
    long child2;
    try (Connection e = queue.database().connect()) {
      e.setAutoCommit(false);
      try (Statement s = e.createStatement();
           ResultSet rs = s.executeQuery("SELECT pgtask.enqueue('dep.x', depends_on => ARRAY[" + parent2 + "]::bigint[])")) {
        rs.next();
        child2 = rs.getLong(1);
      }
      Future<?> complete = threads.submit(() -> {
        finish(parent2, "completed");
        return null;
      });
      await("the completion waits for the parent's row").atMost(Duration.ofSeconds(10))
          .until(() -> complete.isDone() || waitingOnLock());
      e.commit();
      complete.get(10, TimeUnit.SECONDS);
    }
    assertThat(state(parent2)).isEqualTo("completed");
    assertThat(state(child2)).as("child whose parent completed while it was being enqueued").isEqualTo("available");
  }

  /** Whether a session of the test database waits for a lock. */
  private static boolean waitingOnLock() throws SQLException {
    return queue.sql().count(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") > 0;
  }
}
