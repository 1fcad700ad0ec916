package dev.pgtask;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.internal.LocalWake;
import dev.pgtask.internal.sql.QueueControlQueries;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.JSONB;

/** {@link PgTask}'s queue control and diagnosis: pause and resume a queue, list paused queues, explain a task. */
final class QueueControl {

  private final DataSource dataSource;
  private final DSLContext dsl;
  private final ObjectMapper objectMapper;

  QueueControl(DataSource dataSource, DSLContext dsl, ObjectMapper objectMapper) {
    this.dataSource = dataSource;
    this.dsl = dsl;
    this.objectMapper = objectMapper;
  }

  boolean pause(String queue) {
    return "paused".equals(Failures.call("pause queue", () -> QueueControlQueries.pauseQueue(dsl, queue)));
  }

  boolean resume(String queue) {
    boolean resumed = "resumed".equals(Failures.call("resume queue", () -> QueueControlQueries.resumeQueue(dsl, queue)));
    if (resumed) {
      LocalWake.committed(dataSource, queue); // the commit's NOTIFY follows anyway
    }
    return resumed;
  }

  List<PausedQueue> paused() {
    return Failures.call("list paused queues", () -> QueueControlQueries.selectPausedQueues(dsl).map(r ->
        new PausedQueue(r.getQueue(), r.getPausedAt(), r.getPausedBy(), r.getDue(), r.getQueued())));
  }

  TaskExplanation explain(long taskId) {
    JSONB json = Failures.call("explain", () -> QueueControlQueries.explainTask(dsl, taskId));
    try {
      JsonNode node = objectMapper.readTree(json.data());
      return new TaskExplanation(taskId, node.path("reason").asText(), node.path("sentence").asText(), node);
    } catch (JsonProcessingException e) {
      throw new PgTaskException("pgtask: explain failed: the database's answer is not JSON", e);
    }
  }
}
