package dev.pgtask.testing;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskState;
import dev.pgtask.TaskStateException;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerRuntime;
import dev.pgtask.internal.executor.DirectRun;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.InspectQueries;
import dev.pgtask.internal.sql.InspectQueries.StoredTask;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Runs a worker's tasks synchronously in the calling thread, for tests: {@link #drain()} runs every
 * task that is due now, {@link #runTask(long)} runs one by id. Each attempt takes the worker's own
 * path, as one of its executor threads would run it: it is claimed (attempt + 1, owner, lease),
 * runs in its own task transaction holding the task's row lock and its tenant's advisory lock, its
 * handler sees that transaction through {@code ctx.connection()} / {@code ctx.dsl()}, and it ends
 * as on a worker: completed with the commit, or its writes rolled back and its retry (backoff,
 * attempts, error history), discard, snooze or cancellation recorded in the same transaction. A
 * task whose tenant's lock is held elsewhere is deferred without running. Timeouts apply (the
 * watchdog interrupts the calling thread at the deadline).
 *
 * <pre>{@code
 * PgTaskWorker worker = PgTaskWorker.builder(dataSource)     // built, not started
 *     .handler("invoice.send", SendInvoice.class, handler)
 *     .build();
 * PgTaskTester tester = PgTaskTester.of(worker);
 * orders.place(order);                                       // enqueues invoice.send
 * tester.drain().assertAllCompleted();
 * }</pre>
 *
 * <p>Only the worker's queues and kinds are run, with its settings (retry backoff, timeouts,
 * tenant defer delay, metrics). The worker itself need not (and usually should not) be started: a
 * started worker claims the same tasks in the background. Needs only the worker's
 * {@code DataSource}: a local server or Testcontainers. Not thread-safe: one test thread at a time.
 */
public final class PgTaskTester {

  /** Default most attempts one {@link #drain()} makes. */
  public static final int DEFAULT_MAX_RUNS = 1_000;

  private final PgTaskWorker worker;
  private volatile WorkerConfig config;

  private PgTaskTester(PgTaskWorker worker) {
    this.worker = worker;
  }

  /** A tester for {@code worker}'s handlers and settings (a built worker; it need not be started). */
  public static PgTaskTester of(PgTaskWorker worker) {
    return new PgTaskTester(Objects.requireNonNull(worker, "worker"));
  }

  /**
   * Runs every task of the worker's queues and kinds that is due now (by the database clock), one
   * at a time in claim order (priority, run time, id), until none is due, including tasks that the
   * handlers enqueue or retry without delay meanwhile; a retry or snooze that is due later is not
   * waited for. Returns every attempt made, in order.
   *
   * @throws IllegalStateException when tasks are still due after {@value #DEFAULT_MAX_RUNS} attempts
   *     (a handler that keeps enqueueing, or retries without delay); the report so far is in the message
   */
  public DrainReport drain() {
    return drain(DEFAULT_MAX_RUNS);
  }

  /** {@link #drain()}, making at most {@code maxRuns} attempts. */
  public DrainReport drain(int maxRuns) {
    if (maxRuns < 1) {
      throw new IllegalArgumentException("maxRuns must be at least 1, was " + maxRuns);
    }
    WorkerConfig c = config();
    List<TaskRun> runs = new ArrayList<>();
    try (DirectRun direct = new DirectRun(c)) {
      while (runs.size() < maxRuns) {
        List<Claimed> claimed = ClaimQueries.claimAvailable(c.dataSource(), c.queues(), c.kinds(), 1, c.workerId(),
            c.leaseDuration()).tasks();
        if (claimed.isEmpty()) {
          return new DrainReport(runs);
        }
        runs.add(run(direct, claimed.get(0)));
      }
    }
    if (InspectQueries.countDue(Sql.using(c.dataSource()), c.queues(), c.kinds()) > 0) {
      throw new IllegalStateException("drain made " + maxRuns + " attempts and tasks are still due (a handler "
          + "that keeps enqueueing, or retries without delay?); give drain(maxRuns) a higher bound if that is "
          + "expected. So far: " + new DrainReport(runs));
    }
    return new DrainReport(runs);
  }

  /**
   * Runs task {@code taskId} now, whatever its run time (a scheduled task, a retry not yet due), as
   * one attempt in the calling thread.
   *
   * @throws TaskNotFoundException when there is no such task
   * @throws TaskStateException when it is not queued (running, finished, or waiting behind its
   *     tenant's earlier task), or the worker has no handler for its kind or does not work its queue
   */
  public TaskRun runTask(long taskId) {
    WorkerConfig c = config();
    StoredTask stored = InspectQueries.byId(Sql.using(c.dataSource()), taskId);
    if (stored == null) {
      throw new TaskNotFoundException("task " + taskId + " does not exist", null);
    }
    if (!c.handlers().containsKey(stored.kind())) {
      throw new TaskStateException("task " + taskId + " is of kind " + stored.kind()
          + ", which the worker has no handler for (it handles " + c.kinds() + ")", null);
    }
    if (!c.queues().contains(stored.queue())) {
      throw new TaskStateException("task " + taskId + " is in queue " + stored.queue()
          + ", which the worker does not work (it works " + c.queues() + ")", null);
    }
    Claimed claimed = ClaimQueries.claimById(Sql.using(c.dataSource()), taskId, c.workerId(), c.leaseDuration());
    if (claimed == null) {
      StoredTask now = InspectQueries.byId(Sql.using(c.dataSource()), taskId);
      String state = now == null ? "deleted" : now.state();
      throw new TaskStateException("task " + taskId + " is " + state + ": only a queued task (available, "
          + "scheduled or retryable) can be run" + ("waiting".equals(state)
              ? "; it waits behind an earlier task of tenant " + now.tenant() + ", which runs first" : ""), null);
    }
    try (DirectRun direct = new DirectRun(c)) {
      return run(direct, claimed);
    }
  }

  /** The committed tasks, read through the worker's data source, typed payloads read with its mapper. */
  public EnqueuedTasks enqueued() {
    WorkerConfig c = WorkerAccess.config(worker);
    return EnqueuedTasks.in(c.dataSource()).objectMapper(c.objectMapper());
  }

  /** The tasks as the transaction open on {@code tx} sees them, typed payloads read with the worker's mapper. */
  public EnqueuedTasks enqueued(Connection tx) {
    return EnqueuedTasks.in(tx).objectMapper(WorkerAccess.config(worker).objectMapper());
  }

  private TaskRun run(DirectRun direct, Claimed claimed) {
    DirectRun.Ran ran = direct.run(claimed);
    StoredTask after = InspectQueries.byId(Sql.using(config.dataSource()), claimed.id());
    return new TaskRun(claimed.id(), claimed.kind(), claimed.attempt(), TaskRun.resultOf(ran.outcome()), ran.error(),
        after == null ? null : TaskState.fromSql(after.state()), after == null ? null : after.runAt());
  }

  /** The worker's configuration with its lock namespace resolved (read from pgtask.settings once). */
  private WorkerConfig config() {
    WorkerConfig c = config;
    if (c == null) {
      c = WorkerAccess.config(worker);
      if (c.tenantLockNamespace() == null) {
        c = c.withTenantLockNamespace(WorkerRuntime.readLockNamespace(c.dataSource()));
      }
      config = c;
    }
    return c;
  }
}
