package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.WorkerQueries;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Maintenance passes run by every worker, coordinated through the database: each pass runs in its
 * own short transaction after {@code pg_try_advisory_xact_lock(namespace, key)}; if another worker
 * holds the key the pass is skipped. No leader, no session lock.
 *
 * <ul>
 *   <li>rescue (every rescue interval): running tasks whose lease expired and whose row no live
 *       transaction holds become retryable (or discarded) again;</li>
 *   <li>tenant repair (every second): (tenant, queue) pairs left with waiting tasks and no head get one;</li>
 *   <li>retention (every 30 s, or every half of a shorter retention): finished tasks past their
 *       retention are deleted in batches;</li>
 *   <li>vacuum (checked every 15 s): one worker vacuums the task table when it holds many dead row
 *       versions, for servers where autovacuum is off or too slow;</li>
 *   <li>unhandled kinds (every 30 s, each worker for its own queues): due tasks whose kind no live
 *       worker of their queue handles are logged as a WARN naming queue, kind and count, at most
 *       once every 5 minutes per queue and kind.</li>
 * </ul>
 */
public final class Maintenance extends Service {

  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
  private static final Duration TENANT_REPAIR_INTERVAL = Duration.ofSeconds(1);
  private static final Duration PRUNE_INTERVAL = Duration.ofSeconds(30);
  private static final Duration MIN_PRUNE_INTERVAL = Duration.ofSeconds(1);
  private static final Duration HEARTBEAT_INTERVAL = Duration.ofSeconds(10);
  private static final Duration QUEUE_SAMPLE_INTERVAL = Duration.ofSeconds(15);
  private static final Duration STALE_WORKER_AGE = Duration.ofHours(1);
  /** Server-side bound of one pass's transaction: a frozen worker's pass cannot hold its lock longer. */
  private static final Duration PASS_SERVER_TIMEOUT = Duration.ofSeconds(5);
  private static final int RESCUE_BATCH = 1_000;
  private static final Duration VACUUM_CHECK_INTERVAL = Duration.ofSeconds(15);
  /** A vacuum turn is taken when the task table has this many dead row versions or more. */
  static final long VACUUM_DEAD_TUPLES = 20_000;
  private static final int PRUNE_BATCH = 5_000;
  private static final int PRUNE_MAX_BATCHES = 100;
  private static final Duration UNHANDLED_CHECK_INTERVAL = Duration.ofSeconds(30);
  /** A queue and kind no live worker handles is logged at most this often. */
  static final Duration UNHANDLED_WARN_INTERVAL = Duration.ofMinutes(5);

  private final WorkerConfig config;
  private final WorkerStats stats;
  private final Runnable wakeProducer;
  private final Runnable heartbeat;
  // the passes and when each is due next (System.nanoTime()); the maintenance thread's own
  private final List<Pass> passes = new ArrayList<>();
  private final Object sleeper = new Object();
  // "queue kind" -> System.nanoTime() of the last warning; written and read by the maintenance thread only
  private final java.util.Map<String, Long> unhandledWarnedAt = new java.util.HashMap<>();

  public Maintenance(WorkerConfig config, WorkerStats stats, Runnable wakeProducer, Runnable heartbeat) {
    super("pgtask-maintenance-" + config.workerId(), 1);
    this.config = config;
    this.stats = stats;
    this.wakeProducer = wakeProducer;
    this.heartbeat = heartbeat;
    schedule(config.rescueInterval(), this::rescuePass);
    schedule(TENANT_REPAIR_INTERVAL, this::tenantRepairPass);
    schedule(pruneInterval(config), this::prunePass);
    schedule(HEARTBEAT_INTERVAL, heartbeat);
    schedule(VACUUM_CHECK_INTERVAL, this::vacuumPass);
    schedule(UNHANDLED_CHECK_INTERVAL, this::unhandledKindsPass);
    if (config.metrics() != dev.pgtask.PgTaskMetrics.NOOP) {
      schedule(QUEUE_SAMPLE_INTERVAL, this::sampleQueues);
    }
  }

  /** One periodic pass: run with a fixed delay, first after a random delay of half to all of it. */
  private static final class Pass {
    final long periodNanos;
    final Runnable body;
    long due;

    Pass(long periodNanos, Runnable body) {
      this.periodNanos = periodNanos;
      this.body = body;
      // jitter: workers started together drift apart
      this.due = System.nanoTime() + ThreadLocalRandom.current().nextLong(periodNanos / 2, periodNanos + 1);
    }
  }

  @Override
  protected void run(int index) {
    while (isRunning()) {
      Pass next = passes.get(0);
      for (Pass p : passes) {
        if (p.due - next.due < 0) {
          next = p;
        }
      }
      long wait = next.due - System.nanoTime();
      if (wait > 0) {
        synchronized (sleeper) {
          try {
            TimeUnit.NANOSECONDS.timedWait(sleeper, wait);
          } catch (InterruptedException e) {
            // the flag decides
          }
        }
        continue;
      }
      try {
        next.body.run();
      } catch (RuntimeException e) {
        if (isRunning()) {
          log.warn("pgtask: maintenance pass failed: {}", e.getMessage());
        }
      }
      next.due = System.nanoTime() + next.periodNanos;
    }
  }

  @Override
  protected void onStop() {
    synchronized (sleeper) {
      sleeper.notifyAll();
    }
  }

  /**
   * Every 30 s, or every half of the shorter retention when that is less (at least every second):
   * a finished task then stays at most one and a half times its retention, and a table under a
   * short retention reaches its steady size within a few retentions.
   */
  static Duration pruneInterval(WorkerConfig config) {
    Duration half = (config.completedRetention().compareTo(config.failedRetention()) < 0
        ? config.completedRetention() : config.failedRetention()).dividedBy(2);
    if (half.compareTo(MIN_PRUNE_INTERVAL) < 0) {
      return MIN_PRUNE_INTERVAL;
    }
    return half.compareTo(PRUNE_INTERVAL) < 0 ? half : PRUNE_INTERVAL;
  }

  private void schedule(Duration interval, Runnable pass) {
    passes.add(new Pass(Math.max(1, interval.toNanos()), pass));
  }

  /**
   * Runs one rescue pass now (if no other worker is running one), then deletes the cancel requests
   * that no longer stand. Returns the tasks rescued.
   */
  public int rescuePass() {
    int n = inPassTransaction(MaintenanceQueries.RESCUE_LOCK_KEY, tx -> {
      int rescued = MaintenanceQueries.rescueExpired(tx, RESCUE_BATCH);
      MaintenanceQueries.pruneCancelRequests(tx);
      return rescued;
    });
    if (n > 0) {
      stats.rescued.addAndGet(n);
      config.metrics().rescued(n);
      log.info("pgtask: rescued {} task(s) of lost workers", n);
      wakeProducer.run();
    }
    return n;
  }

  /** Runs one tenant repair pass now. Returns the tenants that got a new head. */
  public int tenantRepairPass() {
    int n = inPassTransaction(MaintenanceQueries.TENANT_REPAIR_LOCK_KEY, MaintenanceQueries::repairTenantHeads);
    if (n > 0) {
      wakeProducer.run();
    }
    return n;
  }

  /**
   * Runs one retention pass now: stale worker rows, then finished tasks past their retention in
   * batches of {@value #PRUNE_BATCH}, each batch its own short transaction, until a batch comes
   * back short (or {@value #PRUNE_MAX_BATCHES} batches). Returns the tasks deleted.
   */
  public int prunePass() {
    int total = 0;
    for (int i = 0; i < PRUNE_MAX_BATCHES; i++) {
      boolean first = i == 0;
      int n = inPassTransaction(MaintenanceQueries.PRUNE_LOCK_KEY, tx -> {
        if (first) {
          WorkerQueries.pruneStale(tx, STALE_WORKER_AGE);
        }
        return MaintenanceQueries.pruneFinished(tx, config.completedRetention(), config.failedRetention(), PRUNE_BATCH);
      });
      total += n;
      if (n < PRUNE_BATCH) {
        break;
      }
    }
    return total;
  }

  /**
   * Vacuums the task table when it has {@value #VACUUM_DEAD_TUPLES} or more dead row versions and
   * no worker vacuumed it in the last check interval: a busy queue outruns autovacuum's defaults,
   * and some servers run with autovacuum off. The turn is claimed with a short UPDATE of
   * pgtask.settings; VACUUM itself runs in autocommit. Returns whether this worker vacuumed.
   */
  public boolean vacuumPass() {
    var dsl = Sql.using(config.dataSource());
    if (MaintenanceQueries.deadTuples(dsl) < VACUUM_DEAD_TUPLES
        || !MaintenanceQueries.takeVacuumTurn(dsl, VACUUM_CHECK_INTERVAL)) {
      return false;
    }
    // a role that does not own the table gets a server WARNING and no VACUUM: autovacuum remains
    MaintenanceQueries.vacuumTasks(dsl);
    return true;
  }

  /**
   * Logs the due tasks of this worker's queues whose kind no live worker of their queue handles: a
   * WARN per queue and kind, at most once every {@link #UNHANDLED_WARN_INTERVAL}. Such tasks stay
   * available forever, and a tenant's tasks wait behind such a head (pgtask.unrunnable,
   * pgtask.health). Returns the queue and kind pairs it warned about.
   */
  public java.util.List<MaintenanceQueries.Unhandled> unhandledKindsPass() {
    java.util.List<MaintenanceQueries.Unhandled> warned = new java.util.ArrayList<>();
    long now = System.nanoTime();
    for (var u : MaintenanceQueries.unhandledKinds(Sql.using(config.dataSource()), config.queues())) {
      Long last = unhandledWarnedAt.get(u.queue() + " " + u.kind());
      if (last != null && now - last < UNHANDLED_WARN_INTERVAL.toNanos()) {
        continue;
      }
      unhandledWarnedAt.put(u.queue() + " " + u.kind(), now);
      warned.add(u);
      log.warn("pgtask: {} due task(s) of kind {} in queue {} have no handler in any live worker of that queue; "
          + "they will not run until a worker with a handler for {} serves {} (see pgtask.unrunnable)",
          u.tasks(), u.kind(), u.queue(), u.kind(), u.queue());
    }
    return warned;
  }

  /** Samples the worker's queues (ready tasks and lag) into the metrics. */
  public void sampleQueues() {
    var samples = MaintenanceQueries.sampleQueues(Sql.using(config.dataSource()), config.queues());
    for (String q : config.queues()) {
      var s = samples.get(q);
      config.metrics().queueSampled(q, s == null ? 0 : s.available(), s == null ? Duration.ZERO : s.lag());
    }
  }

  private int inPassTransaction(int key, ToIntFunction<DSLContext> pass) {
    try (Connection c = config.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        DSLContext tx = Sql.using(c);
        int n = 0;
        if (MaintenanceQueries.tryPassLock(tx, config.tenantLockNamespace(), key, PASS_SERVER_TIMEOUT)) {
          n = pass.applyAsInt(tx);
        }
        c.commit();
        return n;
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }
}
