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
 * Worker configurations and claimed tasks for the unit tests of the executor and of the parts that
 * see its tasks (outcomes, leases), which run without a database: nothing here opens a connection
 * (the data source and the listen factory are null).
 */
public final class UnitConfigs {

  private UnitConfigs() {}

  public static WorkerConfig config(int concurrency, int batchSize, int prefetch, Duration backoffBase, Duration backoffCap) {
    WorkerSettings settings = new WorkerSettings("unit:1-test", List.of("default"), List.of(), concurrency, batchSize,
        prefetch, 1, Duration.ofMillis(10), Duration.ofSeconds(5), Duration.ofMinutes(5), Duration.ofSeconds(20),
        Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(1), backoffBase, backoffCap,
        Duration.ofSeconds(10), Duration.ofDays(1), Duration.ofDays(7), 0);
    return new WorkerConfig(settings, null, null, Map.of(), new ObjectMapper(), PgTaskMetrics.NOOP, PgTaskTracing.NONE);
  }

  public static LocalTask task(long id, int attempt) {
    Claimed c = new Claimed(id, "unit-kind", "default", null, null, null, attempt, 25, Instant.EPOCH, Instant.EPOCH, null);
    return new LocalTask(c, "unit:1-test", System.nanoTime(), false);
  }

  /** A transactional task claimed by {@code workerId} at {@code claimNanos}, as a claim's hand-over makes it (not registered). */
  public static LocalTask claimed(Claimed c, String workerId, long claimNanos) {
    return new LocalTask(c, workerId, claimNanos, false);
  }
}
