package dev.pgtask.internal;

import dev.pgtask.Schedule;
import dev.pgtask.WorkerStatistics;
import dev.pgtask.internal.pooler.Poolers;
import dev.pgtask.internal.schedule.Schedules;
import java.time.Instant;
import java.util.List;

/**
 * The start and stop of one {@code PgTaskWorker}: what must be true before its parts start (the
 * pool is one a worker can use, the lock namespace is resolved, the builder's schedules are
 * declared, all or none), the {@link WorkerRuntime} that runs them, and its stop. The public worker
 * is a facade over it.
 *
 * <p>Threads: {@link #start} and the read of the runtime in {@link #close} are guarded by
 * {@link #lock} (a second start throws; a close waits for a start in progress). {@link #config} and
 * {@link #runtime} are volatile: written under the lock, once each (the config again when the lock
 * namespace is read at start), read by anyone.
 */
public final class WorkerLifecycle {

  private final Object lock = new Object();
  private volatile WorkerConfig config;
  private volatile WorkerRuntime runtime;
  private final List<Schedule> schedules;
  private final boolean runSchedules;

  /** {@code config}: as the builder resolved it; {@code schedules}: declared at start. */
  public WorkerLifecycle(WorkerConfig config, List<Schedule> schedules, boolean runSchedules) {
    this.config = config;
    this.schedules = List.copyOf(schedules);
    this.runSchedules = runSchedules;
  }

  /** The worker's configuration (with its lock namespace once it has started). */
  public WorkerConfig config() {
    return config;
  }

  /** The worker's runtime, or null before it started. */
  public WorkerRuntime runtime() {
    return runtime;
  }

  /** Starts the worker's parts; see {@code PgTaskWorker.start} for what it throws. */
  public void start() {
    synchronized (lock) {
      if (runtime != null) {
        throw new IllegalStateException("pgtask worker " + config.workerId() + " was already started");
      }
      Poolers.checkWorkerPool(config.dataSource(), config.workerId());
      if (config.tenantLockNamespace() == null) {
        config = config.withTenantLockNamespace(WorkerRuntime.readLockNamespace(config.dataSource()));
      }
      // declared before the scheduler starts, all or none: an invalid one (the database checks the
      // cron expression) stops the start, every invalid one named
      Schedules.declareAll(config.dataSource(), config.objectMapper(), schedules);
      WorkerRuntime r = new WorkerRuntime(config);
      runtime = r;
      r.runScheduler(runSchedules);
      r.start();
    }
  }

  /** Stops gracefully (see {@code PgTaskWorker.close}); idempotent, nothing before a start. */
  public void close() {
    WorkerRuntime r;
    synchronized (lock) {
      r = runtime;
    }
    if (r != null) {
      r.shutdown();
    }
  }

  /** Counters since start (all zero before it). */
  public WorkerStatistics stats() {
    WorkerRuntime r = runtime;
    return r == null ? WorkerStatistics.ZERO : r.stats();
  }

  /** Whether the worker is started and its LISTEN connection is listening right now. */
  public boolean listening() {
    WorkerRuntime r = runtime;
    return r != null && r.listening();
  }

  /** When the last claim or poll returned, or null before the first. */
  public Instant lastClaimAt() {
    WorkerRuntime r = runtime;
    return r == null ? null : r.lastClaimAt();
  }
}
