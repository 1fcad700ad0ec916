package dev.pgtask.internal;

import dev.pgtask.internal.executor.Executor;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.internal.notifier.Listener;
import dev.pgtask.internal.claim.Producer;
import dev.pgtask.internal.schedule.Scheduler;
import dev.pgtask.PgTaskException;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.WorkerQueries;
import dev.pgtask.internal.wakeup.Wakeups;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wires the listener, wake-ups, producer, executor and maintenance of one worker, and runs its lifecycle. */
public final class WorkerRuntime {

  private static final Logger log = LoggerFactory.getLogger(WorkerRuntime.class);

  /** Reads pgtask.settings.lock_namespace; fails clearly when the schema is missing. */
  public static int readLockNamespace(javax.sql.DataSource dataSource) {
    try {
      return WorkerQueries.readLockNamespace(Sql.using(dataSource));
    } catch (RuntimeException e) {
      throw new PgTaskException("pgtask: cannot start the worker: reading pgtask.settings failed ("
          + Sql.rootMessage(e) + "); is the database reachable and migrated (Migrations.apply)?", e);
    }
  }

  private final WorkerConfig config;
  private final WorkerStats stats = new WorkerStats();
  private final Executor executor;
  private final Producer producer;
  private final Wakeups wakeups;
  private final Listener listener;
  private final Maintenance maintenance;
  private final Scheduler scheduler;
  private volatile boolean runScheduler = true;
  private final Object lifecycle = new Object();
  private boolean started;
  private boolean stopped;

  public WorkerRuntime(WorkerConfig config) {
    this.config = config;
    this.executor = new Executor(config, stats);
    this.wakeups = new Wakeups(config);
    this.producer = new Producer(config, stats, executor, wakeups);
    executor.selfWake(wakeups.handOff());
    this.scheduler = new Scheduler(config.dataSource(), config.workerId());
    wakeups.receiver().onCancel(executor::hint);
    wakeups.receiver().onSchedulesChanged(scheduler::changed);
    // a reconnect: schedule changes notified while the listener was away are lost, read them again
    this.listener = new Listener(config, wakeups::wake, wakeups.receiver()::received, () -> {
      scheduler.changed();
      executor.checkHeldNow();
    });
    executor.listeningSince(listener::listeningSince);
    executor.onDueIn(wakeups.timer()::dueIn);
    this.maintenance = new Maintenance(config, stats, wakeups::wake, this::register);
    // an idle worker's poll and tick run on the listener's session while it listens
    listener.sessionWork(producer.sessionPoll());
    listener.sessionWork(maintenance.sessionTick());
    // and the leases of claimed tasks that wait: kept while the worker lives, whatever its pool can give
    listener.sessionWork(executor.sessionRenewal());
    producer.listening(() -> listener.listeningSince() != 0);
  }

  public void start() {
    synchronized (lifecycle) {
      if (started) {
        throw new IllegalStateException("pgtask worker " + config.workerId() + " was already started");
      }
      // first: a worker whose id a live worker holds starts nothing (and its close() touches
      // nothing of the other's)
      register();
      started = true;
      executor.startAll();
      Thread capacityCheck = dev.pgtask.internal.pooler.Poolers.warnWhenShort(config.dataSource(), config.concurrency(),
          config.workerId());
      listener.start();
      awaitListening();
      try {
        capacityCheck.join(dev.pgtask.internal.pooler.Poolers.CAPACITY_WAIT_MILLIS * 2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      armUpcomingDue();
      producer.start();
      // also before the listener has connected: a cancellation it could not hear then is read
      // from pgtask.cancel_request when it does
      wakeups.registerLocal();
      maintenance.start();
      if (runScheduler) {
        scheduler.start();
      }
      log.info("pgtask worker {} started: queues {}, concurrency {}, kinds {}", config.workerId(),
          config.queues(), config.concurrency(), config.kinds());
    }
  }

  /**
   * Waits, for at most {@value #LISTEN_WAIT_MILLIS} ms, for the listener to listen before the
   * first claim: a task claimed while it listens may start without a check of its own (see
   * {@code Executor}), so a worker that claimed first would check each of its first tasks. A
   * listener that cannot connect does not hold the worker up any longer: it works by polling and
   * checks each plain task before it starts.
   */
  private void awaitListening() {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(LISTEN_WAIT_MILLIS);
    while (listener.listeningSince() == 0 && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static final long LISTEN_WAIT_MILLIS = 2_000;

  /** The earliest due times a starting worker reads (beyond them, the poll finds the tasks). */
  static final int UPCOMING_DUE_READ = 100;
  /** How long the start's read of those due times waits for a lock on the task table. */
  static final Duration UPCOMING_DUE_LOCK_WAIT = Duration.ofMillis(200);

  /**
   * Arms the due timer with the earliest due times of this worker's tasks that are not
   * due yet: their enqueues' notifications were sent before this worker listened, so without this a
   * task delayed to a moment soon after a start (a deploy) would wait for the first poll. After the
   * listener listens (a task enqueued from then on is heard of), before the first claim. Bounded on
   * the server, with a short lock wait: the start must not wait on a lock someone holds on the task
   * table (the first poll finds the tasks then).
   */
  private void armUpcomingDue() {
    try {
      java.util.List<Duration> due = config.transactionBounds().withLock(UPCOMING_DUE_LOCK_WAIT).inTransaction(
          config.dataSource(), tx -> dev.pgtask.internal.sql.IdleQueries.upcomingDue(tx, config.queues(), config.kinds(),
              UPCOMING_DUE_READ));
      for (java.time.Duration d : due) {
        wakeups.timer().dueIn(d);
      }
    } catch (RuntimeException e) {
      log.warn("pgtask: reading the due times of delayed tasks at start failed ({}); the poll finds them",
          e.getMessage());
    }
  }

  public void shutdown() {
    synchronized (lifecycle) {
      if (!started || stopped) {
        return;
      }
      stopped = true;
      log.info("pgtask worker {} stopping: {} task(s) in flight", config.workerId(), executor.inFlight());
      // one deadline for the whole stop (shutdownTimeout): a claim stuck in flight (its tasks are put
      // back when it returns) or a starved pool must not add to it
      long deadline = System.nanoTime() + config.shutdownTimeout().toNanos();
      wakeups.unregisterLocal();
      scheduler.stop(upTo(Duration.ofSeconds(5), deadline));
      if (!producer.stop(upTo(config.shutdownTimeout(), deadline))) {
        log.warn("pgtask worker {}: a claim is still in flight; its tasks are put back when it returns",
            config.workerId());
      }
      listener.stop(upTo(Duration.ofSeconds(1), deadline));
      maintenance.stop(upTo(config.shutdownTimeout(), deadline));
      // returns within what is left plus its allowance, the registry's row within the allowance's last part
      executor.shutdown(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      deregister(Math.max(TimeUnit.MILLISECONDS.toNanos(100),
          deadline + Executor.STOP_ALLOWANCE.toNanos() - System.nanoTime()));
      log.info("pgtask worker {} stopped", config.workerId());
    }
  }

  /** {@code max}, or what is left until {@code deadline} when that is less (never negative). */
  private static Duration upTo(Duration max, long deadline) {
    return Duration.ofNanos(Math.max(0, Math.min(max.toNanos(), deadline - System.nanoTime())));
  }

  /**
   * Removes this worker's row, waiting at most {@code nanos} (what is left of the shutdown timeout
   * and its allowance, at least 100 ms): a starved pool (a session pooler out of server sessions) must not keep the worker
   * from stopping; the row then expires by itself.
   */
  private void deregister(long nanos) {
    boolean finished = Bounded.run("pgtask-deregister-" + config.workerId(),
        () -> WorkerQueries.deregister(Sql.using(config.dataSource()), config.workerId()), nanos,
        e -> log.warn("pgtask: could not remove worker {} from the registry ({}); it expires by itself",
            config.workerId(), e.getMessage()));
    if (!finished) {
      log.warn("pgtask: removing worker {} from the registry did not finish within the shutdown timeout (no"
          + " connection from the pool?); it expires by itself", config.workerId());
    }
  }

  /**
   * Registers this worker in pgtask.worker (also after its row was pruned); throws {@link
   * dev.pgtask.WorkerIdInUseException} when a live worker holds its id.
   */
  void register() {
    String host = Hosts.shortHostName();
    String version = WorkerRuntime.class.getPackage().getImplementationVersion();
    WorkerQueries.register(Sql.using(config.dataSource()), config.workerId(), host, ProcessHandle.current().pid(),
        version == null ? "dev" : version, config.queues(), config.kinds(), config.concurrency(),
        WorkerIds.listenSessionName(config.workerId()));
  }

  /** The executor (tests and operations: running task ids, cancel). */
  public Executor executor() {
    return executor;
  }

  /** The maintenance passes, to run one on demand. */
  public Maintenance maintenance() {
    return maintenance;
  }

  /** The scheduler of recurring tasks (its {@code fireDue()} fires what is due now). */
  public Scheduler scheduler() {
    return scheduler;
  }

  /** Whether {@link #start()} starts the scheduler (default true); call before it. */
  public void runScheduler(boolean run) {
    this.runScheduler = run;
  }

  /** Wakes the producer as a notification would. */
  public void wake() {
    wakeups.wake();
  }

  /** Whether the LISTEN connection is connected and listening right now. */
  public boolean listening() {
    return listener.listeningSince() != 0;
  }

  /**
   * Whether this worker's LISTEN session LISTENs right now: the one of its process's workers on its
   * database that listens for all of them (the others' sessions only run their rounds).
   */
  public boolean listenSessionListens() {
    return listener.listens();
  }

  /** When the last claim statement returned, or {@code null} before the first. */
  public java.time.Instant lastClaimAt() {
    long millis = stats.lastClaimMillis.get();
    return millis == 0 ? null : java.time.Instant.ofEpochMilli(millis);
  }

  /** The counters since start ({@link WorkerStats#snapshot}). */
  public dev.pgtask.WorkerStatistics stats() {
    return stats.snapshot(listener.reconnects());
  }
}
