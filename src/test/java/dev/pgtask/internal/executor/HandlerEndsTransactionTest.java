package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A handler that ends the task's transaction by sending COMMIT or ROLLBACK as SQL text (which the
 * connection wrapper's {@code commit()}/{@code rollback()} guard cannot see) fails its attempt with
 * an error that says so; the task is never marked completed, and the worker goes on with later
 * tasks.
 */
class HandlerEndsTransactionTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("handler_ends_tx", 6, "CREATE TABLE effect (task_id bigint)");

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks(4);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM effect");
  }

  @ParameterizedTest(name = "{0} with commit batch {1}")
  @CsvSource({"COMMIT, 1", "ROLLBACK, 1", "END, 1", "COMMIT, 10", "ROLLBACK, 10"})
  void aHandlerThatEndsTheTaskTransactionWithSqlTextFailsItsTaskWithAClearError(String sql, int commitBatch) throws Exception {
    workers.start(workers.builder().concurrency(1).prefetch(commitBatch > 1 ? 10 : 0)
        .commitBatch(commitBatch, Duration.ofMillis(200))
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(20)).shutdownTimeout(Duration.ofSeconds(2))
        .handler("tx.end", JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            st.execute("INSERT INTO effect VALUES (" + ctx.taskId() + ")");
            if (p.path("end").asBoolean()) {
              st.execute(sql);
            }
          }
        }, dev.pgtask.HandlerOptions.defaults().withSharedTransaction()));
    if (commitBatch > 1) {
      // the kind's first runs: its tasks open transactions that may carry others only once it is known to be short
      for (int i = 0; i < 4; i++) {
        long warm = queue.pgtask().enqueue(NewTask.of("tx.end", Map.of()));
        await("a warm-up task runs").atMost(Duration.ofSeconds(15)).until(() -> "completed".equals(state(warm)));
      }
    }
    long culprit = queue.pgtask().enqueue(NewTask.of("tx.end", Map.of("end", true), TaskOptions.defaults().withMaxAttempts(1)));
    await("the culprit's attempt is recorded").atMost(Duration.ofSeconds(15))
        .until(() -> !"running".equals(state(culprit)) && !"available".equals(state(culprit)));
    assertThat(state(culprit)).as("state of a task whose handler sent " + sql).isEqualTo("discarded");
    assertThat(queue.sql().text("SELECT errors -> -1 ->> 'error' FROM pgtask.task WHERE id = " + culprit))
        .as("the error recorded for a handler that sent " + sql).isNotNull().containsIgnoringCase("transaction");

    long later = queue.pgtask().enqueue(NewTask.of("tx.end", Map.of()));
    await("a later task runs").atMost(Duration.ofSeconds(15)).until(() -> "completed".equals(state(later)));
    assertThat(queue.sql().count("SELECT count(*) FROM effect WHERE task_id = " + later)).as("the later task's effect").isEqualTo(1);
  }

  private static String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }
}
