package dev.pgtask.internal.executor;

import dev.pgtask.PgTaskMetrics;
import dev.pgtask.PgTaskTracing;
import dev.pgtask.WorkerSettings;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * Worker configurations and claimed tasks for the executor's unit tests, which run without a
 * database: nothing here opens a connection (the data source and the listen factory are null).
 */
final class UnitConfigs {

  private UnitConfigs() {}

  static WorkerConfig config(int concurrency, int batchSize, int prefetch, Duration backoffBase, Duration backoffCap) {
    WorkerSettings settings = new WorkerSettings("unit:1-test", List.of("default"), List.of(), concurrency, batchSize,
        prefetch, 1, Duration.ofMillis(10), Duration.ofSeconds(5), Duration.ofMinutes(5), Duration.ofSeconds(20),
        Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(1), backoffBase, backoffCap,
        Duration.ofSeconds(10), Duration.ofDays(1), Duration.ofDays(7), 0);
    return new WorkerConfig(settings, null, null, Map.of(), new ObjectMapper(), PgTaskMetrics.NOOP, PgTaskTracing.NONE);
  }

  static LocalTask task(long id, int attempt) {
    Claimed c = new Claimed(id, "unit-kind", "default", null, null, null, attempt, 25, Instant.EPOCH, Instant.EPOCH, null);
    return new LocalTask(c, "unit:1-test", System.nanoTime(), false);
  }
}
