package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerRuntime;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.notifier.SessionWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The maintenance driver: one thread ({@code pgtask-maintenance-<worker>}) that runs the periodic
 * passes, each with a fixed delay, and the work the listener's session hands it (what needs the
 * pool). The passes, each a class of its own (see the package documentation):
 * <ul>
 *   <li>every beat ({@link #beatInterval}), the {@link Tick}: heartbeat and lease, and the leader's
 *       rescue round ({@link RescuePass}, {@link TenantRepairPass}, then {@link VacuumPass} and
 *       {@link AnalyzePass} when the round's read of the table calls for them); on the listener's
 *       session while it listens ({@link #sessionTick()}), else here, through the pool;</li>
 *   <li>on the leader, every retention interval, the {@link RetentionPass} (with the
 *       {@link StaleWorkerPass} and, every 30 s, the {@link UnhandledKindsPass} in its first
 *       batch);</li>
 *   <li>on every worker with metrics, every 15 s, the {@link QueueSamplePass}.</li>
 * </ul>
 * Every pass's transaction is the one of {@link PassTransaction}. {@link #runNow} runs a pass at
 * once on this worker, leader or not (tests, operations); {@link #standalone} makes a driver that
 * is not part of a running worker, to run passes from a test.
 */
public final class Maintenance extends Service {

  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
  private static final Duration HEARTBEAT_INTERVAL = Duration.ofSeconds(10);
  private static final Duration MIN_BEAT = Duration.ofMillis(10);

  private final LeaderLease lease;
  private final PassTransaction tx;
  private final Tick tick;
  // every pass by its class, for runNow
  private final Map<Class<?>, MaintenancePass<?>> passes = new LinkedHashMap<>();
  // the periodic passes and when each is due next (System.nanoTime()); the maintenance thread's own
  private final List<Periodic> schedule = new ArrayList<>();
  // what the listener's session hands to the maintenance thread (it needs the pool)
  private final ConcurrentLinkedQueue<Runnable> handOffs = new ConcurrentLinkedQueue<>();
  private final Object sleeper = new Object();

  /**
   * {@code wakeProducer}: wakes this worker's producer (tasks became claimable); {@code register}:
   * registers the worker again (its row was pruned while it was away; the heartbeat is the tick's).
   */
  public Maintenance(WorkerConfig config, WorkerStats stats, Runnable wakeProducer, Runnable register) {
    super("pgtask-maintenance-" + config.workerId(), 1);
    Duration beat = beatInterval(config);
    this.lease = new LeaderLease(config, register);
    this.tx = new PassTransaction(config, lease);
    RescuePass rescue = add(new RescuePass(RescuePass.Config.of(config), tx, stats, config.metrics(), wakeProducer));
    TenantRepairPass repair = add(new TenantRepairPass(config.rescueInterval(), tx, wakeProducer));
    VacuumPass vacuum = add(new VacuumPass(VacuumPass.Config.DEFAULT, config.dataSource(), tx));
    AnalyzePass analyze = add(new AnalyzePass(AnalyzePass.Config.DEFAULT, config.dataSource()));
    RetentionPass.Config retention = RetentionPass.Config.of(config);
    StaleWorkerPass stale = add(new StaleWorkerPass(retention.interval(), tx));
    UnhandledKindsPass unhandled = add(new UnhandledKindsPass(UnhandledKindsPass.Config.of(config), tx));
    RetentionPass prune = add(new RetentionPass(retention, tx, stale, unhandled));
    QueueSamplePass sample = add(new QueueSamplePass(QueueSamplePass.Config.of(config), tx, config.metrics()));
    RescueRound round = new RescueRound(rescue, repair, vacuum, analyze, beat.toNanos());
    this.tick = add(new Tick(beat, config.pollInterval(), lease, tx, round, this::handOff));

    schedule(tick, tick::onPool).due = System.nanoTime(); // the first tick at start: a new cluster has a leader at once
    schedule(prune, () -> {
      if (lease.leads()) {
        prune.runAsLeader();
      }
    });
    if (config.metrics() != dev.pgtask.PgTaskMetrics.NOOP) {
      schedule(sample, sample::runOnce);
    }
  }

  /**
   * A driver for {@code config} that is not part of a running worker, to run passes from a test
   * with {@link #runNow}: its own counters, no producer to wake, nothing to register; the lock
   * namespace read from the database when the configuration has none yet (a worker not started).
   */
  public static Maintenance standalone(WorkerConfig config) {
    WorkerConfig c = config.tenantLockNamespace() != null ? config
        : config.withTenantLockNamespace(WorkerRuntime.readLockNamespace(config.dataSource()));
    return new Maintenance(c, new WorkerStats(), () -> { }, () -> { });
  }

  /**
   * The beat: the tick's period. The rescue interval, at most {@link #HEARTBEAT_INTERVAL} (the
   * heartbeat's period) and at most a third of the claim lease.
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

  private <P extends MaintenancePass<?>> P add(P pass) {
    passes.put(pass.getClass(), pass);
    return pass;
  }

  /**
   * Runs the pass of class {@code type} once now, on the caller's thread (see
   * {@link MaintenancePass#runOnce()}), and returns what it did; e.g.
   * {@code runNow(RescuePass.class)} returns the tasks it rescued.
   */
  public <R> R runNow(Class<? extends MaintenancePass<R>> type) {
    MaintenancePass<?> pass = passes.get(type);
    if (pass == null) {
      throw new IllegalArgumentException("no maintenance pass " + type.getName());
    }
    @SuppressWarnings("unchecked")
    MaintenancePass<R> typed = (MaintenancePass<R>) pass;
    return typed.runOnce();
  }

  /** Whether this worker held the maintenance lease at its last tick or pass. */
  public boolean leads() {
    return lease.leads();
  }

  /** The tick as the listener runs it on its session while it listens (see {@link Tick}). */
  public SessionWork sessionTick() {
    return tick.sessionWork();
  }

  /** One periodic pass: run with a fixed delay, first after a random delay of half to all of it. */
  private static final class Periodic {
    final long periodNanos;
    final Runnable body;
    long due;

    Periodic(long periodNanos, Runnable body) {
      this.periodNanos = periodNanos;
      this.body = body;
      // jitter: workers started together drift apart
      this.due = System.nanoTime() + ThreadLocalRandom.current().nextLong(periodNanos / 2, periodNanos + 1);
    }
  }

  private Periodic schedule(MaintenancePass<?> pass, Runnable body) {
    Periodic p = new Periodic(Math.max(1, pass.interval().toNanos()), body);
    schedule.add(p);
    return p;
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
      Periodic next = schedule.get(0);
      for (Periodic p : schedule) {
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
    lease.release(tx);
  }

  @Override
  protected void onStop() {
    synchronized (sleeper) {
      sleeper.notifyAll();
    }
  }

  /** Runs {@code r} on the maintenance thread, before its next pass. */
  private void handOff(Runnable r) {
    handOffs.add(r);
    synchronized (sleeper) {
      sleeper.notifyAll();
    }
  }
}
