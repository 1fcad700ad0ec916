package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.TaskSql;
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
 * The cluster's maintenance, run by one elected worker at a time: the maintenance leader, the
 * holder of the lease row {@code pgtask.maintenance_lease} (expiry on the database's clock, never a
 * session lock). Every worker runs a tick every beat ({@link #beatInterval}: the rescue interval,
 * at most 10 s and at most a third of the claim lease): one statement that refreshes its heartbeat
 * and takes the lease when it has expired ({@code pgtask.maintenance_turn}). The holder renews it
 * for three beats ({@link #leaderLease}) at each tick; a dead or frozen holder is replaced when its
 * lease has expired, at the next tick of another worker: within four beats of its last renewal.
 * Every pass of the leader starts its transaction with the same statement and runs only when it
 * returned the lease, so a leader that was frozen past its lease finds out before it runs a pass;
 * the lease row stays locked by that transaction until the pass ends, so no other worker takes the
 * lease in the middle of one.
 *
 * <p>While the worker's listener listens, the tick runs on the listener's own session instead
 * ({@link #sessionTick()}), in the transaction of the listener's round that also carries the poll:
 * an idle worker's heartbeat costs no transaction of its own, no pool check and no ping. The
 * maintenance thread ticks on the pool whenever those ticks stop.
 *
 * <p>The leader's passes, each in its own short transaction with server-side timeouts:
 * <ul>
 *   <li>the rescue round (every rescue interval, at once when it becomes leader, in the tick's
 *       transaction): running tasks whose lease expired and whose row no live transaction holds
 *       become retryable (or discarded) again; cancel requests that no longer stand are deleted;
 *       (tenant, queue) pairs left with waiting tasks and no head get one (tenant repair: the only
 *       event that leaves a pair headless is an enqueue that commits while the head it waited behind
 *       finishes, so the repair comes with the rescue round instead of a pass of its own); the dead
 *       row versions of the task table, its live ones and the rows the planner believes it has
 *       are read for the vacuum and the analyze;</li>
 *   <li>vacuum (after a rescue round that read {@value #VACUUM_DEAD_TUPLES} dead row versions or
 *       more, at most every 15 s): the task table is vacuumed, for servers where autovacuum is off
 *       or too slow;</li>
 *   <li>analyze (after a rescue round that found the table four times larger than the planner
 *       believes, and a thousand rows or more; at most every 15 s): {@code ANALYZE} of the task
 *       table, so that plans kept from an empty queue are made again (see {@link #analyzeTurn});</li>
 *   <li>retention (every 30 s, or every half of a shorter retention when that is less): finished
 *       tasks past their retention are deleted in batches, and stale worker rows;</li>
 *   <li>unhandled kinds (every 30 s, in the transaction of the retention's first batch): due tasks
 *       whose kind no live worker of their queue handles are logged as a WARN naming queue, kind and
 *       count, at most once every 5 minutes per queue and kind.</li>
 * </ul>
 * The public pass methods run a pass at once on any worker, leader or not (tests, operations):
 * each kind of pass is then kept to one at a time in the cluster by its transaction-level advisory
 * lock {@code (namespace, key)}.
 */
public final class Maintenance extends Service {

  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
  private static final Duration PRUNE_INTERVAL = Duration.ofSeconds(30);
  private static final Duration MIN_PRUNE_INTERVAL = Duration.ofSeconds(1);
  private static final Duration HEARTBEAT_INTERVAL = Duration.ofSeconds(10);
  private static final Duration QUEUE_SAMPLE_INTERVAL = Duration.ofSeconds(15);
  private static final Duration STALE_WORKER_AGE = Duration.ofHours(1);
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
  private final Runnable register;
  private final long beatNanos;
  private final Duration leaderLease;
  // the server-side bounds of every transaction of the maintenance (ticks, rounds, passes)
  private final dev.pgtask.internal.sql.TxBounds bounds;
  // the term of the lease this worker holds, or null; written by the maintenance thread
  private volatile Long term;
  // System.nanoTime() of the last rescue round; written by the maintenance thread and the listener's
  private volatile long lastRescueRound;
  // System.nanoTime() of the last tick on the listener's session (0: none yet), and when the next is due
  private volatile long lastSessionTick;
  private volatile long sessionTickDue;
  // what the listener's session hands to the maintenance thread (it needs the pool)
  private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> handOffs = new java.util.concurrent.ConcurrentLinkedQueue<>();
  // the passes and when each is due next (System.nanoTime()); the maintenance thread's own
  private final List<Pass> passes = new ArrayList<>();
  private final Object sleeper = new Object();
  // System.nanoTime() of the leader's last unhandled-kinds check (0: none yet); the maintenance thread's own
  private long lastUnhandledCheck;
  // "queue kind" -> System.nanoTime() of the last warning; written and read by the maintenance thread only
  private final java.util.Map<String, Long> unhandledWarnedAt = new java.util.HashMap<>();

  /**
   * {@code register}: registers the worker again (its row was pruned while it was away); the
   * heartbeat is the tick's.
   */
  public Maintenance(WorkerConfig config, WorkerStats stats, Runnable wakeProducer, Runnable register) {
    super("pgtask-maintenance-" + config.workerId(), 1);
    this.config = config;
    this.stats = stats;
    this.wakeProducer = wakeProducer;
    this.register = register;
    Duration beat = beatInterval(config);
    this.beatNanos = beat.toNanos();
    this.leaderLease = leaderLease(config);
    this.bounds = config.transactionBounds();
    schedule(beat, this::tick);
    passes.get(0).due = System.nanoTime(); // the first tick at start: a new cluster has a leader at once
    sessionTickDue = System.nanoTime() + beatNanos / 2; // then on the listener's session, before the next
    schedule(pruneInterval(config), () -> {
      if (leads()) {
        leaderPrunePass();
      }
    });
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
      Runnable handedOff;
      while ((handedOff = handOffs.poll()) != null && isRunning()) {
        try {
          handedOff.run();
        } catch (RuntimeException e) {
          log.warn("pgtask: maintenance pass failed: {}", e.getMessage());
        }
      }
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
            if (handOffs.isEmpty()) {
              TimeUnit.NANOSECONDS.timedWait(sleeper, wait);
            }
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
    releaseLease();
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

  /**
   * The tick's period: the rescue interval, at most {@link #HEARTBEAT_INTERVAL} (the heartbeat's
   * period) and at most a third of the claim lease.
   */
  public static Duration beatInterval(WorkerConfig config) {
    Duration beat = config.rescueInterval();
    if (beat.compareTo(HEARTBEAT_INTERVAL) > 0) {
      beat = HEARTBEAT_INTERVAL;
    }
    Duration third = config.leaseDuration().dividedBy(3);
    if (beat.compareTo(third) > 0) {
      beat = third;
    }
    return beat.compareTo(MIN_BEAT) < 0 ? MIN_BEAT : beat;
  }

  private static final Duration MIN_BEAT = Duration.ofMillis(10);

  /**
   * How long the leader holds the lease after each renewal: three beats (a tick or two late under
   * load is not a loss of the lease).
   */
  static Duration leaderLease(WorkerConfig config) {
    return beatInterval(config).multipliedBy(3);
  }

  /** Whether this worker held the maintenance lease at its last tick or pass. */
  public boolean leads() {
    return term != null;
  }

  /**
   * One tick: the heartbeat and the lease in one statement; for the leader, in the transaction of
   * its rescue round when that is due (every rescue interval), else a renewal only.
   */
  void tick() {
    if (tickedOnSession()) {
      return; // the listener's session carries the ticks
    }
    if (term == null) {
      MaintenanceQueries.Turn t = bounds.inTransaction(config.dataSource(),
          tx -> MaintenanceQueries.maintenanceTurn(tx, config.workerId(), leaderLease, true));
      registered(t);
      if (t.term() == null) {
        return;
      }
      // taken: the round below renews it in its own transaction and rescues at once
      termIs(t.term());
      lastRescueRound = System.nanoTime() - config.rescueInterval().toNanos();
    }
    rescueRound();
  }

  private void registered(MaintenanceQueries.Turn t) {
    if (Boolean.FALSE.equals(t.registered())) {
      try {
        register.run();
      } catch (dev.pgtask.WorkerIdInUseException e) {
        // pruned while away, and another live process took the id meanwhile: say so loudly
        log.error("pgtask worker {}: could not register again: {}", config.workerId(), e.getMessage());
      }
    }
  }

  /** Records the turn's answer: the term held, or null (logs a change of leadership). */
  private void termIs(Long now) {
    Long before = term;
    term = now;
    if (now != null && !now.equals(before)) {
      log.info("pgtask worker {} leads maintenance (term {}, lease {} ms)", config.workerId(), now,
          leaderLease.toMillis());
    } else if (now == null && before != null) {
      log.info("pgtask worker {} no longer leads maintenance (its term {} ended: its lease expired and "
          + "another worker took it); it runs no maintenance pass", config.workerId(), before);
    }
  }

  /**
   * The leader's tick: renews the lease (and the heartbeat) first in the transaction; when the
   * rescue round is due, rescues expired claims, deletes cancel requests that no longer stand,
   * repairs tenant heads and reads the task table's dead row versions in that transaction, then
   * vacuums if they are many.
   */
  private void rescueRound() {
    boolean due = rescueDue();
    Round r = bounds.inTransaction(config.dataSource(), tx -> roundIn(tx, due));
    afterRound(r);
    if (r.ran() && r.table().dead() >= VACUUM_DEAD_TUPLES) {
      vacuumTurn();
    }
    if (r.ran() && r.table().outgrewPlans()) {
      analyzeTurn();
    }
  }

  private boolean rescueDue() {
    return System.nanoTime() - lastRescueRound >= config.rescueInterval().toNanos() - beatNanos / 2;
  }

  /** What a leader's tick found: its turn, and with {@code ran} what its rescue round did. */
  private record Round(MaintenanceQueries.Turn turn, boolean ran, long rescued, long repaired,
      MaintenanceQueries.TaskTableRows table) {}

  /** The leader's tick in the transaction {@code tx}: the lease first, then the rescue round when {@code due}. */
  private Round roundIn(DSLContext tx, boolean due) {
    boolean locked = MaintenanceQueries.tryPassLock(tx, config.tenantLockNamespace(),
        MaintenanceQueries.RESCUE_LOCK_KEY);
    MaintenanceQueries.Turn t = MaintenanceQueries.maintenanceTurn(tx, config.workerId(), leaderLease, true);
    if (t.term() == null || !due || !locked) {
      return new Round(t, false, 0, 0, null);
    }
    long rescued = MaintenanceQueries.rescueExpired(tx, RESCUE_BATCH);
    MaintenanceQueries.pruneCancelRequests(tx);
    long repaired = MaintenanceQueries.repairTenantHeads(tx);
    return new Round(t, true, rescued, repaired, MaintenanceQueries.taskTable(tx));
  }

  /** After the leader's tick committed: the turn's answer, and what the rescue round found. */
  private void afterRound(Round r) {
    registered(r.turn());
    termIs(r.turn().term());
    if (!r.ran()) {
      return;
    }
    lastRescueRound = System.nanoTime();
    rescued((int) r.rescued());
    if (r.repaired() > 0) {
      wakeProducer.run();
    }
  }

  /**
   * ANALYZE of the task table when it holds four times the rows the planner believes and at least
   * a thousand (a backlog arrived into a queue last analyzed empty), at most once per
   * {@link #VACUUM_CHECK_INTERVAL} on this worker (the leader). The sessions' kept plans of the
   * statements by task id (the re-lock, the completions) may have been made on the empty table,
   * where reading it whole was cheapest; new statistics make each session plan them again, with
   * its indexes. The claims and the database functions are planned without sequential scans and
   * need none of this (see {@code TaskSql.GENERIC_PLAN}).
   */
  private void analyzeTurn() {
    long now = System.nanoTime();
    if (lastAnalyze != 0 && now - lastAnalyze < VACUUM_CHECK_INTERVAL.toNanos()) {
      return;
    }
    lastAnalyze = now;
    MaintenanceQueries.analyzeTasks(Sql.using(config.dataSource()));
  }

  private volatile long lastAnalyze;

  private void vacuumTurn() {
    if (bounds.inTransaction(config.dataSource(), tx -> MaintenanceQueries.takeVacuumTurn(tx, VACUUM_CHECK_INTERVAL))) {
      MaintenanceQueries.vacuumTasks(Sql.using(config.dataSource()));
    }
  }

  /**
   * The tick as the listener runs it on its session while it listens (see {@code SessionWork}):
   * the same statements in the listener's round, with no pool connection and no pool check, and
   * no ping of the listener's own. Due a beat after the last one; it runs early (by at most half a
   * beat, and at most a poll interval) in a round that the listener sends anyway for the poll, so
   * that an idle worker's heartbeat rides on its poll. What needs the pool (registering again, the
   * rescue round of a worker that has just taken the lease, the vacuum) goes to the maintenance
   * thread. While these ticks come (the last one less than a beat and a quarter ago), the
   * maintenance thread ticks no more; when they stop (the listener lost its connection, or never
   * heard a notification and stopped), it ticks on the pool again.
   */
  public dev.pgtask.internal.notifier.SessionWork sessionTick() {
    long early = Math.min(config.pollInterval().toNanos(), beatNanos / 2);
    return new dev.pgtask.internal.notifier.SessionWork() {
      @Override
      public long dueAt() {
        return sessionTickDue;
      }

      @Override
      public boolean runsInRoundAt(long now) {
        return sessionTickDue - early - now <= 0;
      }

      @Override
      public Runnable run(DSLContext tx, long now) {
        sessionTickDue = now + beatNanos;
        if (term == null) {
          MaintenanceQueries.Turn t = MaintenanceQueries.maintenanceTurn(tx, config.workerId(), leaderLease, true);
          return () -> {
            lastSessionTick = System.nanoTime();
            if (Boolean.FALSE.equals(t.registered())) {
              handOff(register);
            }
            if (t.term() != null) {
              termIs(t.term());
              // taken: the rescue round at once, as the tick on the maintenance thread does it
              lastRescueRound = System.nanoTime() - config.rescueInterval().toNanos();
              handOff(Maintenance.this::rescueRound);
            }
          };
        }
        Round r = roundIn(tx, rescueDue());
        return () -> {
          lastSessionTick = System.nanoTime();
          if (Boolean.FALSE.equals(r.turn().registered())) {
            handOff(register);
          }
          termIs(r.turn().term());
          if (r.ran()) {
            lastRescueRound = System.nanoTime();
            rescued((int) r.rescued());
            if (r.repaired() > 0) {
              wakeProducer.run();
            }
            if (r.table().dead() >= VACUUM_DEAD_TUPLES) {
              handOff(Maintenance.this::vacuumTurn);
            }
            if (r.table().outgrewPlans()) {
              handOff(Maintenance.this::analyzeTurn);
            }
          }
        };
      }
    };
  }

  /**
   * Whether the listener's session ticked less than a beat and a quarter ago (see
   * {@link #sessionTick()}): its ticks come at least once a beat. When they stop, the maintenance
   * thread's next tick runs within two and a quarter beats of the last one, inside the leader's
   * lease of three.
   */
  private boolean tickedOnSession() {
    long last = lastSessionTick;
    return last != 0 && System.nanoTime() - last < beatNanos * 5 / 4;
  }

  /** Runs {@code r} on the maintenance thread, before its next pass. */
  private void handOff(Runnable r) {
    handOffs.add(r);
    synchronized (sleeper) {
      sleeper.notifyAll();
    }
  }

  private void rescued(int n) {
    if (n > 0) {
      stats.rescued.addAndGet(n);
      config.metrics().rescued(n);
      log.info("pgtask: rescued {} task(s) of lost workers", n);
      wakeProducer.run();
    }
  }

  /**
   * The leader's retention pass: each batch's transaction first renews the lease, or stops. The
   * first batch's transaction also reads the unhandled kinds, over every queue a live worker serves,
   * when that check is due (every {@link #UNHANDLED_CHECK_INTERVAL}): one transaction for both.
   */
  private void leaderPrunePass() {
    long now = System.nanoTime();
    boolean unhandledDue = lastUnhandledCheck == 0
        || now - lastUnhandledCheck >= UNHANDLED_CHECK_INTERVAL.toNanos() - pruneInterval(config).toNanos() / 2;
    java.util.List<MaintenanceQueries.Unhandled> found = new java.util.ArrayList<>();
    for (int i = 0; i < PRUNE_MAX_BATCHES; i++) {
      boolean first = i == 0;
      int n = inLeaderTransaction(MaintenanceQueries.PRUNE_LOCK_KEY, tx -> {
        if (first) {
          WorkerQueries.pruneStale(tx, STALE_WORKER_AGE);
          if (unhandledDue) {
            found.addAll(MaintenanceQueries.unhandledKinds(tx, null));
          }
        }
        return MaintenanceQueries.pruneFinished(tx, config.completedRetention(), config.failedRetention(), PRUNE_BATCH);
      });
      if (first && n >= 0 && unhandledDue) {
        lastUnhandledCheck = now;
        warnUnhandled(found);
      }
      if (n < PRUNE_BATCH) {
        break;
      }
    }
  }

  /**
   * Runs {@code pass} in a transaction that first takes the pass's lock (with the server-side
   * timeouts) and renews the lease; a worker that finds it no longer holds the lease runs nothing.
   * Returns the pass's count, -1 when it did not run.
   */
  private int inLeaderTransaction(int key, ToIntFunction<DSLContext> pass) {
    int[] n = {-1};
    MaintenanceQueries.Turn t = bounds.inTransaction(config.dataSource(), tx -> {
      boolean locked = MaintenanceQueries.tryPassLock(tx, config.tenantLockNamespace(), key);
      MaintenanceQueries.Turn turn = MaintenanceQueries.maintenanceTurn(tx, config.workerId(), leaderLease, false);
      if (turn.term() != null && locked) {
        n[0] = pass.applyAsInt(tx);
      }
      return turn;
    });
    termIs(t.term());
    return n[0];
  }

  /** At stop: a leader gives the lease up, so that another worker takes it at its next tick. */
  private void releaseLease() {
    if (term == null) {
      return;
    }
    try {
      bounds.inTransaction(config.dataSource(), tx -> MaintenanceQueries.releaseMaintenanceLease(tx, config.workerId()));
      log.info("pgtask worker {} released the maintenance lease (term {})", config.workerId(), term);
    } catch (RuntimeException e) {
      log.warn("pgtask worker {}: could not release the maintenance lease ({}); it expires within {} ms",
          config.workerId(), e.getMessage(), leaderLease.toMillis());
    }
    term = null;
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
    rescued(n);
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
        || !bounds.inTransaction(config.dataSource(), tx -> MaintenanceQueries.takeVacuumTurn(tx, VACUUM_CHECK_INTERVAL))) {
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
    return warnUnhandled(bounds.inTransaction(config.dataSource(),
        tx -> MaintenanceQueries.unhandledKinds(tx, config.queues())));
  }

  private java.util.List<MaintenanceQueries.Unhandled> warnUnhandled(java.util.List<MaintenanceQueries.Unhandled> found) {
    java.util.List<MaintenanceQueries.Unhandled> warned = new java.util.ArrayList<>();
    long now = System.nanoTime();
    for (var u : found) {
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
    var samples = bounds.inTransaction(config.dataSource(), tx -> MaintenanceQueries.sampleQueues(tx, config.queues()));
    for (String q : config.queues()) {
      var s = samples.get(q);
      config.metrics().queueSampled(q, s == null ? 0 : s.available(), s == null ? Duration.ZERO : s.lag());
    }
  }

  private int inPassTransaction(int key, ToIntFunction<DSLContext> pass) {
    return bounds.inTransaction(config.dataSource(),
        tx -> MaintenanceQueries.tryPassLock(tx, config.tenantLockNamespace(), key) ? pass.applyAsInt(tx) : 0);
  }
}
