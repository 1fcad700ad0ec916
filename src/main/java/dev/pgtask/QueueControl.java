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
    try {
      return "paused".equals(QueueControlQueries.pauseQueue(dsl, queue));
    } catch (RuntimeException e) {
      throw Failures.of("pause queue", e);
    }
  }

  boolean resume(String queue) {
    boolean resumed;
    try {
      resumed = "resumed".equals(QueueControlQueries.resumeQueue(dsl, queue));
    } catch (RuntimeException e) {
      throw Failures.of("resume queue", e);
    }
    if (resumed) {
      LocalWake.committed(dataSource, queue); // the commit's NOTIFY follows anyway
    }
    return resumed;
  }

  List<PausedQueue> paused() {
    try {
      return QueueControlQueries.selectPausedQueues(dsl).map(r -> new PausedQueue(r.getQueue(), r.getPausedAt(),
          r.getPausedBy(), r.getDue(), r.getQueued()));
    } catch (RuntimeException e) {
      throw Failures.of("list paused queues", e);
    }
  }

  TaskExplanation explain(long taskId) {
    JSONB json;
    try {
      json = QueueControlQueries.explainTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw Failures.of("explain", e);
    }
    try {
      JsonNode node = objectMapper.readTree(json.data());
      return new TaskExplanation(taskId, node.path("reason").asText(), node.path("sentence").asText(), node);
    } catch (JsonProcessingException e) {
      throw new PgTaskException("pgtask: explain failed: the database's answer is not JSON", e);
    }
  }
}
