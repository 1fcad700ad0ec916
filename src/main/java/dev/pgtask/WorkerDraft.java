package dev.pgtask;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.ListenConnections;
import dev.pgtask.internal.Secrets;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerIds;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/**
 * What a {@link PgTaskWorker.Builder} has been told, before {@code build()}: every setting with its
 * default, the check of all of them together (every error reported at once, in one
 * {@link IllegalArgumentException}), and the {@link WorkerConfig} they resolve to. The builder
 * writes it; nothing else does. Not thread-safe (a builder is used by one thread).
 */
final class WorkerDraft {

  final DataSource dataSource;
  final Map<String, HandlerEntry<?>> handlers = new LinkedHashMap<>();
  final LinkedHashSet<String> queues = new LinkedHashSet<>();
  Callable<Connection> listenConnectionFactory;
  String listenUrl;
  int concurrency = PgTaskWorker.DEFAULT_CONCURRENCY;
  int batchSize = PgTaskWorker.DEFAULT_BATCH_SIZE;
  int prefetch = PgTaskWorker.DEFAULT_PREFETCH;
  int commitBatchSize = PgTaskWorker.DEFAULT_COMMIT_BATCH_SIZE;
  Duration commitBatchTime = PgTaskWorker.DEFAULT_COMMIT_BATCH_TIME;
  Duration pollInterval = PgTaskWorker.DEFAULT_POLL_INTERVAL;
  Duration taskTimeout = PgTaskWorker.DEFAULT_TASK_TIMEOUT;
  Duration shutdownTimeout = PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT;
  Duration leaseDuration = PgTaskWorker.DEFAULT_LEASE_DURATION;
  Duration rescueInterval = PgTaskWorker.DEFAULT_RESCUE_INTERVAL;
  Duration tenantDeferDelay = PgTaskWorker.DEFAULT_TENANT_DEFER_DELAY;
  Duration retryBackoffBase = PgTaskWorker.DEFAULT_RETRY_BACKOFF_BASE;
  Duration retryBackoffCap = PgTaskWorker.DEFAULT_RETRY_BACKOFF_CAP;
  Duration listenerPingInterval = PgTaskWorker.DEFAULT_LISTENER_PING_INTERVAL;
  Duration completedRetention = PgTaskWorker.DEFAULT_COMPLETED_RETENTION;
  Duration failedRetention = PgTaskWorker.DEFAULT_FAILED_RETENTION;
  Integer tenantLockNamespace;
  String workerId;
  ObjectMapper objectMapper;
  PgTaskMetrics metrics = PgTaskMetrics.NOOP;
  PgTaskTracing tracing = PgTaskTracing.NONE;
  final Map<String, Schedule> schedules = new LinkedHashMap<>();
  boolean runSchedules = true;

  WorkerDraft(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** A handler for {@code kind}; a second one for the same kind is refused at once. */
  <T> void handler(String kind, Class<T> type, TaskHandler<T> handler, HandlerOptions options) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(handler, "handler");
    Objects.requireNonNull(options, "options");
    if (handlers.containsKey(kind)) {
      throw new IllegalArgumentException("a handler for kind '" + kind + "' is already registered");
    }
    handlers.put(kind, new HandlerEntry<>(kind, type, handler, options));
  }

  /** The LISTEN connection's factory; the last of this and {@link #listenUrl} wins. */
  void listenConnection(Callable<Connection> factory) {
    listenConnectionFactory = Objects.requireNonNull(factory, "factory");
    listenUrl = null;
  }

  /** The LISTEN connection's URL and login; the last of this and {@link #listenConnection} wins. */
  void listenUrl(String jdbcUrl, String user, String password) {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    listenUrl = jdbcUrl;
    listenConnectionFactory = ListenConnections.forUrl(jdbcUrl, user, password);
  }

  /**
   * Checks every setting and resolves them.
   *
   * @throws IllegalArgumentException naming every error found, each once
   */
  WorkerConfig resolve() {
    List<String> errors = new ArrayList<>();
    if (handlers.isEmpty()) {
      errors.add("no handlers registered");
    }
    if (concurrency < 1 || concurrency > 1000) {
      errors.add("concurrency must be 1..1000, was " + concurrency);
    }
    if (batchSize < 1 || batchSize > 10_000) {
      errors.add("batchSize must be 1..10000, was " + batchSize);
    }
    if (prefetch < PgTaskWorker.PREFETCH_AUTO || prefetch > 10_000) {
      errors.add("prefetch must be 0..10000, or -1 (PREFETCH_AUTO), was " + prefetch);
    }
    if (commitBatchSize < 1 || commitBatchSize > 60) {
      errors.add("commitBatch maxTasks must be 1..60 (savepoints per transaction stay under PostgreSQL's"
          + " 64 cached subtransactions), was " + commitBatchSize);
    }
    requirePositive(errors, "commitBatch maxTime", commitBatchTime);
    requirePositive(errors, "pollInterval", pollInterval);
    requirePositive(errors, "taskTimeout", taskTimeout);
    requireNotNegative(errors, "shutdownTimeout", shutdownTimeout);
    requirePositive(errors, "leaseDuration", leaseDuration);
    requirePositive(errors, "rescueInterval", rescueInterval);
    requireNotNegative(errors, "tenantDeferDelay", tenantDeferDelay);
    requireNotNegative(errors, "retryBackoff base", retryBackoffBase);
    requirePositive(errors, "retryBackoff cap", retryBackoffCap);
    requirePositive(errors, "listenerPingInterval", listenerPingInterval);
    requireNotNegative(errors, "completed retention", completedRetention);
    requireNotNegative(errors, "failed retention", failedRetention);
    List<String> queueList = new ArrayList<>(queues.isEmpty() ? List.of(TaskOptions.DEFAULT_QUEUE) : queues);
    for (String q : queueList) {
      if (q.isEmpty() || q.length() > 128 || !q.matches("[A-Za-z0-9_.:-]+")) {
        errors.add("queue '" + q + "' is invalid: 1 to 128 letters, digits or _ . : -");
      }
    }
    for (String kind : handlers.keySet()) {
      if (kind.isEmpty() || kind.length() > 255) {
        errors.add("kind '" + kind + "' is invalid: 1 to 255 characters");
      }
    }
    checkPoolSize(errors);
    if (listenUrl != null && !listenUrl.startsWith("jdbc:postgresql:")) {
      errors.add("listenUrl must be a pgjdbc URL (jdbc:postgresql://host:port/database), was '"
          + Secrets.redact(listenUrl) + "'");
    }
    Callable<Connection> listen = listenConnectionFactory != null ? listenConnectionFactory
        : ListenConnections.derive(dataSource);
    if (listen == null) {
      errors.add("cannot tell whether a " + dataSource.getClass().getName() + " is pooled, and the LISTEN"
          + " connection must not come from a pool (it would go back still listening): give"
          + " listenConnection(...), e.g. () -> DriverManager.getConnection(url, user, password)");
    }
    if (!errors.isEmpty()) {
      throw new IllegalArgumentException("pgtask worker: " + String.join("; ", errors));
    }
    WorkerSettings settings = new WorkerSettings(workerId != null ? workerId : WorkerIds.nextDefault(),
        queueList, List.copyOf(handlers.keySet()), concurrency, batchSize, prefetch, commitBatchSize, commitBatchTime,
        pollInterval, taskTimeout, shutdownTimeout, leaseDuration, rescueInterval, tenantDeferDelay, retryBackoffBase,
        retryBackoffCap, listenerPingInterval, completedRetention, failedRetention, tenantLockNamespace);
    return new WorkerConfig(settings, dataSource, listen, Map.copyOf(handlers),
        objectMapper != null ? objectMapper : PgTaskWorker.defaultObjectMapper(), metrics, tracing);
  }

  /** The pool must have a connection per executing task and one for claims and maintenance. */
  private void checkPoolSize(List<String> errors) {
    int poolSize = dataSource instanceof HikariDataSource h ? h.getMaximumPoolSize() : pgPoolingMaxConnections(dataSource);
    if (poolSize > 0 && poolSize < concurrency + 1) {
      errors.add("the connection pool has " + poolSize + " connections; concurrency " + concurrency
          + " needs at least " + (concurrency + 1) + " (one per executing task, one for claims and maintenance)");
    }
  }

  private static void requirePositive(List<String> errors, String name, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      errors.add(name + " must be positive, was " + d);
    }
  }

  private static void requireNotNegative(List<String> errors, String name, Duration d) {
    if (d == null || d.isNegative()) {
      errors.add(name + " must not be negative, was " + d);
    }
  }

  /** The size limit of a pgjdbc {@code PGPoolingDataSource} (0: unlimited), or 0 for any other data source. */
  @SuppressWarnings("deprecation")
  private static int pgPoolingMaxConnections(DataSource ds) {
    return ds instanceof org.postgresql.ds.PGPoolingDataSource p ? p.getMaxConnections() : 0;
  }
}
