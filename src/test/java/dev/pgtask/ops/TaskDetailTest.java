package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One task as an operator reads it (docs/operations.md, "One task: show"): {@code PgTask.find} and
 * {@code PgTaskOperations.find} return its state, payload, recorded attempts with their full errors
 * and its explanation, the same as {@code pgtask.task_detail(id)} in SQL; a missing task is empty.
 */
class TaskDetailTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("task_detail", 6);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  static void chargeCard(Map<?, ?> payload) {
    throw new IllegalStateException("card declined for " + payload.get("order"),
        new java.net.SocketTimeoutException("gateway did not answer"));
  }

  @Test
  void findReturnsTheStatePayloadAttemptsWithFullErrorsAndTheExplanation() throws Exception {
    PgTaskWorker w = workers.start(workers.builder().concurrency(1).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
        .handler("detail.charge", Map.class, (ctx, p) -> chargeCard(p)));
    long id = queue.pgtask().enqueue(NewTask.of("detail.charge", Map.of("order", "A-17"),
        TaskOptions.defaults().withMaxAttempts(2).withTenant("shop-1")));
    workers.awaitState(id, "discarded", Duration.ofSeconds(20));

    TaskDetail t = queue.pgtask().find(id).orElseThrow();
    assertThat(t.id()).isEqualTo(id);
    assertThat(t.kind()).isEqualTo("detail.charge");
    assertThat(t.tenant()).isEqualTo("shop-1");
    assertThat(t.state()).isEqualTo("discarded");
    assertThat(t.attempt() + "/" + t.maxAttempts()).isEqualTo("2/2");
    assertThat(JSON.readTree(t.payload())).as("payload").isEqualTo(JSON.readTree("{\"order\": \"A-17\"}"));
    assertThat(t.lastError()).isEqualTo("java.lang.IllegalStateException: card declined for A-17");
    assertThat(t.explanation()).startsWith("task " + id + " finished as discarded");
    assertThat(t.attempts()).extracting(a -> a.attempt() + " " + a.outcome() + " " + a.worker())
        .containsExactly("1 failed " + w.workerId(), "2 discarded " + w.workerId());
    assertThat(t.attempts()).allSatisfy(a -> {
      assertThat(a.error()).isEqualTo("java.lang.IllegalStateException: card declined for A-17");
      assertThat(a.errorDetail()).contains("at " + TaskDetailTest.class.getName() + ".chargeCard(")
          .contains("Caused by: java.net.SocketTimeoutException: gateway did not answer");
      assertThat(a.startedAt()).isBeforeOrEqualTo(a.finishedAt());
    });

    // the same through the operator reads, and the document SQL users read
    assertThat(queue.pgtask().operations().find(id)).contains(t);
    JsonNode doc = JSON.readTree(queue.sql().text("SELECT pgtask.task_detail(" + id + ")::text"));
    assertThat(JSON.readTree(t.json())).as("the record's json is task_detail's").isEqualTo(doc);
    assertThat(doc.path("attempts").size()).isEqualTo(2);
    assertThat(doc.path("attempts").get(1).path("error_detail").asText()).isEqualTo(t.attempts().get(1).errorDetail());
    assertThat(doc.path("explanation").path("reason").asText()).isEqualTo("finished");
    assertThat(doc.path("errors").size()).as("the row's error history").isEqualTo(2);
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task_attempts WHERE task_id = " + id
        + " AND duration >= interval '0'")).as("rows of the task_attempts view").isEqualTo(2);
  }

  @Test
  void aTaskWithoutAttemptsHasAnEmptyListAndAMissingTaskIsEmpty() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("detail.later", Map.of("n", 1),
        TaskOptions.defaults().withDelay(Duration.ofHours(1))));
    TaskDetail t = queue.pgtask().find(id).orElseThrow();
    assertThat(t.state()).isEqualTo("scheduled");
    assertThat(t.attempts()).isEmpty();
    assertThat(t.explanation()).startsWith("task " + id + " is scheduled until ");
    assertThat(queue.pgtask().find(987_654_321L)).as("a task that does not exist").isEmpty();
    assertThat(queue.sql().text("SELECT pgtask.task_detail(987654321) IS NULL")).isEqualTo("t");
  }
}
