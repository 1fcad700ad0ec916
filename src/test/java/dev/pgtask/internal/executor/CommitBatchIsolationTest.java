package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One poisoned task never costs another task an attempt. With commit batching, a task whose
 * effects fail only at COMMIT (a deferred unique constraint), or whose handler swallowed an
 * SQLException (so its savepoint cannot be released), fails alone with its own error; the other
 * tasks of its transaction complete at attempt 1 with their effects committed once. Without
 * batching, the same culprits fail their own attempt and leave no effects.
 */
class CommitBatchIsolationTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("batch_isolation", 6,
      "CREATE TABLE effect (task_id bigint, attempt int)",
      "CREATE TABLE guard (k text CONSTRAINT guard_k_deferred UNIQUE DEFERRABLE INITIALLY DEFERRED)");

  static final int INNOCENTS = 6;

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks(4);
  // task id -> the transaction id its first attempt ran in
  final Map<Long, Long> firstTransaction = new ConcurrentHashMap<>();

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM effect; DELETE FROM guard");
  }

  private PgTaskWorker.Builder builder() {
    return workers.builder().concurrency(1).prefetch(40)
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(20)).shutdownTimeout(Duration.ofSeconds(2))
        .handler("iso.task", JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT txid_current()")) {
              rs.next();
              if (ctx.attempt() == 1) {
                firstTransaction.putIfAbsent(ctx.taskId(), rs.getLong(1)); // the first run of attempt 1
              }
            }
            st.execute("INSERT INTO effect VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ")");
            switch (p.path("culprit").asText()) {
              case "deferred" -> {
                // allowed until the deferred check runs: at COMMIT
                st.execute("INSERT INTO guard VALUES ('dup-" + ctx.taskId() + "')");
                st.execute("INSERT INTO guard VALUES ('dup-" + ctx.taskId() + "')");
              }
              case "swallowed" -> {
                try {
                  st.execute("SELECT 1 / 0");
                } catch (SQLException swallowed) {
                  // the handler's bug: it carries on as if nothing happened; its transaction is aborted
                }
              }
              default -> st.execute("INSERT INTO guard VALUES ('ok-" + ctx.taskId() + "-" + ctx.attempt() + "')");
            }
          }
        }, dev.pgtask.HandlerOptions.defaults().withSharedTransaction());
  }

  /**
   * Starts the worker and runs the kind's first tasks (tasks share a transaction only once their
   * kind is known to be short), then enqueues innocents with the culprit in the middle in one
   * statement: one claim, one batch.
   */
  private long enqueueAndStart(PgTaskWorker.Builder b, String culprit, List<Long> innocents) {
    workers.start(b);
    List<NewTask> warm = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      warm.add(NewTask.of("iso.task", Map.of()));
    }
    String warmIds = queue.pgtask().enqueueAll(warm).toString().replaceAll("[\\[\\]]", "");
    await("the kind's first runs").atMost(Duration.ofSeconds(20)).until(() -> queue.sql().count(
        "SELECT count(*) FROM pgtask.task WHERE id IN (" + warmIds + ") AND state = 'completed'") == 4);
    List<NewTask> tasks = new ArrayList<>();
    TaskOptions fewAttempts = TaskOptions.defaults().withMaxAttempts(2);
    for (int i = 0; i < INNOCENTS; i++) {
      tasks.add(NewTask.of("iso.task", i == INNOCENTS / 2 ? Map.of("culprit", culprit) : Map.of(), fewAttempts));
    }
    List<Long> ids = queue.pgtask().enqueueAll(tasks);
    long culpritId = ids.get(INNOCENTS / 2);
    for (long id : ids) {
      if (id != culpritId) {
        innocents.add(id);
      }
    }
    return culpritId;
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  private String lastError(long id) throws Exception {
    return queue.sql().text("SELECT errors -> -1 ->> 'error' FROM pgtask.task WHERE id = " + id);
  }

  private void assertInnocentsCompletedAtFirstAttempt(List<Long> innocents) throws Exception {
    String in = innocents.toString().replaceAll("[\\[\\]]", "");
    await("the innocent tasks finish").atMost(Duration.ofSeconds(20)).until(() -> queue.sql().count(
        "SELECT count(*) FROM pgtask.task WHERE id IN (" + in + ") AND state IN ('completed', 'discarded')") == innocents.size());
    assertThat(queue.sql().rows("SELECT id || ' ' || state || ' attempt ' || attempt FROM pgtask.tasks WHERE id IN (" + in + ") ORDER BY id"))
        .as("innocent tasks of the culprit's transaction").allMatch(r -> r.endsWith(" completed attempt 1"));
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id IN (" + in + ") AND errors IS NOT NULL"))
        .as("innocent tasks with an error entry").isZero();
    assertThat(queue.sql().rows("SELECT task_id || ' ' || attempt FROM effect WHERE task_id IN (" + in + ") ORDER BY task_id"))
        .as("committed effects of the innocent tasks: once each, from attempt 1")
        .containsExactlyElementsOf(innocents.stream().sorted().map(id -> id + " 1").toList());
  }

  private void assertCulpritSharedATransaction(long culprit, List<Long> innocents) {
    Long tx = firstTransaction.get(culprit);
    assertThat(tx).as("the culprit's first attempt ran").isNotNull();
    assertThat(innocents).as("innocent tasks whose first attempt ran in the culprit's transaction (batching precondition)")
        .anyMatch(id -> tx.equals(firstTransaction.get(id)));
  }

  @Test
  void aTaskFailingOnlyAtCommitInABatchFailsAloneAndCostsTheOthersNoAttempt() throws Exception {
    List<Long> innocents = new ArrayList<>();
    long culprit = enqueueAndStart(builder().commitBatch(10, Duration.ofSeconds(2)), "deferred", innocents);
    assertInnocentsCompletedAtFirstAttempt(innocents);
    assertCulpritSharedATransaction(culprit, innocents);
    await("the culprit's attempts recorded").atMost(Duration.ofSeconds(20)).until(() -> "discarded".equals(state(culprit)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + culprit)).as("culprit's attempts").isEqualTo(2);
    assertThat(lastError(culprit)).as("the culprit's own error: the deferred constraint it violated")
        .satisfiesAnyOf(e -> assertThat(e).contains("guard_k_deferred"), e -> assertThat(e).contains("23505"));
    assertThat(queue.sql().count("SELECT count(*) FROM effect WHERE task_id = " + culprit)).as("culprit's effects").isZero();
  }

  @Test
  void aHandlerThatSwallowedAnSqlExceptionInABatchFailsAloneAndCostsTheOthersNoAttempt() throws Exception {
    List<Long> innocents = new ArrayList<>();
    long culprit = enqueueAndStart(builder().commitBatch(10, Duration.ofSeconds(2)), "swallowed", innocents);
    assertInnocentsCompletedAtFirstAttempt(innocents);
    assertCulpritSharedATransaction(culprit, innocents);
    await("the culprit's attempts recorded").atMost(Duration.ofSeconds(20)).until(() -> "discarded".equals(state(culprit)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + culprit)).as("culprit's attempts").isEqualTo(2);
    assertThat(lastError(culprit)).as("the culprit's error").isNotBlank();
    assertThat(queue.sql().count("SELECT count(*) FROM effect WHERE task_id = " + culprit)).as("culprit's effects").isZero();
  }

  @Test
  void withoutBatchingATaskFailingOnlyAtCommitFailsItsOwnAttemptAndLeavesNoEffects() throws Exception {
    List<Long> innocents = new ArrayList<>();
    long culprit = enqueueAndStart(builder().commitBatch(1, Duration.ofMillis(50)), "deferred", innocents);
    assertInnocentsCompletedAtFirstAttempt(innocents);
    await("the culprit's attempts recorded").atMost(Duration.ofSeconds(20)).until(() -> "discarded".equals(state(culprit)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + culprit)).as("culprit's attempts").isEqualTo(2);
    assertThat(lastError(culprit)).as("the culprit's own error: the deferred constraint it violated")
        .satisfiesAnyOf(e -> assertThat(e).contains("guard_k_deferred"), e -> assertThat(e).contains("23505"));
    assertThat(queue.sql().count("SELECT count(*) FROM effect WHERE task_id = " + culprit)).as("culprit's effects").isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM guard WHERE k LIKE 'dup-%'")).as("culprit's guard rows").isZero();
  }

  @Test
  void withoutBatchingAHandlerThatSwallowedAnSqlExceptionFailsItsOwnAttemptAndLeavesNoEffects() throws Exception {
    List<Long> innocents = new ArrayList<>();
    long culprit = enqueueAndStart(builder().commitBatch(1, Duration.ofMillis(50)), "swallowed", innocents);
    assertInnocentsCompletedAtFirstAttempt(innocents);
    await("the culprit's attempts recorded").atMost(Duration.ofSeconds(20)).until(() -> "discarded".equals(state(culprit)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + culprit)).as("culprit's attempts").isEqualTo(2);
    assertThat(lastError(culprit)).as("the culprit's error").isNotBlank();
    assertThat(queue.sql().count("SELECT count(*) FROM effect WHERE task_id = " + culprit)).as("culprit's effects").isZero();
  }
}
