package dev.pgtask;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerLifecycle;
import dev.pgtask.internal.WorkerRuntime;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/**
 * A worker: wakes on {@code LISTEN} (falling back to polling), claims batches of tasks with
 * {@code FOR UPDATE SKIP LOCKED}, and runs each task in its own transaction, guarded by its
 * tenant's transaction-scoped advisory lock. Run one per process (or more, for separate queues).
 *
 * <pre>{@code
 * PgTaskWorker worker = PgTaskWorker.builder(dataSource)
 *     .queues("default")
 *     .concurrency(10)
 *     .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
 *       ctx.dsl().insertInto(...).execute(); // commits together with the task's completion
 *     })
 *     .build();
 * worker.start();
 * ...
 * worker.close(); // graceful: stop claiming, finish running tasks until the shutdown timeout
 * }</pre>
 */
public final class PgTaskWorker implements AutoCloseable {

  /** Default number of tasks executed at once by one worker. */
  public static final int DEFAULT_CONCURRENCY = 10;
  /** Default maximum number of tasks claimed by one statement. */
  public static final int DEFAULT_BATCH_SIZE = 50;
  /**
   * {@link Builder#prefetch} value for an adaptive prefetch: as many claimed tasks may wait locally
   * as the worker finished in the last 100 ms, at most 400.
   */
  public static final int PREFETCH_AUTO = -1;
  /** Default prefetch: adaptive ({@link #PREFETCH_AUTO}). */
  public static final int DEFAULT_PREFETCH = PREFETCH_AUTO;
  /**
   * Default most tasks committed together, for kinds that opted in with
   * {@link HandlerOptions#withSharedTransaction()} (short tasks only; see {@link Builder#commitBatch}).
   * Other kinds' tasks always run in a transaction of their own.
   */
  public static final int DEFAULT_COMMIT_BATCH_SIZE = 32;
  /** Default longest time a transaction carrying several tasks stays open. */
  public static final Duration DEFAULT_COMMIT_BATCH_TIME = Duration.ofMillis(10);
  /** Default polling interval, used when no notification arrives. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(5);
  /** Default task timeout. */
  public static final Duration DEFAULT_TASK_TIMEOUT = Duration.ofMinutes(5);
  /**
   * Default time running tasks get to finish on shutdown before they are interrupted: 20 s, so that
   * {@code close()} (which returns within the shutdown timeout plus 5 s) ends within Kubernetes'
   * default termination grace period of 30 s, before the SIGKILL.
   */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(20);
  /** Default claim lease: a claimed task whose worker died is rescued after this (plus the rescue interval). */
  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(30);
  /** Default interval of the maintenance passes (rescue, tenant repair). */
  public static final Duration DEFAULT_RESCUE_INTERVAL = Duration.ofSeconds(10);
  /** Default delay before a task whose tenant lock was busy is tried again (without spending an attempt). */
  public static final Duration DEFAULT_TENANT_DEFER_DELAY = Duration.ofSeconds(1);
  /** Default first retry delay; doubles per attempt. */
  public static final Duration DEFAULT_RETRY_BACKOFF_BASE = Duration.ofSeconds(1);
  /** Default longest retry delay. */
  public static final Duration DEFAULT_RETRY_BACKOFF_CAP = Duration.ofHours(1);
  /** Default interval of the LISTEN connection's health check. */
  public static final Duration DEFAULT_LISTENER_PING_INTERVAL = Duration.ofSeconds(10);
  /** Default time completed tasks stay in the table for operators before retention deletes them. */
  public static final Duration DEFAULT_COMPLETED_RETENTION = Duration.ofHours(24);
  /** Default time cancelled and discarded tasks stay in the table before retention deletes them. */
  public static final Duration DEFAULT_FAILED_RETENTION = Duration.ofDays(7);
  /**
   * The first key of pgtask's two-int advisory locks as shipped: {@code pg_try_advisory_xact_lock(namespace,
   * tenant_id)}. 0x70677461 is "pgta" in ASCII. Workers read the namespace from
   * {@code pgtask.settings.lock_namespace} (this value unless changed there), so the views find the
   * locks; maintenance passes use negative second keys.
   */
  public static final int DEFAULT_TENANT_LOCK_NAMESPACE = 0x70677461;


  /** Its start and stop, and the runtime they make: this class is a facade over it. */
  private final WorkerLifecycle lifecycle;

  private PgTaskWorker(WorkerLifecycle lifecycle) {
    this.lifecycle = lifecycle;
  }

  /**
   * A new instance of the Jackson mapper workers (and {@link PgTask}) use when none is given: the
   * modules found on the classpath ({@code findAndRegisterModules}), and strict about what a
   * handler's record needs, lenient about what it does not know:
   * <ul>
   *   <li>a field of the record missing from the payload is an error
   *       ({@code FAIL_ON_MISSING_CREATOR_PROPERTIES}), not a silent 0 or null;</li>
   *   <li>{@code null} for a primitive ({@code int}, {@code long}, {@code boolean}, ...) is an error
   *       ({@code FAIL_ON_NULL_FOR_PRIMITIVES}), not a silent 0;</li>
   *   <li>a property the record does not have is ignored ({@code FAIL_ON_UNKNOWN_PROPERTIES}
   *       off), so producers can add a field before every worker knows it: with both unknown and
   *       missing fields failing, no deployment order could add a field without discarding tasks.</li>
   * </ul>
   * A payload that does not fit is discarded with an error naming the field and the problem, never
   * its values. Its stream limits are exactly {@link PayloadLimits}, the ones enqueue enforces (the
   * same numbers as Jackson's defaults, set explicitly). To change any of this, pass your own mapper to {@link Builder#objectMapper}, e.g.
   * {@code defaultObjectMapper().disable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)}
   * to let a missing field become null or 0.
   */
  public static ObjectMapper defaultObjectMapper() {
    return new ObjectMapper(PayloadLimits.jsonFactory()).findAndRegisterModules()
        .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES,
            DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
  }

  /** A builder for a worker that executes tasks through {@code dataSource} (a connection pool). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Starts listening, claiming and executing; returns at once. Reads the lock namespace from
   * {@code pgtask.settings} unless one was configured, and registers the worker in
   * {@code pgtask.workers}.
   *
   * @throws PgTaskException when the database cannot be reached or is not migrated
   * @throws InvalidScheduleException when a schedule of the builder is invalid (the database checks
   *     it, cron expression included): every invalid one is named, none is declared, nothing started
   * @throws WorkerIdInUseException when a live worker holds this worker's id (nothing was started)
   * @throws IllegalStateException when already started
   */
  public PgTaskWorker start() {
    lifecycle.start();
    return this;
  }

  /**
   * Stops gracefully: stops claiming, releases claimed tasks that have not started, lets running
   * tasks finish until the shutdown timeout, then interrupts and rolls back the rest (they become
   * available again with their attempt given back). Returns within the shutdown timeout plus 5 s,
   * even when the database stops answering (task connections still busy 2.5 s after the
   * interruption are aborted). Idempotent.
   */
  @Override
  public void close() {
    lifecycle.close();
  }

  /** This worker's id, as recorded in the tasks it claims and in {@code application_name}. */
  public String workerId() {
    return lifecycle.config().workerId();
  }

  /** What this worker runs with: every setting as resolved by {@link Builder#build()}. */
  public WorkerSettings settings() {
    return lifecycle.config().settings();
  }

  /** Counters since start (all zero before {@link #start()}): for tests, logs and the command line. */
  public WorkerStatistics stats() {
    return lifecycle.stats();
  }

  static {
    WorkerAccess.install(new WorkerAccess.Accessor() {
      @Override
      public WorkerConfig config(PgTaskWorker worker) {
        return worker.lifecycle.config();
      }

      @Override
      public WorkerRuntime runtime(PgTaskWorker worker) {
        return worker.lifecycle.runtime();
      }
    });
  }

  /** Whether the worker is started and its LISTEN connection is listening right now. */
  public boolean listening() {
    return lifecycle.listening();
  }

  /**
   * When this worker's last claim statement returned (whether it found tasks or not), or its last
   * poll on the LISTEN connection (a read of whether a claim would find a task, counted while the
   * claim loop waits for work), or {@code null} before the first. A worker claims or polls at least
   * once per poll interval.
   */
  public java.time.Instant lastClaimAt() {
    return lifecycle.lastClaimAt();
  }

  /** Builds a {@link PgTaskWorker}; everything is validated at {@link #build()}. */
  public static final class Builder {
    private final WorkerDraft draft;

    private Builder(DataSource dataSource) {
      this.draft = new WorkerDraft(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /** Registers a handler for raw JSON payloads. */
    public Builder handler(String kind, TaskHandler<JsonNode> handler) {
      return handler(kind, JsonNode.class, handler, HandlerOptions.defaults());
    }

    /** Registers a handler whose payload is deserialized to {@code type} with Jackson. */
    public <T> Builder handler(String kind, Class<T> type, TaskHandler<T> handler) {
      return handler(kind, type, handler, HandlerOptions.defaults());
    }

    /** Registers a handler with its own options (e.g. timeout). */
    public <T> Builder handler(String kind, Class<T> type, TaskHandler<T> handler, HandlerOptions options) {
      draft.handler(kind, type, handler, options);
      return this;
    }

    /** The queues to claim from (default: {@value TaskOptions#DEFAULT_QUEUE}). */
    public Builder queues(String... queues) {
      draft.queues.clear();
      for (String q : queues) {
        draft.queues.add(Objects.requireNonNull(q, "queue"));
      }
      return this;
    }

    /** Tasks executed at once (default {@value #DEFAULT_CONCURRENCY}); the pool must have more connections. */
    public Builder concurrency(int concurrency) {
      draft.concurrency = concurrency;
      return this;
    }

    /** Maximum tasks per claim statement (default {@value #DEFAULT_BATCH_SIZE}). */
    public Builder batchSize(int batchSize) {
      draft.batchSize = batchSize;
      return this;
    }

    /**
     * Claimed tasks that may wait locally for a free executor (default {@link #PREFETCH_AUTO}: as many
     * as this worker finished in the last 100 ms, at most 400; 0: claim only what can start at once).
     * A backlog keeps executors busy without a claim round trip between tasks, and lets
     * {@link #commitBatch} group tasks; the waiting tasks' leases are kept alive by the heartbeat.
     * With several workers, prefetched tasks are not available to the others: the adaptive default
     * keeps that to about 100 ms of this worker's work.
     */
    public Builder prefetch(int prefetch) {
      draft.prefetch = prefetch;
      return this;
    }

    /**
     * Commit amortization for the kinds that opted in with {@link HandlerOptions#withSharedTransaction()}
     * (default 32 tasks, 10 ms; {@code maxTasks} 1: one transaction per task for every kind). Tasks of
     * other kinds always run in a transaction of their own. An executor that finds more claimed
     * tasks of sharing kinds waiting runs them in one transaction, each in its own savepoint, and
     * commits after {@code maxTasks} tasks, once the transaction has been open {@code maxTime}, or as
     * soon as no task is waiting. Only short tasks share a transaction: a task joins one when its
     * kind has run at least 4 times here, its recent runs took at most a quarter of {@code maxTime},
     * and it is expected to end before the transaction has been open {@code maxTime}; so a finished
     * task waits for its commit about {@code maxTime}, unless a handler runs far longer than its
     * kind's recent runs. A task that fails in a transaction carrying other tasks runs again alone
     * before its failure counts; a handler that changes a setting through the task's connection
     * ({@code SET}, {@code RESET}, {@code set_config}) ends its batch, and its kind runs alone from
     * then on. The price: a task's completion, its row locks and its tenant lock wait for the
     * batch's commit, and a lost connection re-runs the whole batch. Needs {@link #prefetch} to find
     * waiting tasks.
     */
    public Builder commitBatch(int maxTasks, Duration maxTime) {
      draft.commitBatchSize = maxTasks;
      draft.commitBatchTime = maxTime;
      return this;
    }

    /**
     * Polling interval when no notification arrives (default 5 s; jittered by up to 10%). While
     * the LISTEN connection listens, the poll runs there (a read of whether a claim would find
     * anything, with the heartbeat when it is due: one transaction); otherwise it is a claim
     * through the pool.
     */
    public Builder pollInterval(Duration pollInterval) {
      draft.pollInterval = pollInterval;
      return this;
    }

    /** Default task timeout (default 5 min); per kind with {@link HandlerOptions#withTimeout}. */
    public Builder taskTimeout(Duration taskTimeout) {
      draft.taskTimeout = taskTimeout;
      return this;
    }

    /** How long running tasks get to finish on {@link #close()} (default 20 s, {@link #DEFAULT_SHUTDOWN_TIMEOUT}). */
    public Builder shutdownTimeout(Duration shutdownTimeout) {
      draft.shutdownTimeout = shutdownTimeout;
      return this;
    }

    /** Claim lease (default 30 s): see docs/failure-modes.md for the rescue bound. */
    public Builder leaseDuration(Duration leaseDuration) {
      draft.leaseDuration = leaseDuration;
      return this;
    }

    /** Interval of the maintenance passes: rescue and tenant repair (default 10 s). */
    public Builder rescueInterval(Duration rescueInterval) {
      draft.rescueInterval = rescueInterval;
      return this;
    }

    /** Delay before a task whose tenant lock was busy becomes claimable again (default 1 s). */
    public Builder tenantDeferDelay(Duration tenantDeferDelay) {
      draft.tenantDeferDelay = tenantDeferDelay;
      return this;
    }

    /** Retry backoff: {@code base * 2^(attempt-1)}, capped, with ±10% jitter (defaults 1 s, 1 h). */
    public Builder retryBackoff(Duration base, Duration cap) {
      draft.retryBackoffBase = base;
      draft.retryBackoffCap = cap;
      return this;
    }

    /**
     * Health-check interval of the LISTEN connection (default 10 s): it sends {@code SELECT 1} when
     * this long passed without a statement or a notification on it. The worker's poll and its tick
     * run on that connection while it listens, so with the default poll interval no ping is sent.
     */
    public Builder listenerPingInterval(Duration interval) {
      draft.listenerPingInterval = interval;
      return this;
    }

    /**
     * How long finished tasks stay in the table (defaults: completed 24 h; cancelled and discarded
     * 7 days). Older ones are deleted in batches by the retention pass.
     */
    public Builder retention(Duration completed, Duration cancelledOrDiscarded) {
      draft.completedRetention = completed;
      draft.failedRetention = cancelledOrDiscarded;
      return this;
    }

    /**
     * First key of pgtask's advisory locks. Default: {@code pgtask.settings.lock_namespace}, read at
     * start ({@link #DEFAULT_TENANT_LOCK_NAMESPACE} unless changed). Set it here only together with
     * that setting, or the views will not find the locks.
     */
    public Builder tenantLockNamespace(int namespace) {
      draft.tenantLockNamespace = namespace;
      return this;
    }

    /**
     * How to open the dedicated LISTEN connection: a direct connection that belongs to no pool (a
     * pooled one, closed on shutdown or reconnect, would go back to its pool still listening).
     * Derived when not given: from a {@code HikariDataSource}'s JDBC URL and credentials (or the
     * data source it wraps), from pgjdbc's {@code PGSimpleDataSource} (unpooled), and from any
     * other pgjdbc data source such as {@code PGPoolingDataSource} by opening a direct connection
     * with its settings. For any other data source {@link #build()} fails and asks for this.
     */
    public Builder listenConnection(Callable<Connection> factory) {
      draft.listenConnection(factory);
      return this;
    }

    /**
     * The JDBC URL of the worker's LISTEN connection, opened with {@code DriverManager} (user and
     * password in the URL): a direct connection to PostgreSQL when the pool goes through a
     * transaction pooler such as PgBouncer, where LISTEN cannot work (see docs/deployment.md).
     * Instead of {@link #listenConnection}; the worker checks at start that a notification
     * arrives on it, and says so when none does.
     */
    public Builder listenUrl(String jdbcUrl) {
      return listenUrl(jdbcUrl, null, null);
    }

    /** As {@link #listenUrl(String)}, logging in as {@code user} with {@code password} (either may be null). */
    public Builder listenUrl(String jdbcUrl, String user, String password) {
      draft.listenUrl(jdbcUrl, user, password);
      return this;
    }

    /**
     * This worker's id (default {@code host:pid-xxxx}, {@code xxxx} random per process start, plus
     * {@code #n} for the n-th worker of a JVM). {@link #start()} throws {@link WorkerIdInUseException}
     * when a live worker holds the id.
     */
    public Builder workerId(String workerId) {
      draft.workerId = workerId;
      return this;
    }

    /**
     * The Jackson mapper for payloads (default: {@link PgTaskWorker#defaultObjectMapper()}: a missing
     * field or a null for a primitive is an error that discards the task naming the field; unknown
     * properties are ignored). A mapper given here is used as it is: build it on
     * {@link PayloadLimits#jsonFactory()}, or a payload enqueue accepted may break its own limits.
     */
    public Builder objectMapper(ObjectMapper objectMapper) {
      draft.objectMapper = Objects.requireNonNull(objectMapper, "objectMapper");
      return this;
    }

    /** Where to report metrics (default: nowhere; see {@code dev.pgtask.micrometer.MicrometerMetrics}). */
    public Builder metrics(PgTaskMetrics metrics) {
      draft.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Where to report each execution as a span (default: nowhere; see
     * {@code dev.pgtask.otel.OpenTelemetryTracing}). The span's parent is the trace context stored
     * with the task at enqueue, on its first attempt.
     */
    public Builder tracing(PgTaskTracing tracing) {
      draft.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /**
     * Declares {@code schedule} when the worker starts (an idempotent upsert by name, see
     * {@link PgTask#schedule(Schedule)}); a later one of the same name replaces an earlier one. The
     * database checks the schedules, cron expressions included, at {@link PgTaskWorker#start()}: all
     * are declared in one transaction, or none, and {@code start()} names every invalid one.
     */
    public Builder schedule(Schedule schedule) {
      Objects.requireNonNull(schedule, "schedule");
      draft.schedules.put(schedule.name(), schedule);
      return this;
    }

    /**
     * Whether this worker fires the cluster's schedules (default true). Any number of workers may:
     * the database enqueues one task per fire however many do. Turn it off for workers that should
     * only run tasks; keep it on in at least one worker, or no schedule fires.
     */
    public Builder runSchedules(boolean run) {
      draft.runSchedules = run;
      return this;
    }

    /**
     * Validates everything and builds the worker (not started).
     *
     * @throws IllegalArgumentException naming every invalid setting at once
     */
    public PgTaskWorker build() {
      return new PgTaskWorker(new WorkerLifecycle(draft.resolve(), List.copyOf(draft.schedules.values()),
          draft.runSchedules));
    }
  }
}
