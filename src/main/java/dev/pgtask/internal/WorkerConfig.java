package dev.pgtask.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/** Everything a worker runs with, validated and resolved by {@code PgTaskWorker.Builder.build()}. */
public record WorkerConfig(
    String workerId,
    DataSource dataSource,
    Callable<Connection> listenConnectionFactory,
    List<String> queues,
    Map<String, HandlerEntry<?>> handlers,
    int concurrency,
    int batchSize,
    Duration pollInterval,
    Duration taskTimeout,
    Duration shutdownTimeout,
    Duration leaseDuration,
    Duration rescueInterval,
    Duration tenantDeferDelay,
    Duration retryBackoffBase,
    Duration retryBackoffCap,
    Duration listenerPingInterval,
    Duration completedRetention,
    Duration failedRetention,
    int tenantLockNamespace,
    ObjectMapper objectMapper) {

  /** The registered kinds, for the claim's kind filter. */
  public List<String> kinds() {
    return List.copyOf(handlers.keySet());
  }
}
