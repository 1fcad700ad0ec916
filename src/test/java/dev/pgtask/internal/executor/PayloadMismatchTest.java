package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.DeserializationFeature;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A payload that does not fit its handler's record is discarded with an error that names the field
 * and the problem (docs/configuration.md, {@code objectMapper}), and no value of the payload: not
 * in the task's last error, not in its error history. By default a missing field and a null for a
 * primitive are such errors; an unknown property is ignored.
 */
class PayloadMismatchTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("payload_mismatch", 8);

  record Line(String sku, int qty) {}

  record Shipment(long orderId, int quantity, String address, List<Line> lines) {}

  /** Every value a test payload carries contains this: none may show in an error. */
  private static final String SECRET = "TENANT-SECRET";

  final List<Shipment> handled = new CopyOnWriteArrayList<>();
  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @BeforeEach
  void clean() throws SQLException {
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  private void startWorker(PgTaskWorker.Builder b) {
    workers.start(b.handler("ship", Shipment.class, (ctx, s) -> handled.add(s)));
  }

  private PgTaskWorker.Builder builder() {
    return workers.builder().concurrency(2).pollInterval(Duration.ofMillis(300));
  }

  private long enqueue(String json) {
    return queue.pgtask().enqueue(NewTask.of("ship", json, TaskOptions.defaults()));
  }

  private String state(long id) throws SQLException {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  /** Waits until the task is discarded and returns its last error, checked to equal its history's only entry. */
  private String discardedError(long id) throws SQLException {
    await("task " + id + " discarded").atMost(Duration.ofSeconds(15)).until(() -> "discarded".equals(state(id)));
    String last = queue.sql().text("SELECT last_error FROM pgtask.tasks WHERE id = " + id);
    assertThat(queue.sql().rows("SELECT e->>'error' FROM pgtask.task, jsonb_array_elements(errors) e WHERE id = " + id))
        .as("the error history of task %d", id).containsExactly(last);
    assertThat(last).as("the error of task %d", id)
        .startsWith("payload does not match " + Shipment.class.getName() + ": ")
        .doesNotContain(SECRET);
    return last;
  }

  @Test
  void aPayloadMissingAFieldOfItsRecordIsDiscardedNamingTheFieldAndNoValue() throws SQLException {
    startWorker(builder());
    long id = enqueue("{\"orderId\": 7, \"address\": \"" + SECRET + "-street\", \"lines\": []}");
    assertThat(discardedError(id)).contains("$.quantity is missing");
    assertThat(handled).as("handled payloads").isEmpty();
  }

  @Test
  void aNullForAnIntFieldIsDiscardedNamingTheField() throws SQLException {
    startWorker(builder());
    long id = enqueue("{\"orderId\": 7, \"quantity\": null, \"address\": \"" + SECRET + "\", \"lines\": []}");
    assertThat(discardedError(id)).contains("$.quantity is null, but int is a primitive");
  }

  @Test
  void aStringForAnIntFieldIsDiscardedNamingTheFieldWithoutTheString() throws SQLException {
    startWorker(builder());
    long id = enqueue("{\"orderId\": 7, \"quantity\": \"" + SECRET + "-12\", \"address\": \"x\", \"lines\": []}");
    assertThat(discardedError(id)).contains("$.quantity has the wrong type: expected an integer (int), got a string");
  }

  @Test
  void aMismatchInsideANestedRecordNamesItsWholePath() throws SQLException {
    startWorker(builder());
    long missing = enqueue("{\"orderId\": 7, \"quantity\": 1, \"address\": \"x\", \"lines\": "
        + "[{\"sku\": \"a\", \"qty\": 1}, {\"sku\": \"" + SECRET + "\"}]}");
    long object = enqueue("{\"orderId\": 7, \"quantity\": 1, \"address\": {\"street\": \"" + SECRET + "\"}, \"lines\": []}");
    assertThat(discardedError(missing)).contains("$.lines[1].qty is missing");
    assertThat(discardedError(object)).contains("$.address has the wrong type: expected a string (String), got an object");
  }

  @Test
  void anUnknownPropertyIsIgnoredByDefault() throws SQLException {
    startWorker(builder());
    long id = enqueue("{\"orderId\": 7, \"quantity\": 2, \"address\": \"x\", \"lines\": [], \"addedLater\": true}");
    await("task completed").atMost(Duration.ofSeconds(15)).until(() -> "completed".equals(state(id)));
    assertThat(handled).containsExactly(new Shipment(7, 2, "x", List.of()));
  }

  @Test
  void aMapperGivenToTheBuilderDecidesInstead() throws SQLException {
    startWorker(builder().objectMapper(PgTaskWorker.defaultObjectMapper()
        .disable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES,
            DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)));
    long id = enqueue("{\"orderId\": 7, \"address\": \"x\"}");
    await("task completed").atMost(Duration.ofSeconds(15)).until(() -> "completed".equals(state(id)));
    assertThat(handled).containsExactly(new Shipment(7, 0, "x", null));
  }
}
