package dev.pgtask.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskMetrics;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testing.PgTaskTester;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The auto-configured worker, started and stopped with the application context.
 *
 * <ul>
 *   <li>Starts when the context has been refreshed (every bean, handlers included, exists), in the
 *       last lifecycle phase, so it stops first: before the web server and before any bean it uses
 *       is destroyed.</li>
 *   <li>Stops within {@code pgtask.worker.shutdown-timeout}: claims stop, claimed tasks that have
 *       not started are released, running tasks get that long to finish, the rest are interrupted,
 *       rolled back and released. Startup fails when that timeout does not fit in Spring's
 *       {@code spring.lifecycle.timeout-per-shutdown-phase} with 5 s to spare.</li>
 *   <li>Keeps the JVM alive while it runs (one non-daemon thread that only waits), so an application
 *       that is only a worker does not exit when its {@code main} returns.</li>
 *   <li>Runs on its own pool ({@code pgtask.worker.pool-size}, default concurrency + 1) built from the
 *       application's HikariCP settings or {@code spring.datasource.*}, unless
 *       {@code pgtask.worker.own-pool=false}.</li>
 * </ul>
 */
public final class PgTaskWorkerLifecycle implements SmartLifecycle {

  private static final Logger log = LoggerFactory.getLogger(PgTaskWorkerLifecycle.class);

  /** Time a stop keeps in hand inside Spring's shutdown phase, for releasing tasks and closing the pool. */
  static final Duration STOP_MARGIN = Duration.ofSeconds(5);

  private final PgTaskProperties.Worker settings;
  private final DataSource appDataSource;
  private final ConnectionSettings datasourceSettings;
  private final Map<String, PgTaskHandler<?>> handlers;
  private final PgTaskMetrics metrics;
  private final Duration shutdownPhaseTimeout;
  private final Object lock = new Object();
  private PgTaskWorker worker;
  private HikariDataSource ownPool;
  private Thread keepAlive;
  private CountDownLatch stopped;
  private List<String> kinds = List.of();

  PgTaskWorkerLifecycle(PgTaskProperties.Worker settings, DataSource appDataSource,
      ConnectionSettings datasourceSettings, Map<String, PgTaskHandler<?>> handlers, PgTaskMetrics metrics,
      Duration shutdownPhaseTimeout) {
    this.settings = settings;
    this.appDataSource = appDataSource;
    this.datasourceSettings = datasourceSettings;
    this.handlers = handlers;
    this.metrics = metrics;
    this.shutdownPhaseTimeout = shutdownPhaseTimeout;
  }

  /**
   * {@code spring.datasource.url}, {@code username} and {@code password} as the application's
   * environment gives them (each may be {@code null}): read as plain properties rather than through
   * Boot's {@code DataSourceProperties}, which Boot 4 moved to another module and package.
   */
  record ConnectionSettings(String url, String username, String password) {}

  /** The running worker, or {@code null} when stopped (or not started: no handler beans). */
  public PgTaskWorker worker() {
    synchronized (lock) {
      return worker;
    }
  }

  /** The kinds of the handler beans this worker runs. */
  public List<String> kinds() {
    synchronized (lock) {
      return kinds;
    }
  }

  @Override
  public void start() {
    synchronized (lock) {
      if (worker != null) {
        return;
      }
      if (handlers.isEmpty()) {
        log.info("pgtask: no PgTaskHandler beans in the application context: the worker does not start"
            + " (this application only enqueues; set pgtask.worker.enabled=false to say so)");
        return;
      }
      Duration shutdownTimeout = settings.getShutdownTimeout();
      if (shutdownTimeout != null && shutdownTimeout.plus(STOP_MARGIN).compareTo(shutdownPhaseTimeout) > 0) {
        throw new IllegalStateException("pgtask: pgtask.worker.shutdown-timeout (" + shutdownTimeout
            + ") leaves less than " + STOP_MARGIN.toSeconds() + " s of spring.lifecycle.timeout-per-shutdown-phase ("
            + shutdownPhaseTimeout + ") to release running tasks: lower pgtask.worker.shutdown-timeout to at most "
            + shutdownPhaseTimeout.minus(STOP_MARGIN) + " or raise spring.lifecycle.timeout-per-shutdown-phase");
      }
      DataSource workerDataSource = settings.isOwnPool() ? ownPool() : appDataSource;
      PgTaskWorker built;
      try {
        built = build(workerDataSource);
      } catch (RuntimeException e) {
        closeOwnPool();
        throw e;
      }
      try {
        built.start();
      } catch (RuntimeException e) {
        closeOwnPool();
        throw e;
      }
      worker = built;
      stopped = new CountDownLatch(1);
      CountDownLatch latch = stopped;
      keepAlive = new Thread(() -> {
        try {
          latch.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "pgtask-keep-alive");
      keepAlive.setDaemon(false);
      keepAlive.start();
    }
  }

  /**
   * A tester that runs this application's due tasks (or one task) in the calling thread, through a
   * worker built as this one is (queues, kinds, retry backoff, timeouts, metrics) whose handlers are
   * the handler beans with the same transaction binding: their JdbcTemplate, jOOQ and
   * {@code @Transactional} code joins the task's transaction and rolls back with a failed attempt.
   * The tester's worker is never started; it runs on the application's {@code DataSource}, one task
   * at a time. For tests, with {@code pgtask.worker.auto-startup=false} (docs/testing.md).
   *
   * @throws IllegalStateException when this worker is running: it would claim the same tasks in the
   *     background
   */
  public PgTaskTester tester() {
    synchronized (lock) {
      if (worker != null) {
        throw new IllegalStateException("pgtask: the application's worker is running and would claim the tester's"
            + " tasks in the background: set pgtask.worker.auto-startup=false in the test's properties");
      }
      if (handlers.isEmpty()) {
        throw new IllegalStateException("pgtask: no PgTaskHandler beans in the application context: nothing to run");
      }
      // one task at a time in the calling thread: concurrency 1, so the application's pool suffices
      return PgTaskTester.of(builder(appDataSource).concurrency(1).build());
    }
  }

  private PgTaskWorker build(DataSource workerDataSource) {
    PgTaskWorker.Builder b = builder(workerDataSource);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      String hint = settings.isOwnPool()
          ? " (the worker's own pool: pgtask.worker.pool-size, pgtask.worker.concurrency)"
          : " (pgtask.worker.own-pool=false: the application's pool, spring.datasource.hikari.maximum-pool-size,"
              + " must have more connections than pgtask.worker.concurrency; or remove pgtask.worker.own-pool=false"
              + " to give the worker its own pool)";
      throw new IllegalStateException(e.getMessage() + hint);
    }
  }

  /** The worker's builder with every setting and the handler beans, bound to the application's transactions. */
  private PgTaskWorker.Builder builder(DataSource workerDataSource) {
    PgTaskWorker.Builder b = PgTaskWorker.builder(workerDataSource)
        .queues(settings.getQueues().toArray(String[]::new))
        .concurrency(settings.getConcurrency())
        .batchSize(settings.getBatchSize())
        .prefetch(settings.getPrefetch())
        .commitBatch(settings.getCommitBatchSize(), settings.getCommitBatchTime())
        .pollInterval(settings.getPollInterval())
        .taskTimeout(settings.getTaskTimeout())
        .shutdownTimeout(settings.getShutdownTimeout())
        .leaseDuration(settings.getLeaseDuration())
        .rescueInterval(settings.getRescueInterval())
        .tenantDeferDelay(settings.getTenantDeferDelay())
        .retryBackoff(settings.getRetryBackoffBase(), settings.getRetryBackoffCap())
        .listenerPingInterval(settings.getListen().getPingInterval())
        .retention(settings.getCompletedRetention(), settings.getFailedRetention())
        .metrics(metrics);
    if (settings.getId() != null && !settings.getId().isBlank()) {
      b.workerId(settings.getId());
    }
    PgTaskProperties.Listen listen = settings.getListen();
    if (listen.getUrl() != null && !listen.getUrl().isBlank()) {
      String user = listen.getUsername() != null ? listen.getUsername() : poolUser(workerDataSource);
      String password = listen.getPassword() != null ? listen.getPassword() : poolPassword(workerDataSource);
      String url = listen.getUrl();
      b.listenConnection(() -> DriverManager.getConnection(url, user, password));
    }
    kinds = PgTaskHandlers.register(b, handlers, appDataSource);
    return b;
  }

  /** The worker's own HikariCP pool, from the application pool's settings or spring.datasource.*. */
  private HikariDataSource ownPool() {
    HikariConfig config = new HikariConfig();
    HikariDataSource appHikari = unwrapHikari(appDataSource);
    if (appHikari != null) {
      appHikari.copyStateTo(config);
    } else if (datasourceSettings != null && datasourceSettings.url() != null) {
      config.setJdbcUrl(datasourceSettings.url());
      config.setUsername(datasourceSettings.username());
      config.setPassword(datasourceSettings.password());
    } else {
      throw new IllegalStateException("pgtask: the worker's own pool copies the settings of the application's"
          + " HikariDataSource or spring.datasource.url, and there is neither (the DataSource is a "
          + appDataSource.getClass().getName() + "): set spring.datasource.url, or pgtask.worker.own-pool=false"
          + " to run the worker on the application's DataSource");
    }
    int size = settings.getPoolSize() != null ? settings.getPoolSize() : settings.getConcurrency() + 1;
    config.setMaximumPoolSize(Math.max(1, size));
    config.setMinimumIdle(Math.min(2, Math.max(1, size)));
    config.setPoolName("pgtask-worker");
    config.setRegisterMbeans(false);
    // pgtask owns this pool: behind a transaction pooler its connections name no statement
    dev.pgtask.internal.pooler.UnnamedStatements.fit(config);
    ownPool = new HikariDataSource(config);
    return ownPool;
  }

  private static HikariDataSource unwrapHikari(DataSource ds) {
    if (ds instanceof HikariDataSource h) {
      return h;
    }
    try {
      return ds.isWrapperFor(HikariDataSource.class) ? ds.unwrap(HikariDataSource.class) : null;
    } catch (SQLException e) {
      return null;
    }
  }

  private String poolUser(DataSource ds) {
    HikariDataSource h = unwrapHikari(ds);
    return h != null ? h.getUsername() : datasourceSettings != null ? datasourceSettings.username() : null;
  }

  private String poolPassword(DataSource ds) {
    HikariDataSource h = unwrapHikari(ds);
    return h != null ? h.getPassword() : datasourceSettings != null ? datasourceSettings.password() : null;
  }

  @Override
  public void stop(Runnable callback) {
    Thread t = new Thread(() -> {
      try {
        stop();
      } finally {
        callback.run();
      }
    }, "pgtask-stop");
    t.start();
  }

  @Override
  public void stop() {
    PgTaskWorker w;
    synchronized (lock) {
      w = worker;
      worker = null;
    }
    if (w == null) {
      return;
    }
    try {
      w.close();
    } finally {
      synchronized (lock) {
        closeOwnPool();
        if (stopped != null) {
          stopped.countDown();
        }
      }
    }
  }

  private void closeOwnPool() {
    if (ownPool != null) {
      ownPool.close();
      ownPool = null;
    }
  }

  @Override
  public boolean isRunning() {
    synchronized (lock) {
      return worker != null;
    }
  }

  /** {@code pgtask.worker.auto-startup}: false leaves the worker stopped (tests use {@link #tester()}). */
  @Override
  public boolean isAutoStartup() {
    return settings.isAutoStartup();
  }

  /** The last phase: starts after every other lifecycle bean, stops before them. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE;
  }
}
