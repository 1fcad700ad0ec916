package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.DiscardTaskException;
import dev.pgtask.HandlerOptions;
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
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs claimed tasks on {@code concurrency} executor threads.
 *
 * <p>Transactional tasks (the default): a thread opens a transaction on a pooled connection and
 * {@link ExecuteQueries#lockForExecution re-locks the task's row with fencing} (not ours any
 * more: skip it) in the same statement that takes the tenant's transaction-scoped advisory lock
 * (busy: put the task back for a short delay without spending an attempt) and sets the
 * transaction-local application_name and server-side timeouts; runs the handler on that
 * transaction; marks the task completed; commits. A failing handler is rolled back and its outcome
 * (retry with backoff, discard, snooze, cancelled) is recorded by a fenced statement.
 *
 * <p>With commit batching ({@code commitBatch(n, t)}), a thread that finds more claimed tasks
 * waiting keeps its transaction open for them: it re-locks up to n of them in that one statement,
 * runs each inside its own savepoint (a failure rolls back to the savepoint only; the task's row
 * and tenant locks stay until its failure is recorded at commit), and commits after n tasks, after
 * t, or when nothing waits. Completions are written in one statement at commit.
 *
 * <p>A claim into an idle worker arrives with its first transactional task already re-locked in a
 * transaction the claim opened ({@link #submitStarted}): the thread that takes that task adopts the
 * transaction (ending its own first) instead of opening one.
 *
 * <p>Plain-mode kinds run outside any transaction; their completions are written in batches by the
 * {@link Completer}, which also keeps the leases of tasks held without a transaction alive.
 *
 * <p>A watchdog interrupts handlers at their deadline and cancels their running statement; the
 * transaction also carries server-side timeouts a little above the task timeout, so a frozen JVM
 * cannot hold a row or a tenant lock for ever.
 */
public final class Executor {

  private static final Logger log = LoggerFactory.getLogger(Executor.class);
  private static final int MAX_ERROR_LENGTH = 2_000;
  /** How long a cancellation for a task not claimed here is kept, in case its claim is registered late. */
  static final int UNCLAIMED_CANCEL_SECONDS = 60;
  private static final long UNCLAIMED_CANCEL_NANOS = TimeUnit.SECONDS.toNanos(UNCLAIMED_CANCEL_SECONDS);

  private final WorkerConfig config;
  private final WorkerStats stats;
  private final List<Thread> threads = new ArrayList<>();
  private final ScheduledExecutorService watchdog;
  private final LinkedBlockingDeque<Claimed> ready = new LinkedBlockingDeque<>();
  private final Map<Long, RunningTask> running = new ConcurrentHashMap<>();
  // claim heads whose transaction the producer opened (ClaimQueries.claimAndStart), by task id
  private final Map<Long, Group> started = new ConcurrentHashMap<>();
  // the tasks claimed here and not yet handled: task id -> attempt
  private final Map<Long, Integer> claimedHere = new ConcurrentHashMap<>();
  // cancellations of tasks claimed here that had not started when they arrived (see cancel)
  private final java.util.Set<Long> cancelBeforeStart = ConcurrentHashMap.newKeySet();
  // cancellations of tasks not (yet) claimed here: task id -> {attempt or -1, nanoTime received}
  private final Map<Long, long[]> cancelUnclaimed = new ConcurrentHashMap<>();
  private final Completer completer;
  private final Object capacityMonitor = new Object();
  private final int capacity;
  private int outstanding; // guarded by capacityMonitor: claimed tasks not yet handled
  private volatile boolean stopping;
  private volatile boolean stopped;

  public Executor(WorkerConfig config, WorkerStats stats) {
    this.config = config;
    this.stats = stats;
    this.capacity = config.concurrency() + config.prefetch();
    java.util.concurrent.ScheduledThreadPoolExecutor timers = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "pgtask-watchdog");
      t.setDaemon(true);
      return t;
    });
    timers.setRemoveOnCancelPolicy(true); // one timer per task, almost all cancelled: don't keep them queued
    this.watchdog = timers;
    this.completer = new Completer(config, stats, this::heldWithoutTransaction);
  }

  public void start() {
    for (int i = 0; i < config.concurrency(); i++) {
      Thread t = new Thread(this::loop, "pgtask-exec-" + (i + 1));
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    completer.start();
  }

  // ---- capacity, for the producer ----

  /**
   * Blocks until fewer than concurrency + prefetch claimed tasks are outstanding; returns how many
   * more may be claimed (at most {@code max}).
   */
  public int awaitCapacity(int max) throws InterruptedException {
    // with prefetch, wait for room for a good-sized claim: claiming one task per freed slot would
    // turn the claim round trip into the bottleneck and starve commit batching of waiting tasks
    int minClaim = config.prefetch() == 0 ? 1 : Math.max(1, Math.min(max, (config.prefetch() + 1) / 2));
    synchronized (capacityMonitor) {
      while (capacity - outstanding < minClaim) {
        capacityMonitor.wait();
      }
      return Math.min(max, capacity - outstanding);
    }
  }

  /** Whether no claimed task is waiting or running here: a task handed over now starts at once. */
  public boolean isIdle() {
    synchronized (capacityMonitor) {
      return outstanding == 0;
    }
  }

  /**
   * Hands claimed tasks to the executor threads, the claim's head first, with the transaction the
   * claim opened for it (its row and tenant locks taken as {@code headLock} says).
   */
  public void submitStarted(List<Claimed> tasks, Connection transaction, long headId, LockResult headLock) {
    Group g = new Group(transaction, config.commitBatchSize() > 1);
    g.prelocked.put(headId, headLock);
    Claimed head = null;
    List<Claimed> rest = new ArrayList<>(tasks.size());
    for (Claimed c : tasks) {
      if (c.id() == headId) {
        head = c;
      } else {
        rest.add(c);
      }
    }
    if (head == null) { // cannot happen: the head is one of the claimed tasks
      g.abandon();
      submitAll(tasks);
      return;
    }
    claimed(tasks);
    started.put(headId, g);
    ready.offerFirst(head);
    ready.addAll(rest);
  }

  /**
   * The plain-mode kinds (run outside any transaction unless the task has a tenant), for the claim
   * that picks its head among the others.
   */
  public List<String> plainKinds() {
    List<String> kinds = new ArrayList<>();
    config.handlers().forEach((kind, h) -> {
      if (h.options().mode() == HandlerOptions.Mode.PLAIN) {
        kinds.add(kind);
      }
    });
    return kinds;
  }

  /** {"kind": "millis"}: the server-side timeouts of each kind's task transaction. */
  public org.postgresql.util.PGobject serverTimeouts() {
    Map<String, String> millis = new java.util.TreeMap<>();
    config.handlers().forEach((kind, h) -> millis.put(kind, Long.toString(serverTimeoutMillis(h))));
    org.postgresql.util.PGobject value = new org.postgresql.util.PGobject();
    value.setType("jsonb");
    try {
      value.setValue(config.objectMapper().writeValueAsString(millis));
    } catch (SQLException | com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    return value;
  }

  /** Hands claimed tasks to the executor threads. */
  public void submitAll(List<Claimed> tasks) {
    if (tasks.isEmpty()) {
      return;
    }
    claimed(tasks);
    ready.addAll(tasks);
  }

  /** Counts claimed tasks as outstanding here until {@link #handled} (the counterpart). */
  private void claimed(List<Claimed> tasks) {
    for (Claimed c : tasks) {
      claimedHere.put(c.id(), c.attempt());
    }
    if (!cancelUnclaimed.isEmpty()) {
      for (Claimed c : tasks) {
        long[] request = cancelUnclaimed.remove(c.id());
        if (request != null && matches(request, c.attempt())) {
          cancelBeforeStart.add(c.id());
        }
      }
    }
    synchronized (capacityMonitor) {
      outstanding += tasks.size();
    }
  }

  private static boolean matches(long[] request, int attempt) {
    return (request[0] < 0 || request[0] == attempt) && System.nanoTime() - request[1] < UNCLAIMED_CANCEL_NANOS;
  }

  private void handled(Claimed c) {
    claimedHere.remove(c.id());
    cancelBeforeStart.remove(c.id());
    synchronized (capacityMonitor) {
      outstanding--;
      capacityMonitor.notifyAll();
    }
  }

  /** Claimed tasks not yet handled (waiting or running). */
  public int inFlight() {
    synchronized (capacityMonitor) {
      return outstanding;
    }
  }

  /** The ids of the tasks whose handler is running here. */
  public List<Long> runningTaskIds() {
    return List.copyOf(running.keySet());
  }

  private List<Long> heldWithoutTransaction() {
    List<Long> ids = new ArrayList<>();
    for (Claimed c : ready) {
      ids.add(c.id());
    }
    for (RunningTask t : running.values()) {
      if (t.plain) {
        ids.add(t.claimed.id());
      }
    }
    return ids;
  }

  /**
   * Asks a running task to stop and end cancelled. Returns false when it does not run here. A task
   * claimed here that has not started yet ends cancelled without running when its turn comes: a
   * claim's head waiting for its thread, or a task locked ahead by a commit batch, has its row
   * locked, so {@code pgtask.cancel_task} could not cancel it at once and asked its worker.
   *
   * <p>{@code attempt} is the attempt the request was made for (-1: any); a request for another
   * attempt of the task is ignored. A request for a task not claimed here is kept for
   * {@value #UNCLAIMED_CANCEL_SECONDS} s and applied if this worker registers that claim meanwhile:
   * the claim-and-start re-locks its head in the claim's round trip, so the request can arrive
   * before the claim's answer is read.
   */
  public boolean cancel(long taskId, int attempt) {
    RunningTask t = running.get(taskId);
    if (t == null) {
      Integer claimedAttempt = claimedHere.get(taskId);
      if (claimedAttempt == null) {
        long now = System.nanoTime();
        cancelUnclaimed.values().removeIf(r -> now - r[1] >= UNCLAIMED_CANCEL_NANOS);
        cancelUnclaimed.put(taskId, new long[] {attempt, now});
        if (claimedHere.containsKey(taskId) && cancelUnclaimed.remove(taskId) != null) {
          return cancel(taskId, attempt); // registered meanwhile, without seeing the entry
        }
        return false;
      }
      if (attempt >= 0 && claimedAttempt != attempt) {
        return false;
      }
      cancelBeforeStart.add(taskId);
      t = running.get(taskId); // it may have started meanwhile, without seeing the entry
      if (t == null) {
        if (!claimedHere.containsKey(taskId)) { // or been handled meanwhile
          cancelBeforeStart.remove(taskId);
        }
        return false;
      }
      cancelBeforeStart.remove(taskId);
    }
    if (attempt >= 0 && t.claimed.attempt() != attempt) {
      return false;
    }
    stop(t, RunningTask.StopReason.CANCELLED);
    return true;
  }

  /**
   * Graceful stop: tasks not yet started are released at once; running tasks get until
   * {@code grace} to finish, then are interrupted, rolled back and released.
   */
  public void shutdown(Duration grace) {
    stopping = true;
    long deadline = System.nanoTime() + grace.toNanos();
    try {
      for (Thread t : threads) {
        long left = deadline - System.nanoTime();
        if (left > 0) {
          t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
      }
      if (threads.stream().anyMatch(Thread::isAlive)) {
        for (RunningTask t : running.values()) {
          stop(t, RunningTask.StopReason.SHUTDOWN);
        }
        for (Thread t : threads) {
          t.join(10_000);
        }
        if (threads.stream().anyMatch(Thread::isAlive)) {
          log.warn("pgtask: {} task(s) ignored interruption at shutdown; their transactions end with the process",
              running.size());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      stopped = true;
      completer.stop();
      watchdog.shutdownNow();
    }
  }

  private void stop(RunningTask t, RunningTask.StopReason reason) {
    if (!t.requestStop(reason)) {
      return;
    }
    synchronized (t) {
      // under the task's lock: its connection cannot move on to other work meanwhile
      if (t.detached()) {
        return;
      }
      t.thread.interrupt();
      Connection c = t.rawConnection();
      if (c != null) {
        try {
          c.unwrap(PGConnection.class).cancelQuery();
        } catch (Exception e) {
          log.debug("pgtask: could not cancel the running statement of task {}", t.claimed.id(), e);
        }
      }
    }
  }

  // ---- executor threads ----

  private void loop() {
    Group group = null;
    while (true) {
      Claimed c;
      try {
        if (group != null && !group.pending.isEmpty()) {
          c = group.pending.poll();
        } else if (group != null) {
          c = ready.poll();
        } else if (stopping) {
          c = ready.poll();
          if (c == null) {
            return;
          }
        } else {
          c = ready.poll(200, TimeUnit.MILLISECONDS);
          if (c == null) {
            continue;
          }
        }
      } catch (InterruptedException e) {
        continue; // only stop requests interrupt: the loop checks the flags
      }
      if (c == null) {
        commit(group);
        group = null;
        continue;
      }
      Group opened = started.remove(c.id());
      if (opened != null) {
        // a claim's head, whose transaction the claim opened: this thread's transaction ends first
        // (its next task must not wait for a row lock that a transaction without a thread holds)
        commit(group);
        group = opened;
      }
      try {
        if (stopping) {
          if (group != null && group.prelocked.containsKey(c.id())) {
            // its row is locked by the group's transaction: released there, at commit
            group.record(c, Outcome.release(), System.nanoTime());
          } else {
            releaseUnstarted(c);
          }
          continue;
        }
        HandlerEntry<?> handler = config.handlers().get(c.kind());
        if (runsPlain(c)) {
          if (group != null) {
            commit(group);
            group = null;
          }
          withMdc(c, () -> runPlain(c, handler));
          continue;
        }
        if (group == null) {
          group = Group.open(config);
          if (group == null) {
            releaseUnstarted(c);
            continue;
          }
        }
        Group g = group;
        if (!g.prelocked.containsKey(c.id())) {
          prelock(g, c);
        }
        withMdc(c, () -> runInGroup(g, c, handler));
        if (g.broken || (g.pending.isEmpty() && (g.size() >= config.commitBatchSize()
            || System.nanoTime() - g.startNanos >= config.commitBatchTime().toNanos()))) {
          commit(g);
          group = null;
        }
      } catch (RuntimeException e) {
        log.error("pgtask: unexpected failure around task {}; it will be rescued after its lease", c.id(), e);
      } finally {
        handled(c);
        Thread.interrupted(); // an interrupt meant for a handler must not hit the next task
      }
    }
  }

  /**
   * Locks {@code first} for execution in the group's transaction; with commit batching, also up to
   * the batch's remaining room of waiting transactional tasks, all in one round trip (their rows
   * and tenant locks are held by the group's transaction until it commits either way). They run
   * next, in claim order.
   */
  private void prelock(Group g, Claimed first) {
    List<Claimed> chunk = new ArrayList<>();
    chunk.add(first);
    int room = config.commitBatchSize() - g.size() - 1;
    while (room > 0) {
      Claimed next = ready.poll();
      if (next == null) {
        break;
      }
      // a plain task runs outside; a claim's head is locked by its own transaction already (locking
      // it here would wait for that transaction, which waits for a thread)
      if (runsPlain(next) || started.containsKey(next.id())) {
        ready.offerFirst(next);
        break;
      }
      chunk.add(next);
      room--;
    }
    long serverTimeoutMillis = 0;
    List<Fence> fences = new ArrayList<>(chunk.size());
    for (Claimed c : chunk) {
      fences.add(fence(c));
      serverTimeoutMillis = Math.max(serverTimeoutMillis, serverTimeoutMillis(config.handlers().get(c.kind())));
    }
    Map<Long, LockResult> locks;
    try {
      locks = ExecuteQueries.lockForExecution(g.conn, fences, applicationName(first), serverTimeoutMillis,
          config.tenantLockNamespace());
    } catch (SQLException | RuntimeException e) {
      g.broken = true;
      g.failure = e;
      locks = Map.of();
    }
    for (Claimed c : chunk) {
      g.prelocked.put(c.id(), g.broken ? LockResult.LOCKED : locks.getOrDefault(c.id(), LockResult.FENCED_OUT));
    }
    g.pending.addAll(chunk.subList(1, chunk.size()));
  }

  private void releaseUnstarted(Claimed c) {
    Fence fence = fence(c);
    try {
      TaskState state = ExecuteQueries.release(Sql.using(config.dataSource()), fence, Duration.ZERO);
      if (state == TaskState.available) {
        stats.released.incrementAndGet();
        config.metrics().finished(c.queue(), c.kind(), "released", Duration.ZERO);
      } else if (state == TaskState.cancelled) { // a cancellation was requested while it was held
        stats.cancelled.incrementAndGet();
        config.metrics().finished(c.queue(), c.kind(), "cancelled", Duration.ZERO);
      }
    } catch (RuntimeException e) {
      log.warn("pgtask: could not release task {} ({}); it will be rescued after its lease", c.id(), e.getMessage());
    }
  }

  private Fence fence(Claimed c) {
    return new Fence(c.id(), config.workerId(), c.attempt());
  }

  /** Runs one transactional task, locked by {@link #prelock}, inside the group's open transaction. */
  private <T> void runInGroup(Group g, Claimed c, HandlerEntry<T> handler) {
    Fence fence = fence(c);
    long startNanos = System.nanoTime();
    Payload<T> payload;
    try {
      payload = parse(c, handler);
    } catch (Exception e) {
      g.record(c, payloadMismatch(handler, e), startNanos);
      return;
    }
    if (g.broken) {
      g.members.add(new Member(c, (Fence) null, startNanos));
      return;
    }
    LockResult lock = g.prelocked.get(c.id());
    if (lock == LockResult.FENCED_OUT) {
      log.info("pgtask: task {} attempt {} is no longer ours; abandoned", c.id(), c.attempt());
      return;
    }
    if (lock == LockResult.TENANT_BUSY) {
      stats.deferred.incrementAndGet();
      config.metrics().tenantDeferred(c.queue());
      g.record(c, Outcome.defer(config.tenantDeferDelay()), startNanos);
      return;
    }
    Duration timeout = timeout(handler);
    RunningTask task = new RunningTask(c, fence, c.claimedAt().plus(timeout), config.workerId(), payload.node(), false);
    // with commit batching the task's savepoint is opened lazily, before the handler's first
    // database call: a handler that does no database work needs none
    boolean[] savepoint = new boolean[1];
    Connection handlerConnection = TaskConnection.wrap(g.conn, () -> {
      if (g.batching) {
        // one round trip (the driver pipelines both statements): the savepoint, and
        // application_name naming this task (a batch's lock statement named its first task)
        try (PreparedStatement ps = g.conn.prepareStatement(
            "SAVEPOINT pgtask_task; SELECT set_config('application_name', ?, true)")) {
          ps.setString(1, applicationName(c));
          ps.execute();
        }
        savepoint[0] = true;
      }
    });
    task.attach(handlerConnection, Sql.using(handlerConnection), g.conn);
    Outcome outcome = supervise(task, handler, payload.value(), timeout);
    // Success keeps the handler's work, failure undoes it: back to the savepoint, or the whole
    // (single-task) transaction. The savepoint is then released, so the next task's row lock and
    // the completions at commit are taken by the top-level transaction: a row locked by one
    // subtransaction and updated by another would make PostgreSQL create a MultiXact per task.
    try {
      if (outcome != null && !g.batching) {
        g.conn.rollback();
      }
      // batching without a savepoint: the handler never touched the database, nothing to undo
      if (savepoint[0]) {
        try (Statement st = g.conn.createStatement()) {
          st.execute(outcome != null ? "ROLLBACK TO SAVEPOINT pgtask_task; RELEASE SAVEPOINT pgtask_task"
              : "RELEASE SAVEPOINT pgtask_task");
        }
      }
    } catch (SQLException e) {
      g.broken = true;
      g.failure = e;
      g.members.add(new Member(c, (Fence) null, startNanos));
      return;
    }
    if (outcome == null) {
      g.completed.add(new Member(c, fence, startNanos));
    } else {
      g.record(c, outcome, startNanos);
    }
  }

  /** Runs the handler; returns null on success (completion pending), else what to record. */
  private <T> Outcome runHandler(HandlerEntry<T> handler, RunningTask task, T payload) {
    Claimed c = task.claimed;
    try {
      handler.handler().handle(task, payload);
      return task.stopReason() == RunningTask.StopReason.NONE ? null : outcomeOfStop(task);
    } catch (Throwable t) {
      if (task.stopReason() != RunningTask.StopReason.NONE) {
        return outcomeOfStop(task);
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

  private Outcome outcomeOfStop(RunningTask task) {
    return switch (task.stopReason()) {
      case CANCELLED -> Outcome.cancelled();
      case SHUTDOWN -> Outcome.release();
      case TIMED_OUT -> Outcome.retry("timed out after "
          + Duration.between(task.claimed.claimedAt(), task.deadline).toMillis() + " ms", backoff(task.claimed.attempt()));
      case NONE -> throw new IllegalStateException("not stopped");
    };
  }

  /** Writes the group's completions and outcomes, commits, and reports; on failure, retries each task. */
  private void commit(Group g) {
    if (g == null) {
      return;
    }
    // tasks locked ahead but not run (the transaction broke): they share its fate below
    while (!g.pending.isEmpty()) {
      Claimed c = g.pending.poll();
      g.members.add(new Member(c, (Fence) null, System.nanoTime()));
      handled(c);
    }
    try {
      if (!g.broken) {
        List<Fence> fences = new ArrayList<>(g.completed.size());
        for (Member m : g.completed) {
          fences.add(m.fence);
        }
        int done;
        if (g.outcomes.isEmpty()) {
          done = ExecuteQueries.completeAllAndCommit(g.conn, fences);
        } else {
          done = ExecuteQueries.completeAll(g.conn, fences);
          for (Member m : g.outcomes) {
            recordOutcome(g.tx, m.claimed, m.outcome, m.startNanos);
          }
          g.conn.commit();
        }
        if (done != fences.size()) {
          // cannot happen while the rows stay locked from the re-lock to the commit
          log.warn("pgtask: {} of {} completions were fenced out at commit", fences.size() - done, fences.size());
        }
        for (Member m : g.completed) {
          stats.completed.incrementAndGet();
          report(m.claimed, "completed", m.startNanos);
        }
        for (Member m : g.outcomes) {
          countOutcome(m);
        }
        g.close();
        return;
      }
    } catch (SQLException | RuntimeException e) {
      g.broken = true;
      g.failure = e;
    }
    // the transaction is lost with everything in it: each of its tasks gets a fenced retry
    String why = "task transaction failed: " + describe(g.failure);
    log.warn("pgtask: {} ({} task(s) affected)", why, g.completed.size() + g.outcomes.size() + g.members.size());
    g.abandon();
    List<Claimed> affected = new ArrayList<>();
    g.completed.forEach(m -> affected.add(m.claimed));
    g.outcomes.forEach(m -> affected.add(m.claimed));
    g.members.forEach(m -> affected.add(m.claimed));
    DSLContext dsl = Sql.using(config.dataSource());
    for (Claimed c : affected) {
      try {
        TaskState state = ExecuteQueries.fail(dsl, fence(c), why, backoff(c.attempt()), false);
        if (state == TaskState.retryable) {
          stats.retried.incrementAndGet();
        } else if (state == TaskState.cancelled) {
          stats.cancelled.incrementAndGet();
        }
      } catch (RuntimeException e) {
        log.warn("pgtask: could not record the failure of task {} ({}); it will be rescued after its lease",
            c.id(), e.getMessage());
      }
    }
  }

  private void recordOutcome(DSLContext dsl, Claimed c, Outcome o, long startNanos) {
    Fence fence = fence(c);
    switch (o.kind) {
      case RETRY, DISCARD -> o.resultState = ExecuteQueries.fail(dsl, fence, o.error, o.delay, o.kind == Outcome.Kind.DISCARD);
      case RELEASE, DEFER -> {
        o.resultState = ExecuteQueries.release(dsl, fence, o.delay);
        o.applied = o.resultState != null;
      }
      case SNOOZE -> {
        o.resultState = ExecuteQueries.snooze(dsl, fence, o.delay);
        o.applied = o.resultState != null;
      }
      case CANCELLED -> o.applied = ExecuteQueries.cancelled(dsl, fence, "cancelled while running") == 1;
    }
  }

  private void countOutcome(Member m) {
    Outcome o = m.outcome;
    // any of them ends cancelled when a cancellation was requested while the task ran
    String name = o.resultState == TaskState.cancelled ? "cancelled" : switch (o.kind) {
      case RETRY, DISCARD -> o.resultState == TaskState.discarded ? "discarded"
          : o.resultState == TaskState.retryable ? "retried" : null;
      case RELEASE -> o.applied ? "released" : null;
      case DEFER -> null;
      case SNOOZE -> o.applied ? "snoozed" : null;
      case CANCELLED -> o.applied ? "cancelled" : null;
    };
    if (name == null) {
      return;
    }
    switch (name) {
      case "discarded" -> stats.discarded.incrementAndGet();
      case "retried" -> stats.retried.incrementAndGet();
      case "released" -> stats.released.incrementAndGet();
      case "cancelled" -> stats.cancelled.incrementAndGet();
      default -> { }
    }
    report(m.claimed, name, m.startNanos);
  }

  private void report(Claimed c, String outcome, long startNanos) {
    config.metrics().finished(c.queue(), c.kind(), outcome, Duration.ofNanos(System.nanoTime() - startNanos));
  }

  // ---- plain mode ----

  private <T> void runPlain(Claimed c, HandlerEntry<T> handler) {
    Fence fence = fence(c);
    long startNanos = System.nanoTime();
    Payload<T> payload;
    try {
      payload = parse(c, handler);
    } catch (Exception e) {
      finishPlain(c, payloadMismatch(handler, e), startNanos);
      return;
    }
    Duration timeout = timeout(handler);
    RunningTask task = new RunningTask(c, fence, c.claimedAt().plus(timeout), config.workerId(), payload.node(), true);
    Outcome outcome = supervise(task, handler, payload.value(), timeout);
    if (outcome == null) {
      completer.complete(c, fence, startNanos);
    } else {
      finishPlain(c, outcome, startNanos);
    }
  }

  private void finishPlain(Claimed c, Outcome o, long startNanos) {
    try {
      recordOutcome(Sql.using(config.dataSource()), c, o, startNanos);
      countOutcome(new Member(c, o, startNanos));
    } catch (RuntimeException e) {
      log.warn("pgtask: could not record the outcome of task {} ({}); it will be rescued after its lease",
          c.id(), e.getMessage());
    }
  }

  // ---- helpers ----

  /**
   * Runs the handler under the watchdog (interrupted at {@code timeout}) and visible to
   * {@link #cancel} and shutdown; returns null on success, else what to record.
   */
  private <T> Outcome supervise(RunningTask task, HandlerEntry<T> handler, T payload, Duration timeout) {
    ScheduledFuture<?> timer = null;
    try {
      running.put(task.claimed.id(), task);
      if (cancelBeforeStart.remove(task.claimed.id())) {
        task.requestStop(RunningTask.StopReason.CANCELLED);
      }
      timer = watchdog.schedule(() -> stop(task, RunningTask.StopReason.TIMED_OUT), timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (stopping) {
        task.requestStop(RunningTask.StopReason.SHUTDOWN);
      }
      return task.stopReason() == RunningTask.StopReason.NONE ? runHandler(handler, task, payload) : outcomeOfStop(task);
    } finally {
      if (timer != null) {
        timer.cancel(false);
      }
      running.remove(task.claimed.id());
      task.detach();
      Thread.interrupted();
    }
  }

  /** A task's payload as JSON and as the handler's type. */
  private record Payload<T>(JsonNode node, T value) {}

  private <T> Payload<T> parse(Claimed c, HandlerEntry<T> handler) throws Exception {
    JsonNode node = config.objectMapper().readTree(c.payload().data());
    T value = JsonNode.class.equals(handler.payloadType())
        ? handler.payloadType().cast(node)
        : config.objectMapper().treeToValue(node, handler.payloadType());
    return new Payload<>(node, value);
  }

  /** Plain-mode kinds run outside any transaction, except tasks with a tenant. */
  private boolean runsPlain(Claimed c) {
    return config.handlers().get(c.kind()).options().mode() == HandlerOptions.Mode.PLAIN && c.tenantId() == null;
  }

  /** Transaction-local {@code application_name} while {@code c} runs: which task, on which worker. */
  private String applicationName(Claimed c) {
    return truncate("pgtask task " + c.id() + " " + config.workerId());
  }

  /** The server-side statement and idle timeouts of a task transaction: a little above the task timeout. */
  private long serverTimeoutMillis(HandlerEntry<?> handler) {
    long t = timeout(handler).toMillis();
    return t + Math.max(5_000, t / 10);
  }

  /** A payload that does not deserialize never will: discard, naming the field but no value (see PayloadErrors). */
  private static Outcome payloadMismatch(HandlerEntry<?> handler, Exception e) {
    String why = PayloadErrors.describe(handler.payloadType(), e);
    log.warn("pgtask: a {} task is discarded: {}", handler.kind(), why);
    return Outcome.discard(why);
  }

  private Duration timeout(HandlerEntry<?> handler) {
    return handler.options().timeout() != null ? handler.options().timeout() : config.taskTimeout();
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

  static String describe(Throwable t) {
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

  private static void withMdc(Claimed c, Runnable r) {
    MDC.put("pgtask.task_id", Long.toString(c.id()));
    MDC.put("pgtask.kind", c.kind());
    MDC.put("pgtask.queue", c.queue());
    MDC.put("pgtask.attempt", Integer.toString(c.attempt()));
    try {
      r.run();
    } finally {
      MDC.remove("pgtask.task_id");
      MDC.remove("pgtask.kind");
      MDC.remove("pgtask.queue");
      MDC.remove("pgtask.attempt");
    }
  }

  /** A task of a group, with what happened to it. */
  record Member(Claimed claimed, Fence fence, Outcome outcome, long startNanos) {
    Member(Claimed claimed, Fence fence, long startNanos) {
      this(claimed, fence, null, startNanos);
    }

    Member(Claimed claimed, Outcome outcome, long startNanos) {
      this(claimed, null, outcome, startNanos);
    }
  }

  /** One open task transaction and the tasks it carries. */
  private static final class Group {
    final Connection conn;
    final DSLContext tx;
    final boolean batching;
    final long startNanos = System.nanoTime();
    final List<Member> completed = new ArrayList<>();
    final List<Member> outcomes = new ArrayList<>();
    final List<Member> members = new ArrayList<>(); // started but lost with a broken transaction
    final Map<Long, LockResult> prelocked = new java.util.HashMap<>(); // locked ahead (commit batching)
    final java.util.ArrayDeque<Claimed> pending = new java.util.ArrayDeque<>(); // prelocked, not yet run
    boolean broken;
    Throwable failure;

    private Group(Connection conn, boolean batching) {
      this.conn = conn;
      this.tx = Sql.using(conn);
      this.batching = batching;
    }

    static Group open(WorkerConfig config) {
      try {
        Connection c = config.dataSource().getConnection();
        try {
          c.setAutoCommit(false);
        } catch (SQLException e) {
          c.close();
          throw e;
        }
        return new Group(c, config.commitBatchSize() > 1);
      } catch (SQLException e) {
        log.warn("pgtask: no connection to run tasks: {}", e.getMessage());
        return null;
      }
    }

    int size() {
      return completed.size() + outcomes.size() + members.size();
    }

    void record(Claimed c, Outcome o, long startNanos) {
      outcomes.add(new Member(c, o, startNanos));
    }

    void close() {
      try {
        conn.setAutoCommit(true);
      } catch (SQLException ignored) {
        // the pool validates it
      }
      try {
        conn.close();
      } catch (SQLException ignored) {
        // nothing to do
      }
    }

    void abandon() {
      try {
        conn.rollback();
      } catch (SQLException ignored) {
        // the connection is gone; the server rolled back
      }
      close();
    }
  }

  /** What to record for an attempt that did not complete. */
  static final class Outcome {
    enum Kind { RETRY, DISCARD, RELEASE, DEFER, SNOOZE, CANCELLED }

    final Kind kind;
    final String error;
    final Duration delay;
    TaskState resultState;
    boolean applied;

    private Outcome(Kind kind, String error, Duration delay) {
      this.kind = kind;
      this.error = error;
      this.delay = delay;
    }

    static Outcome retry(String error, Duration delay) {
      return new Outcome(Kind.RETRY, error, delay);
    }

    static Outcome discard(String error) {
      return new Outcome(Kind.DISCARD, error, Duration.ZERO);
    }

    static Outcome release() {
      return new Outcome(Kind.RELEASE, null, Duration.ZERO);
    }

    static Outcome defer(Duration delay) {
      return new Outcome(Kind.DEFER, null, delay);
    }

    static Outcome snooze(Duration delay) {
      return new Outcome(Kind.SNOOZE, null, delay);
    }

    static Outcome cancelled() {
      return new Outcome(Kind.CANCELLED, null, Duration.ZERO);
    }
  }
}
