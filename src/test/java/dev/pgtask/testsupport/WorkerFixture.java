package dev.pgtask.testsupport;

import static org.awaitility.Awaitility.await;

import dev.pgtask.PgTaskWorker;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The workers of one test: a builder pre-set with the suite's defaults, every worker it started
 * closed after each test (whether the test passed or not), and the waits tests repeat.
 *
 * <pre>
 * &#64;RegisterExtension
 * static final QueueDatabase queue = new QueueDatabase("cancel", 8);
 * &#64;RegisterExtension
 * final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();
 *
 * PgTaskWorker w = workers.start(workers.builder().concurrency(2).handler("k", (ctx, p) -> { }));
 * workers.awaitState(id, "completed", Duration.ofSeconds(10));
 * </pre>
 *
 * <p>Registered on an instance field, it closes the workers after the class's own {@code @AfterEach}
 * methods (which may first release latches that running handlers wait on, as closing waits for
 * them up to the shutdown timeout), then runs the leak checks asked for. A class whose
 * {@code @AfterEach} closes the worker's pool or database calls {@link #closeAll()} first.
 *
 * <p>The worker id is the library's default ({@code host:pid-xxxx#n}, unique per worker of the JVM):
 * tests that look for a worker's sessions by {@code application_name} rely on it fitting 63 bytes.
 */
public final class WorkerFixture implements AfterEachCallback {

  /** The poll interval of {@link #builder()}: a poll is a fallback the tests do not wait for long. */
  public static final Duration POLL_INTERVAL = Duration.ofMillis(200);
  /** The shutdown timeout of {@link #builder()}: closing after a test never waits the default 20 s. */
  public static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

  private final Supplier<TestDatabase> database;
  private final Supplier<DataSource> pool;
  private final List<PgTaskWorker> started = new ArrayList<>();
  private boolean checkLocks;
  private int cleanConnections;

  private WorkerFixture(Supplier<TestDatabase> database, Supplier<DataSource> pool) {
    this.database = database;
    this.pool = pool;
  }

  /** Workers on the class's queue database: built on its pool, waits read through its own connections. */
  public static WorkerFixture on(QueueDatabase queue) {
    return new WorkerFixture(queue::database, queue::pool);
  }

  /**
   * Workers on a database and pool the test class makes itself (read when first used, so they may
   * be made in {@code @BeforeAll} or {@code @BeforeEach}).
   */
  public static WorkerFixture on(Supplier<TestDatabase> database, Supplier<DataSource> pool) {
    return new WorkerFixture(database, pool);
  }

  /** After closing the workers of a test: no session of the database holds an advisory lock. */
  public WorkerFixture checkingLeaks() {
    this.checkLocks = true;
    return this;
  }

  /**
   * After closing the workers of a test: no advisory lock, and {@code pooledConnections} connections
   * borrowed from the pool are clean ({@link Leaks#assertPoolConnectionsClean}).
   */
  public WorkerFixture checkingLeaks(int pooledConnections) {
    this.checkLocks = true;
    this.cleanConnections = pooledConnections;
    return this;
  }

  /** A builder on the pool with {@link #POLL_INTERVAL} and {@link #SHUTDOWN_TIMEOUT}; the test adds the rest. */
  public PgTaskWorker.Builder builder() {
    return builder(pool.get());
  }

  /** The same defaults on another data source (a pool of the test's own, a pooler's). */
  public PgTaskWorker.Builder builder(DataSource dataSource) {
    return PgTaskWorker.builder(dataSource).pollInterval(POLL_INTERVAL).shutdownTimeout(SHUTDOWN_TIMEOUT);
  }

  /** Builds and starts a worker that is closed after the test. */
  public PgTaskWorker start(PgTaskWorker.Builder builder) {
    return register(builder.build()).start();
  }

  /** A worker built by the test (e.g. started later, or never) that is closed after the test. */
  public PgTaskWorker register(PgTaskWorker worker) {
    synchronized (started) {
      started.add(worker);
    }
    return worker;
  }

  /** Closes every worker started so far, in the order they were started (closing twice is harmless). */
  public void closeAll() {
    List<PgTaskWorker> toClose;
    synchronized (started) {
      toClose = new ArrayList<>(started);
      started.clear();
    }
    RuntimeException failure = null;
    for (PgTaskWorker w : toClose) {
      try {
        w.close();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    closeAll();
    if (checkLocks) {
      Leaks.assertNoAdvisoryLocks(database.get());
    }
    if (cleanConnections > 0) {
      Leaks.assertPoolConnectionsClean(pool.get(), cleanConnections);
    }
  }

  // ---- the waits tests repeat (read on the database's own connections, not the workers' pool) ----

  /** The task's state as {@code pgtask.tasks} shows it (null when there is no such task). */
  public String state(long id) throws SQLException {
    return new Db(database.get()).text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  /** Waits until the task is in {@code state}. */
  public void awaitState(long id, String state, Duration atMost) {
    await("task " + id + " " + state).atMost(atMost).until(() -> state.equals(state(id)));
  }

  /** Waits until exactly {@code n} tasks are in {@code state}. */
  public void awaitTasks(String state, long n, Duration atMost) {
    Db sql = new Db(database.get());
    await(n + " tasks " + state).atMost(atMost)
        .until(() -> sql.count("SELECT count(*) FROM pgtask.tasks WHERE state = '" + state + "'") == n);
  }

  /**
   * Waits until the worker's {@code LISTEN}s are in place ({@link PgTaskWorker#listening()}): from
   * then on a notification reaches it. (Its LISTEN session showing idle in {@code pg_stat_activity}
   * says less: the session is idle, under the same name, before its LISTENs and between its polls.)
   */
  public void awaitListening(PgTaskWorker worker, Duration atMost) {
    await("worker " + worker.workerId() + " listens").atMost(atMost).until(worker::listening);
  }
}
