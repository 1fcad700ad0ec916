package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.DiscardTaskException;
import dev.pgtask.RetryTaskException;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries;
import dev.pgtask.internal.sql.ExecuteQueries.Fence;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs claimed tasks, each in its own transaction on a pooled connection.
 *
 * <p>Per task: open a transaction; {@link ExecuteQueries#lockForExecution re-lock the row with
 * fencing} (not ours any more: roll back and forget it), which also takes the tenant's
 * transaction-scoped advisory lock (busy: roll back and release the task for a short delay without
 * spending an attempt); run the handler on that transaction; mark the task completed; commit. On
 * failure: roll back, then record the outcome (retry with backoff, discard, snooze, cancelled) in
 * a short fenced statement on the same connection. A watchdog interrupts handlers at their deadline
 * and cancels their running statement; the transaction also carries server-side timeouts a little
 * above the task timeout, so a frozen JVM cannot hold the row or the tenant lock for ever.
 */
public final class Executor {

  private static final Logger log = LoggerFactory.getLogger(Executor.class);
  private static final int MAX_ERROR_LENGTH = 2_000;

  private final WorkerConfig config;
  private final WorkerStats stats;
  private final ExecutorService threads;
  private final ScheduledExecutorService watchdog;
  private final Semaphore slots;
  private final Map<Long, RunningTask> running = new ConcurrentHashMap<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile boolean stopping;

  public Executor(WorkerConfig config, WorkerStats stats) {
    this.config = config;
    this.stats = stats;
    AtomicInteger n = new AtomicInteger();
    this.threads = Executors.newFixedThreadPool(config.concurrency(), r -> {
      Thread t = new Thread(r, "pgtask-exec-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "pgtask-watchdog");
      t.setDaemon(true);
      return t;
    });
    this.slots = new Semaphore(config.concurrency());
  }

  /**
   * Blocks until at least one executor slot is free and reserves up to {@code max} free slots.
   * Returns how many were reserved; give back unused ones with {@link #unreserve}.
   */
  public int reserve(int max) throws InterruptedException {
    slots.acquire();
    int extra = Math.min(max - 1, slots.availablePermits());
    int got = extra > 0 && slots.tryAcquire(extra) ? extra : 0;
    return 1 + got;
  }

  /** Gives back reserved slots that no task used. */
  public void unreserve(int n) {
    if (n > 0) {
      slots.release(n);
    }
  }

  /** Runs a claimed task on a reserved slot. */
  public void submit(Claimed task) {
    inFlight.incrementAndGet();
    try {
      threads.execute(() -> {
        try {
          run(task);
        } finally {
          inFlight.decrementAndGet();
          slots.release();
        }
      });
    } catch (RuntimeException e) {
      inFlight.decrementAndGet();
      slots.release();
      release(new Fence(task.id(), config.workerId(), task.attempt()), Duration.ZERO);
      throw e;
    }
  }

  /** Asks a running task to stop and end cancelled. Returns false when it does not run here. */
  public boolean cancel(long taskId) {
    RunningTask t = running.get(taskId);
    if (t == null) {
      return false;
    }
    stop(t, RunningTask.StopReason.CANCELLED);
    return true;
  }

  /** Number of tasks claimed and not yet finished here. */
  public int inFlight() {
    return inFlight.get();
  }

  /** The ids of the tasks whose handler is running here. */
  public List<Long> runningTaskIds() {
    return List.copyOf(running.keySet());
  }

  /**
   * Graceful stop: tasks not yet started are released at once; running tasks get until
   * {@code grace} to finish, then are interrupted, rolled back and released.
   */
  public void shutdown(Duration grace) {
    stopping = true;
    threads.shutdown();
    try {
      if (!threads.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        for (RunningTask t : running.values()) {
          stop(t, RunningTask.StopReason.SHUTDOWN);
        }
        if (!threads.awaitTermination(10, TimeUnit.SECONDS)) {
          log.warn("pgtask: {} task(s) ignored interruption at shutdown; their transactions end with the process",
              running.size());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      watchdog.shutdownNow();
    }
  }

  private void stop(RunningTask t, RunningTask.StopReason reason) {
    if (!t.requestStop(reason)) {
      return;
    }
    synchronized (t) {
      // under the task's lock: the connection cannot go back to the pool meanwhile
      Connection c = t.rawConnection();
      if (c == null) {
        return;
      }
      t.thread.interrupt();
      try {
        c.unwrap(PGConnection.class).cancelQuery();
      } catch (Exception e) {
        log.debug("pgtask: could not cancel the running statement of task {}", t.claimed.id(), e);
      }
    }
  }

  private void run(Claimed c) {
    Fence fence = new Fence(c.id(), config.workerId(), c.attempt());
    MDC.put("pgtask.task_id", Long.toString(c.id()));
    MDC.put("pgtask.kind", c.kind());
    MDC.put("pgtask.queue", c.queue());
    MDC.put("pgtask.attempt", Integer.toString(c.attempt()));
    try {
      if (stopping) {
        release(fence, Duration.ZERO);
        return;
      }
      HandlerEntry<?> handler = config.handlers().get(c.kind());
      Duration timeout = handler.options().timeout() != null ? handler.options().timeout() : config.taskTimeout();
      execute(c, fence, handler, timeout);
    } catch (RuntimeException e) {
      log.error("pgtask: unexpected failure around task {}; it will be rescued after its lease", c.id(), e);
    } finally {
      MDC.remove("pgtask.task_id");
      MDC.remove("pgtask.kind");
      MDC.remove("pgtask.queue");
      MDC.remove("pgtask.attempt");
    }
  }

  private <T> void execute(Claimed c, Fence fence, HandlerEntry<T> handler, Duration timeout) {
    JsonNode payloadNode;
    T payload;
    try {
      payloadNode = config.objectMapper().readTree(c.payload().data());
      payload = JsonNode.class.equals(handler.payloadType())
          ? handler.payloadType().cast(payloadNode)
          : config.objectMapper().treeToValue(payloadNode, handler.payloadType());
    } catch (Exception e) {
      // never echo the payload: Jackson's messages quote it
      recordOutcome(null, fence, Outcome.discard("payload does not match " + handler.payloadType().getName()
          + " (" + e.getClass().getSimpleName() + ")"));
      return;
    }
    long serverTimeoutMillis = timeout.toMillis() + Math.max(5_000, timeout.toMillis() / 10);
    RunningTask task = new RunningTask(c, fence, c.claimedAt().plus(timeout), config.workerId(), payloadNode);
    Connection conn;
    try {
      conn = config.dataSource().getConnection();
    } catch (SQLException e) {
      log.warn("pgtask: no connection to run task {}: {}", c.id(), e.getMessage());
      release(fence, Duration.ZERO);
      return;
    }
    Outcome outcome;
    ScheduledFuture<?> timer = null;
    try {
      conn.setAutoCommit(false);
      DSLContext tx = Sql.using(conn);
      LockResult lock = ExecuteQueries.lockForExecution(tx, fence,
          truncate("pgtask task " + c.id() + " " + config.workerId()), serverTimeoutMillis,
          config.tenantLockNamespace());
      if (lock == LockResult.FENCED_OUT) {
        conn.rollback();
        log.info("pgtask: task {} attempt {} is no longer ours; abandoned", c.id(), c.attempt());
        return;
      }
      if (lock == LockResult.TENANT_BUSY) {
        conn.rollback();
        stats.deferred.incrementAndGet();
        finish(conn, fence, Outcome.release(config.tenantDeferDelay()));
        return;
      }
      task.attach(conn, tx);
      running.put(c.id(), task);
      timer = watchdog.schedule(() -> stop(task, RunningTask.StopReason.TIMED_OUT), timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (stopping && task.requestStop(RunningTask.StopReason.SHUTDOWN)) {
        conn.rollback();
        outcome = Outcome.release(Duration.ZERO);
      } else {
        outcome = runHandler(handler, task, payload, tx, conn);
      }
    } catch (SQLException | RuntimeException e) {
      // the task's own statements failed (connection lost, server timeout, ...)
      outcome = Outcome.retry(describe(e), backoff(c.attempt()));
      rollbackQuietly(conn);
    } finally {
      if (timer != null) {
        timer.cancel(false);
      }
      running.remove(c.id());
      task.detach();
      Thread.interrupted(); // an interrupt meant for the handler must not hit the bookkeeping
    }
    try {
      if (outcome != null) {
        finish(conn, fence, outcome);
      }
    } finally {
      closeQuietly(conn);
    }
  }

  /** Runs the handler and commits on success; returns the outcome to record, or null when committed. */
  private <T> Outcome runHandler(HandlerEntry<T> handler, RunningTask task, T payload, DSLContext tx, Connection conn)
      throws SQLException {
    Claimed c = task.claimed;
    try {
      handler.handler().handle(task, payload);
      RunningTask.StopReason stop = task.stopReason();
      if (stop != RunningTask.StopReason.NONE) {
        conn.rollback();
        return outcomeOfStop(task, stop);
      }
      if (ExecuteQueries.complete(tx, task.fence) != 1) {
        conn.rollback();
        log.info("pgtask: task {} attempt {} was taken from this worker; rolled back", c.id(), c.attempt());
        return null;
      }
      conn.commit();
      stats.completed.incrementAndGet();
      return null;
    } catch (Throwable t) {
      rollbackQuietly(conn);
      RunningTask.StopReason stop = task.stopReason();
      if (stop != RunningTask.StopReason.NONE) {
        return outcomeOfStop(task, stop);
      }
      if (t instanceof Error e && !(t instanceof AssertionError) && !(t instanceof StackOverflowError)) {
        throw e;
      }
      if (t instanceof SnoozeTaskException s) {
        return Outcome.snooze(s.delay());
      }
      if (t instanceof DiscardTaskException d) {
        return Outcome.discard("discarded by handler: " + d.getMessage());
      }
      if (t instanceof RetryTaskException r) {
        return Outcome.retry(describe(t), r.delay());
      }
      log.warn("pgtask: task {} attempt {} failed: {}", c.id(), c.attempt(), t.toString());
      return Outcome.retry(describe(t), backoff(c.attempt()));
    }
  }

  private Outcome outcomeOfStop(RunningTask task, RunningTask.StopReason stop) {
    return switch (stop) {
      case CANCELLED -> Outcome.cancelled();
      case SHUTDOWN -> Outcome.release(Duration.ZERO);
      case TIMED_OUT -> Outcome.retry("timed out after "
          + Duration.between(task.claimed.claimedAt(), task.deadline).toMillis() + " ms", backoff(task.claimed.attempt()));
      case NONE -> throw new IllegalStateException();
    };
  }

  /** Records an outcome in a short transaction on the (rolled back) task connection. */
  private void finish(Connection conn, Fence fence, Outcome outcome) {
    try {
      conn.setAutoCommit(true);
      recordOutcome(Sql.using(conn), fence, outcome);
    } catch (SQLException | RuntimeException e) {
      log.warn("pgtask: could not record the outcome of task {} ({}); it will be rescued after its lease",
          fence.id(), e.getMessage());
    }
  }

  private void recordOutcome(DSLContext dsl, Fence fence, Outcome o) {
    DSLContext ctx = dsl != null ? dsl : Sql.using(config.dataSource());
    switch (o.kind) {
      case RETRY, DISCARD -> {
        TaskState state = ExecuteQueries.fail(ctx, fence, o.error, o.delay, o.kind == Outcome.Kind.DISCARD);
        if (state == TaskState.discarded) {
          stats.discarded.incrementAndGet();
        } else if (state == TaskState.retryable) {
          stats.retried.incrementAndGet();
        }
      }
      case RELEASE -> {
        if (ExecuteQueries.release(ctx, fence, o.delay) == 1 && o.delay.isZero()) {
          stats.released.incrementAndGet();
        }
      }
      case SNOOZE -> ExecuteQueries.snooze(ctx, fence, o.delay);
      case CANCELLED -> {
        if (ExecuteQueries.cancelled(ctx, fence, "cancelled while running") == 1) {
          stats.cancelled.incrementAndGet();
        }
      }
    }
  }

  private void release(Fence fence, Duration delay) {
    try {
      recordOutcome(null, fence, Outcome.release(delay));
    } catch (RuntimeException e) {
      log.warn("pgtask: could not release task {} ({}); it will be rescued after its lease", fence.id(), e.getMessage());
    }
  }

  /** Exponential backoff with ±10% jitter: base * 2^(attempt-1), capped. */
  Duration backoff(int attempt) {
    long base = config.retryBackoffBase().toMillis();
    long cap = config.retryBackoffCap().toMillis();
    long d = attempt >= 62 ? cap : Math.min(cap, base * (1L << Math.max(0, attempt - 1)));
    if (d < 0) {
      d = cap;
    }
    long jitter = d / 10;
    long j = jitter > 0 ? ThreadLocalRandom.current().nextLong(-jitter, jitter + 1) : 0;
    return Duration.ofMillis(Math.max(0, d + j));
  }

  private static String describe(Throwable t) {
    String s = t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    String state = Sql.sqlState(t);
    if (state != null && !s.contains(state)) {
      s += " (SQLSTATE " + state + ")";
    }
    return s.length() > MAX_ERROR_LENGTH ? s.substring(0, MAX_ERROR_LENGTH) + "…" : s;
  }

  private static String truncate(String appName) {
    return appName.length() > 63 ? appName.substring(0, 63) : appName;
  }

  private static void rollbackQuietly(Connection c) {
    try {
      if (!c.getAutoCommit()) {
        c.rollback();
      }
    } catch (SQLException ignored) {
      // the connection is gone; the server rolled back
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException ignored) {
      // nothing to do
    }
  }

  /** What to record after an attempt that did not commit its completion. */
  private record Outcome(Kind kind, String error, Duration delay) {
    enum Kind { RETRY, DISCARD, RELEASE, SNOOZE, CANCELLED }

    static Outcome retry(String error, Duration delay) {
      return new Outcome(Kind.RETRY, error, delay);
    }

    static Outcome discard(String error) {
      return new Outcome(Kind.DISCARD, error, Duration.ZERO);
    }

    static Outcome release(Duration delay) {
      return new Outcome(Kind.RELEASE, null, delay);
    }

    static Outcome snooze(Duration delay) {
      return new Outcome(Kind.SNOOZE, null, delay);
    }

    static Outcome cancelled() {
      return new Outcome(Kind.CANCELLED, null, Duration.ZERO);
    }
  }
}
