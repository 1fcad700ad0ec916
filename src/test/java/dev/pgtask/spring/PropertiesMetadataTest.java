package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskWorker;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The jar carries metadata for IDE completion of every pgtask.* property, with descriptions and defaults. */
class PropertiesMetadataTest {

  @Test
  void thePgtaskPropertiesHaveMetadataWithDescriptionsAndDefaults() throws Exception {
    JsonNode root;
    try (InputStream in = PgTaskProperties.class.getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("META-INF/spring-configuration-metadata.json").isNotNull();
      root = new ObjectMapper().readTree(in);
    }
    Map<String, JsonNode> byName = new HashMap<>();
    root.get("properties").forEach(p -> byName.put(p.get("name").asText(), p));
    for (String name : new String[] {"pgtask.migrations.enabled", "pgtask.worker.enabled", "pgtask.worker.queues",
        "pgtask.worker.concurrency", "pgtask.worker.poll-interval", "pgtask.worker.lease-duration",
        "pgtask.worker.task-timeout", "pgtask.worker.shutdown-timeout", "pgtask.worker.completed-retention",
        "pgtask.worker.failed-retention", "pgtask.worker.pool-size", "pgtask.worker.listen.url",
        "pgtask.worker.listen.ping-interval", "pgtask.health.claim-stall"}) {
      assertThat(byName).as(name).containsKey(name);
      assertThat(byName.get(name).path("description").asText()).as(name + " description").isNotBlank();
    }
    assertThat(byName.get("pgtask.worker.concurrency").path("defaultValue").asInt()).isEqualTo(10);
    assertThat(byName.get("pgtask.worker.poll-interval").path("defaultValue").asText()).isEqualTo("5s");
  }

  @Test
  void thePropertyDefaultsArePgtasksOwn() {
    PgTaskProperties.Worker w = new PgTaskProperties().getWorker();
    assertThat(w.getQueues()).containsExactly(dev.pgtask.TaskOptions.DEFAULT_QUEUE);
    assertThat(w.getConcurrency()).isEqualTo(PgTaskWorker.DEFAULT_CONCURRENCY);
    assertThat(w.getBatchSize()).isEqualTo(PgTaskWorker.DEFAULT_BATCH_SIZE);
    assertThat(w.getPrefetch()).isEqualTo(PgTaskWorker.DEFAULT_PREFETCH);
    assertThat(w.getCommitBatchSize()).isEqualTo(PgTaskWorker.DEFAULT_COMMIT_BATCH_SIZE);
    assertThat(w.getCommitBatchTime()).isEqualTo(PgTaskWorker.DEFAULT_COMMIT_BATCH_TIME);
    assertThat(w.getPollInterval()).isEqualTo(PgTaskWorker.DEFAULT_POLL_INTERVAL);
    assertThat(w.getTaskTimeout()).isEqualTo(PgTaskWorker.DEFAULT_TASK_TIMEOUT);
    assertThat(w.getLeaseDuration()).isEqualTo(PgTaskWorker.DEFAULT_LEASE_DURATION);
    assertThat(w.getRescueInterval()).isEqualTo(PgTaskWorker.DEFAULT_RESCUE_INTERVAL);
    assertThat(w.getTenantDeferDelay()).isEqualTo(PgTaskWorker.DEFAULT_TENANT_DEFER_DELAY);
    assertThat(w.getRetryBackoffBase()).isEqualTo(PgTaskWorker.DEFAULT_RETRY_BACKOFF_BASE);
    assertThat(w.getRetryBackoffCap()).isEqualTo(PgTaskWorker.DEFAULT_RETRY_BACKOFF_CAP);
    assertThat(w.getCompletedRetention()).isEqualTo(PgTaskWorker.DEFAULT_COMPLETED_RETENTION);
    assertThat(w.getFailedRetention()).isEqualTo(PgTaskWorker.DEFAULT_FAILED_RETENTION);
    assertThat(w.getListen().getPingInterval()).isEqualTo(PgTaskWorker.DEFAULT_LISTENER_PING_INTERVAL);
    assertThat(w.getShutdownTimeout()).isEqualTo(PgTaskProperties.DEFAULT_SHUTDOWN_TIMEOUT)
        .isEqualTo(PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT);
  }
}
