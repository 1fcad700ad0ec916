package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.PayloadLimits;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A payload at exactly every limit of PayloadLimits passes enqueue and its worker reads it: the
 * database's limits and the worker's Jackson limits are the same, so nothing enqueue accepts is
 * discarded for its shape.
 */
class PayloadAtTheLimitsRunsTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("payload_at_limits", 4,
      "SELECT pgtask.set_max_payload_bytes(" + (PayloadLimits.MAX_STRING_LENGTH + 1000) + ")");

  /** What the handler measured in each payload, by its "what" field. */
  private final Map<String, Integer> measured = new ConcurrentHashMap<>();

  @Test
  void aPayloadAtExactlyEachLimitIsAcceptedAndReadByTheWorker() throws Exception {
    Map<String, String> payloads = Map.of(
        "depth", "{\"what\":\"depth\",\"a\":" + "[".repeat(PayloadLimits.MAX_DEPTH - 1) + "]".repeat(PayloadLimits.MAX_DEPTH - 1) + "}",
        "number", "{\"what\":\"number\",\"n\":" + "9".repeat(PayloadLimits.MAX_NUMBER_LENGTH) + "}",
        "fraction", "{\"what\":\"fraction\",\"n\":-0." + "1".repeat(PayloadLimits.MAX_NUMBER_LENGTH) + "}",
        "name", "{\"what\":\"name\",\"" + "k".repeat(PayloadLimits.MAX_NAME_LENGTH) + "\":1}",
        "string", "{\"what\":\"string\",\"s\":\"" + "s".repeat(PayloadLimits.MAX_STRING_LENGTH) + "\"}");
    List<Long> ids = new ArrayList<>();
    for (String json : payloads.values()) {
      ids.add(queue.pgtask().enqueue(NewTask.of("limits", json, TaskOptions.defaults())));
    }
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2).pollInterval(Duration.ofMillis(300))
        .handler("limits", JsonNode.class, (ctx, p) -> measured.put(p.get("what").asText(), measure(p)))
        .build().start()) {
      await("every task at the limits completed").atMost(Duration.ofSeconds(60)).until(() ->
          queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE state = 'completed' AND kind = 'limits'") == ids.size()
              || queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE state = 'discarded'") > 0);
      assertThat(queue.sql().rows("SELECT last_error FROM pgtask.tasks WHERE state <> 'completed'"))
          .as("errors of tasks that did not complete").isEmpty();
    }
    assertThat(measured).as("what the handler read")
        .containsEntry("depth", PayloadLimits.MAX_DEPTH)
        .containsEntry("number", PayloadLimits.MAX_NUMBER_LENGTH)
        .containsEntry("fraction", 1)
        .containsEntry("name", PayloadLimits.MAX_NAME_LENGTH)
        .containsEntry("string", PayloadLimits.MAX_STRING_LENGTH);
  }

  /** The measure the payload is at the limit of: its depth, a number's digits, a name's or a string's length. */
  private static int measure(JsonNode p) {
    switch (p.get("what").asText()) {
      case "depth":
        return depth(p);
      case "number":
        return p.get("n").bigIntegerValue().toString().length();
      case "fraction":
        // read as a double (the default mapper's choice for a fraction): only that it was read
        return p.get("n").isNumber() ? 1 : 0;
      case "name": {
        Iterator<String> names = p.fieldNames();
        int longest = 0;
        while (names.hasNext()) {
          longest = Math.max(longest, names.next().length());
        }
        return longest;
      }
      default:
        return p.get("s").asText().length();
    }
  }

  private static int depth(JsonNode n) {
    int d = 0;
    while (n != null && n.isContainerNode()) {
      d++;
      n = n.isObject() ? n.get("a") : n.get(0);
    }
    return d;
  }
}
