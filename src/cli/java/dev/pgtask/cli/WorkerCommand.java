package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.migrate.Migrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code pgtask worker}: runs a worker process until SIGTERM or SIGINT, then shuts down gracefully
 * (stop claiming, release unstarted tasks, let running tasks finish until the shutdown timeout) and
 * exits 0.
 *
 * <p>It opens a HikariCP pool of {@code concurrency + 2} connections, each with
 * {@code application_name = "pgtask <worker id>"}, applies the migrations, and (with
 * {@code --demo-handlers}) creates the demo's table and registers {@link DemoHandlers}.
 */
@Command(name = "worker", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Run a worker until SIGTERM/SIGINT, then shut down gracefully and exit 0.")
public final class WorkerCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--queue", paramLabel = "NAME",
      description = "A queue to work (repeatable). Default: default.")
  List<String> queues = new ArrayList<>();

  @Option(names = "--concurrency", paramLabel = "N",
      description = "Tasks executed at once. Default: ${DEFAULT-VALUE}.")
  int concurrency = PgTaskWorker.DEFAULT_CONCURRENCY;

  @Option(names = "--batch-size", paramLabel = "N",
      description = "Most tasks claimed by one statement. Default: ${DEFAULT-VALUE}.")
  int batchSize = PgTaskWorker.DEFAULT_BATCH_SIZE;

  @Option(names = "--poll-interval", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Polling interval when no notification arrives (500ms, 8s, 2m, 1h, PT8S). Default: 5s.")
  Duration pollInterval;

  @Option(names = "--task-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Default task timeout. Default: 5m.")
  Duration taskTimeout;

  @Option(names = "--shutdown-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "How long running tasks get to finish after SIGTERM/SIGINT. Default: 20s (the worker then exits"
          + " within 25 s: inside Kubernetes' default 30-s grace period).")
  Duration shutdownTimeout;

  @Option(names = "--lease-duration", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Claim lease: a task of a worker that died is rescued after this plus the rescue interval."
          + " Default: 30s.")
  Duration leaseDuration;

  @Option(names = "--rescue-interval", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Interval of the maintenance passes (rescue, tenant repair). Default: 10s.")
  Duration rescueInterval;

  @Option(names = "--listen-url", paramLabel = "URL", defaultValue = "${env:PGTASK_LISTEN_URL}",
      description = "Where the LISTEN connection goes, when --url goes through a transaction pooler (PgBouncer"
          + " pool_mode=transaction): PostgreSQL itself, same forms as --url, user and password found as for --url."
          + " Default: PGTASK_LISTEN_URL, else the pool's settings.")
  String listenUrl;

  @Option(names = "--worker-id", paramLabel = "ID",
      description = "This worker's id, recorded on claimed tasks and in application_name. Default: host:pid-xxxx (xxxx random per process start).")
  String workerId;

  @Option(names = "--no-schedules",
      description = "Do not fire the cluster's schedules from this worker (by default every worker may; the database enqueues one task per fire).")
  boolean noSchedules;

  @Option(names = "--demo-handlers",
      description = "Register the demo kinds: " + DemoHandlers.NOOP + ", " + DemoHandlers.SLEEP + ", "
          + DemoHandlers.RECORD + ", " + DemoHandlers.FAIL + ", " + DemoHandlers.HALT + ".")
  boolean demoHandlers;

  @Override
  public Integer call() throws InterruptedException {
    Logger log = LoggerFactory.getLogger(WorkerCommand.class);
    ConnectionSettings settings = connection.settings();
    String id = workerId != null && !workerId.isBlank() ? workerId : defaultWorkerId();
    String applicationName = "pgtask " + id;
    if (!demoHandlers) {
      throw new CliException(ExitCodes.USAGE,
          "no handlers: the CLI worker runs only the demo kinds for now; add --demo-handlers"
              + " (your own handlers run in your application with PgTaskWorker)");
    }

    ConnectionSettings listen = listenSettings(settings);
    HikariDataSource pool = settings.openPool("pgtask-worker", concurrency + 2, applicationName);
    PgTaskWorker worker;
    try {
      worker = build(pool, id, listen);
      settings.checkReachable(applicationName);
      ConnectionSettings fitted = settings.forPooler(applicationName);
      if (fitted != settings) { // a transaction pooler: the pool (not started yet) and the worker with its URL
        settings = fitted;
        pool.close();
        pool = settings.openPool("pgtask-worker", concurrency + 2, applicationName);
        worker = build(pool, id, listen);
      }
      if (listen != null) {
        listen.checkReachable(applicationName);
      }
      Migrations.apply(pool);
      if (demoHandlers) {
        DemoHandlers.ensureSchema(pool);
      }
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }

    Shutdown shutdown = new Shutdown();
    shutdown.install();
    try {
      try {
        worker.start();
      } catch (RuntimeException e) {
        closeQuietly(worker, pool);
        throw new CliException(ExitCodes.FAILURE, "cannot start the worker: " + Main.describe(e), e);
      }
      log.info("worker {} started: queues {}, concurrency {}, batch size {}, poll interval {}, kinds {}, database {}",
          id, worker.settings().queues(), worker.settings().concurrency(), worker.settings().batchSize(),
          human(worker.settings().pollInterval()), worker.settings().kinds(), settings.describe());

      String signal = shutdown.awaitSignal();
      log.info("worker {} stopping ({}): no new claims; running tasks get up to {} to finish", id, signal,
          human(worker.settings().shutdownTimeout()));
      try {
        worker.close();
        log.info("worker {} stopped", id);
      } finally {
        pool.close();
      }
      return ExitCodes.OK;
    } finally {
      shutdown.done();
    }
  }

  /** The LISTEN connection's settings from --listen-url (user and password as for --url), or null. */
  private ConnectionSettings listenSettings(ConnectionSettings pool) {
    if (listenUrl == null || listenUrl.isBlank()) {
      return null;
    }
    return ConnectionSettings.resolve(listenUrl);
  }

  private PgTaskWorker build(HikariDataSource pool, String id, ConnectionSettings listen) {
    PgTaskWorker.Builder builder = PgTaskWorker.builder(pool)
        .workerId(id)
        .queues(queues.toArray(String[]::new))
        .concurrency(concurrency)
        .batchSize(batchSize);
    if (pollInterval != null) {
      builder.pollInterval(pollInterval);
    }
    if (taskTimeout != null) {
      builder.taskTimeout(taskTimeout);
    }
    if (shutdownTimeout != null) {
      builder.shutdownTimeout(shutdownTimeout);
    }
    if (leaseDuration != null) {
      builder.leaseDuration(leaseDuration);
    }
    if (rescueInterval != null) {
      builder.rescueInterval(rescueInterval);
    }
    if (listen != null) {
      builder.listenUrl(listen.jdbcUrl(), listen.user(), listen.password());
    }
    if (noSchedules) {
      builder.runSchedules(false);
    }
    if (demoHandlers) {
      DemoHandlers.register(builder);
    }
    try {
      return builder.build();
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage(), e);
    }
  }

  private static void closeQuietly(PgTaskWorker worker, HikariDataSource pool) {
    try {
      worker.close();
    } catch (RuntimeException ignored) {
      // already failing: report the first error
    } finally {
      pool.close();
    }
  }

  /** {@code host:pid-xxxx}, unique per process start like the library's default, known before building the worker. */
  static String defaultWorkerId() {
    return dev.pgtask.internal.WorkerIds.processId();
  }

  private static String human(Duration d) {
    if (d.toMillis() % 1000 != 0 || d.isZero()) {
      return d.toMillis() + "ms";
    }
    long s = d.toSeconds();
    if (s % 3600 == 0) {
      return s / 3600 + "h";
    }
    if (s % 60 == 0) {
      return s / 60 + "m";
    }
    return s + "s";
  }

  /**
   * Turns SIGTERM/SIGINT into a graceful stop on the main thread, so the process exits 0 after it.
   * Where the JVM does not let us handle signals (e.g. {@code -Xrs}), a shutdown hook does the same
   * and waits for the main thread to finish closing.
   */
  static final class Shutdown {
    private final CountDownLatch signalled = new CountDownLatch(1);
    private final CountDownLatch finished = new CountDownLatch(1);
    private final AtomicReference<String> signal = new AtomicReference<>();
    private final AtomicBoolean forced = new AtomicBoolean();

    void install() {
      boolean handled = true;
      for (String name : List.of("TERM", "INT")) {
        try {
          sun.misc.Signal.handle(new sun.misc.Signal(name), s -> onSignal("SIG" + s.getName()));
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
          handled = false;
        }
      }
      String hookReason = handled ? "JVM shutdown" : "signal";
      // also covers exits we did not ask for (other signals, -Xrs): close before the JVM goes away
      Thread hook = new Thread(() -> {
        signal.compareAndSet(null, hookReason);
        signalled.countDown();
        try {
          finished.await(5, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "pgtask-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
    }

    private void onSignal(String name) {
      if (!signal.compareAndSet(null, name) && forced.compareAndSet(false, true)) {
        // a second signal: the operator does not want to wait; the database rolls back what was running
        System.err.println("pgtask worker: " + name + " again, exiting now without waiting for running tasks");
        Runtime.getRuntime().halt(ExitCodes.FAILURE);
      }
      signalled.countDown();
    }

    String awaitSignal() throws InterruptedException {
      signalled.await();
      return signal.get();
    }

    void done() {
      finished.countDown();
    }
  }
}
