package dev.pgtask.internal.executor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.pgtask.InvalidTaskException;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.ResultQueries;
import java.sql.Connection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A handler's result and its parents' results ({@link dev.pgtask.TaskContext#setResult}), as JSON. */
final class TaskResults {

  // Jackson's defaults and the modules found on the class path; a JsonNode is stored as it is
  private static final ObjectMapper MAPPER = JsonMapper.builder().findAndAddModules().build();

  private TaskResults() {}

  /** Stores {@code result} for the running attempt {@code fence}, in the task's transaction {@code tx}. */
  static void store(Connection tx, Fence fence, Object result) {
    String json;
    try {
      json = result instanceof JsonNode node ? MAPPER.writeValueAsString(node) : MAPPER.writeValueAsString(result);
    } catch (JsonProcessingException e) {
      throw new InvalidTaskException("task_result_json", "pgtask: the result of task " + fence.id()
          + " cannot be written as JSON: " + e.getOriginalMessage(), e);
    }
    int bytes = ResultQueries.resultBytes(tx, json);
    if (bytes > ResultQueries.MAX_RESULT_BYTES) {
      throw new InvalidTaskException("task_result_size", "pgtask: the result of task " + fence.id() + " is "
          + bytes + " bytes of JSON, more than " + ResultQueries.MAX_RESULT_BYTES + "; store large data elsewhere"
          + " and return a reference to it");
    }
    if (!ResultQueries.storeResult(tx, fence, json)) {
      throw new IllegalStateException("pgtask: task " + fence.id() + " attempt " + fence.attempt()
          + " is no longer this worker's: its result was not stored");
    }
  }

  /** The parents' results of task {@code childId}, read in {@code tx}. */
  static Map<Long, JsonNode> ofParents(Connection tx, long childId) {
    Map<Long, JsonNode> out = new LinkedHashMap<>();
    for (Map.Entry<Long, String> e : ResultQueries.parentResults(tx, childId).entrySet()) {
      try {
        out.put(e.getKey(), e.getValue() == null ? null : MAPPER.readTree(e.getValue()));
      } catch (JsonProcessingException ex) {
        throw new IllegalStateException("pgtask: the result of task " + e.getKey() + " is not JSON", ex);
      }
    }
    return Collections.unmodifiableMap(out);
  }
}
