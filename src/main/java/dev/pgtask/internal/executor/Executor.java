package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.HandlerOptions;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries;
import dev.pgtask.internal.sql.ExecuteQueries.HeldState;
import dev.pgtask.internal.sql.ExecuteQueries.LockResult;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.postgresql.core.TransactionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs claimed tasks on {@code concurrency} executor threads. Each claimed task is one
 * {@link LocalTask} (its lifecycle state, written by the thread that runs it), registered in
 * {@link #held} from its claim until its outcome is durable; outcomes are decided by
 * {@link Outcomes} and written by {@link OutcomeWriter}.
 *
 * <p>Transactional tasks (the default) run in a {@link TaskTransaction}: the re-lock (fenced row
 * lock, tenant lock, transaction-local settings, cancel request) and the task's savepoint in one
 * round trip; the handler inside the savepoint; on success, the deferred-constraint check, the
 * savepoint's release, the completion and COMMIT in one round trip; on failure, back to the
 * savepoint and the outcome written in the same transaction, under the task's row and tenant
 * locks. With commit batching ({@code commitBatch(n, t)}) a transaction carries up to n tasks,
 * each in its own savepoint, locked ahead in one statement; if its COMMIT fails, each of its tasks
 * runs again in a transaction of its own, with no attempt charged, so only the culprit fails.
 *
 * <p>Plain-mode kinds run outside any transaction; their completions are written in batches by the
 * {@link Completer}. Before a plain task starts, the executor makes sure it is still this worker's
 * and not cancelled (see {@link #mayStartWithoutCheck}).
 *
 * <p>A watchdog stops handlers at their deadline; the task transaction also carries server-side
 * timeouts a little above the task timeout, so a frozen JVM cannot hold a row or a tenant lock for
 * ever. An executor thread never dies while the worker runs: whatever a handler throws is an
 * outcome, and a failure of pgtask's own code around a task is logged and the thread goes on.
 */
public final class Executor extends Service {

  private static final Logger log = LoggerFactory.getLogger(Executor.class);

  private final WorkerConfig config;
  private final Outcomes outcomes;
  final OutcomeWriter writer;
  final Completer completer;
  private final LeaseKeeper keeper;
  /** The executor threads' state, for the shutdown's last resort ({@link #abortTransactions}). */
  private final Set<Worker> workers = ConcurrentHashMap.newKeySet();
  final ScheduledThreadPoolExecutor watchdog;
  private final int concurrency;
  /** Claimed tasks that may wait for a thread; {@link dev.pgtask.PgTaskWorker#PREFETCH_AUTO}: by the recent pace. */
  private final int fixedPrefetch;
  private final RecentFinishes recentFinishes = new RecentFinishes();
  private final int batchCapacity;
  private final long batchTimeNanos;
  /** How long each kind's handlers ran lately: which tasks may share a transaction. */
  private final KindPace pace = new KindPace();
  /** Every task claimed here whose outcome is not durable yet. Written by the claim and by {@link #finished}. */
  private final Map<Long, LocalTask> held = new ConcurrentHashMap<>();
  /** Claimed tasks waiting for a thread, in claim order. */
  final LinkedBlockingDeque<LocalTask> ready = new LinkedBlockingDeque<>();
  /** Claim heads whose transaction the claim opened, by task id: taken by the thread that takes the head. */
  private final Map<Long, Adopted> adopted = new ConcurrentHashMap<>();
  private final Object registry = new Object();
  /** Verified cancel requests for tasks whose claim is not registered yet. Guarded by {@link #registry}. */
  private Set<Long> verifiedCancels = new HashSet<>();
  private final AtomicInteger claimsInFlight = new AtomicInteger();
  /**
   * Claimed tasks an executor thread has not let go of yet: the producer's capacity. A plain task
   * whose completion waits in the {@link Completer} is still held, but no longer occupies a slot.
   */
  private final AtomicInteger occupied = new AtomicInteger();
  private final Object capacityMonitor = new Object();
  private volatile LongSupplier listeningSince = () -> 0;
  private volatile boolean stopping;
  private volatile Runnable selfWake;
  // ExecuteQueries.WORKER_QUEUES_SETTING for this worker's completions
  private final String workerQueues;
  private volatile boolean closed;

  private record Adopted(Connection conn, LockResult lock) {}

  public Executor(WorkerConfig config, WorkerStats stats) {
    super("pgtask-exec", config.concurrency());
    this.config = config;
    this.outcomes = new Outcomes(config);
    this.writer = new OutcomeWriter(config, stats);
    this.concurrency = config.concurrency();
    this.fixedPrefetch = config.prefetch();
    this.batchCapacity = Math.max(1, config.commitBatchSize());
    this.batchTimeNanos = config.commitBatchTime().toNanos();
    this.workerQueues = ExecuteQueries.workerQueues(config.queues());
    this.watchdog = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "pgtask-watchdog");
      t.setDaemon(true);
      return t;
    });
    watchdog.setRemoveOnCancelPolicy(true); // one timer per task, almost all cancelled: don't keep them queued
    this.completer = new Completer(config, writer, this);
    this.keeper = new LeaseKeeper(config, this);
  }

  /** Starts the executor threads, the completer and the lease keeper. */
  public void startAll() {
    start();
    completer.start();
    keeper.start();
  }

  /**
   * Where the listener tells since when it listens without a break (System.nanoTime(), 0 while it
   * does not): a plain task claimed after that may start without a check of its own.
   */
  public void listeningSince(LongSupplier since) {
    this.listeningSince = since;
  }

  /** Where to say that a task this worker put back is due again after a delay (the producer's timer). */
  public void onDueIn(java.util.function.Consumer<Duration> dueIn) {
    writer.onDueIn(dueIn);
  }

  // ---- the claim's side ----

  /**
   * Blocks until fewer than concurrency + prefetch claimed tasks are held; returns how many more
   * may be claimed (at most {@code max}).
   */
  public int awaitCapacity(int max) throws InterruptedException {
    synchronized (capacityMonitor) {
      while (true) {
        int prefetch = prefetch();
        int room = concurrency + prefetch - occupied.get();
        if (room >= Math.min(max, minClaim(prefetch))) {
          return Math.min(max, room);
        }
        capacityMonitor.wait();
      }
    }
  }

  /**
   * How many claimed tasks may wait here for a thread now: the configured prefetch, or with the
   * default ({@link dev.pgtask.PgTaskWorker#PREFETCH_AUTO}) as many as this worker finished in the
   * last 100 ms, at most {@link #AUTO_PREFETCH_MAX}: a task claimed ahead waits here about 100 ms at
   * most at the recent pace, and a worker of long tasks claims only what it can start.
   */
  int prefetch() {
    return fixedPrefetch >= 0 ? fixedPrefetch : Math.min(AUTO_PREFETCH_MAX, recentFinishes.count(System.nanoTime()));
  }

  /** The most claimed tasks the adaptive prefetch lets wait here. */
  static final int AUTO_PREFETCH_MAX = 400;

  /**
   * With prefetch, wait for room for a good-sized claim: claiming one task per freed slot would turn
   * the claim round trip into the bottleneck and starve commit batching of waiting tasks.
   */
  private int minClaim(int prefetch) {
    return prefetch == 0 ? 1 : Math.max(1, Math.min(config.batchSize(), (prefetch + 1) / 2));
  }

  /** Tasks finished in the current and the previous 100-ms window (the larger count). */
  private static final class RecentFinishes {
    private static final long WINDOW = 100_000_000L;
    private long windowStart = System.nanoTime();
    private int current;
    private int previous;

    synchronized void add(long now) {
      roll(now);
      current++;
    }

    synchronized int count(long now) {
      roll(now);
      return Math.max(current, previous);
    }

    private void roll(long now) {
      long age = now - windowStart;
      if (age >= WINDOW) {
        previous = age < 2 * WINDOW ? current : 0;
        current = 0;
        windowStart = age < 2 * WINDOW ? windowStart + WINDOW : now;
      }
    }
  }

  /** Whether no claimed task is waiting or running here: a task handed over now starts at once. */
  public boolean isIdle() {
    return occupied.get() == 0;
  }

  /** The executor is done with {@code t} (its outcome may still be on its way): its slot is free. */
  void freeSlot(LocalTask t) {
    if (t.freeSlot()) {
      int now = occupied.decrementAndGet();
      int prefetch;
      if (fixedPrefetch >= 0) {
        prefetch = fixedPrefetch;
      } else {
        recentFinishes.add(System.nanoTime());
        prefetch = prefetch();
      }
      if (concurrency + prefetch - now >= minClaim(prefetch)) {
        synchronized (capacityMonitor) {
          capacityMonitor.notifyAll();
        }
      }
    }
  }

  /** A claim is about to be sent; returns the instant to hand to {@link #submitAll}. */
  public long claimStarting() {
    claimsInFlight.incrementAndGet();
    return System.nanoTime();
  }

  /**
   * The claim sent at {@code claimNanos} failed: its answer (and the tasks it may have claimed) is
   * lost. Puts back what this worker's claims left behind, at once instead of after the lease.
   */
  public void claimFailed() {
    claimsInFlight.decrementAndGet();
    releaseOrphans();
  }

  /** Hands claimed tasks to the executor threads. */
  public void submitAll(List<Claimed> tasks, long claimNanos) {
    List<LocalTask> local = register(tasks, claimNanos);
    if (closed) {
      local.forEach(t -> writeAlone(t, new Outcome.Released(), System.nanoTime()));
      return;
    }
    ready.addAll(local);
  }

  /**
   * Hands claimed tasks to the executor threads, the claim's head first, with the transaction the
   * claim opened for it (its row and tenant locks taken as {@code headLock} says, its savepoint open).
   */
  public void submitStarted(List<Claimed> tasks, Connection transaction, long headId, LockResult headLock,
      long claimNanos) {
    List<LocalTask> local = register(tasks, claimNanos);
    LocalTask head = null;
    for (LocalTask t : local) {
      if (t.id() == headId) {
        head = t;
      }
    }
    if (head == null || closed) {
      closeUnused(transaction);
      if (closed) {
        local.forEach(t -> writeAlone(t, new Outcome.Released(), System.nanoTime()));
      } else {
        ready.addAll(local);
      }
      return;
    }
    adopted.put(headId, new Adopted(transaction, headLock));
    ready.offerFirst(head);
    for (LocalTask t : local) {
      if (t != head) {
        ready.add(t);
      }
    }
  }

  List<LocalTask> register(List<Claimed> tasks, long claimNanos) {
    List<LocalTask> local = new ArrayList<>(tasks.size());
    synchronized (registry) {
      claimsInFlight.decrementAndGet();
      for (Claimed c : tasks) {
        LocalTask t = new LocalTask(c, config.workerId(), claimNanos, runsPlain(c));
        held.put(c.id(), t);
        occupied.incrementAndGet();
        if (verifiedCancels.remove(c.id())) {
          t.requestStop(LocalTask.Stop.CANCELLED);
        }
        local.add(t);
      }
    }
    return local;
  }

  /** The task's outcome is durable (or it was lost): it is no longer held here. */
  void finished(LocalTask t) {
    t.done();
    held.remove(t.id(), t);
    freeSlot(t);
  }

  /** Claimed tasks not finished yet (waiting or running). */
  public int inFlight() {
    return held.size();
  }

  /** The ids of the tasks whose handler is running here. */
  public List<Long> runningTaskIds() {
    List<Long> ids = new ArrayList<>();
    for (LocalTask t : held.values()) {
      if (t.state() == LocalTask.State.RUNNING) {
        ids.add(t.id());
      }
    }
    return ids;
  }

  List<LocalTask> held() {
    return new ArrayList<>(held.values());
  }

  /** The tasks whose lease must be kept alive: those no transaction of ours has locked. */
  /** The lease renewal, as work of the listener's session ({@link LeaseKeeper#sessionRenewal}). */
  public dev.pgtask.internal.notifier.SessionWork sessionRenewal() {
    return keeper.sessionRenewal();
  }

  List<LocalTask> heldWithoutTransaction() {
    List<LocalTask> out = new ArrayList<>();
    for (LocalTask t : held.values()) {
      LocalTask.State s = t.state();
      if (s == LocalTask.State.WAITING || (t.plain && s != LocalTask.State.DONE)) {
        out.add(t);
      }
    }
    return out;
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

  // ---- cancellations: hints, verified against durable state ----

  /**
   * A cancellation hint from the control channel naming {@code taskId}. It changes nothing by
   * itself: a task held here is checked before it starts, and the held tasks are read from the
   * database soon ({@link LeaseKeeper}); a hint naming a task not held here (nor possibly on its way
   * from a claim) is dropped without a read.
   */
  public void hint(long taskId) {
    LocalTask t = held.get(taskId);
    if (t != null) {
      t.markSuspect();
      keeper.requestCheck();
    } else if (claimsInFlight.get() > 0) {
      keeper.requestCheck();
    }
  }

  /** Whether a claim's answer may be on its way. */
  boolean claimInFlight() {
    return claimsInFlight.get() > 0;
  }

  /**
   * Asks for a check of the held tasks (cancel requests, claims no longer ours) soon, on the lease
   * keeper's thread: at each poll, so that a cancellation reaches a running task within a poll
   * interval even when its notification never arrives.
   */
  public void requestCheck() {
    keeper.requestCheck();
  }

  /** The listener is listening again: what it could not hear meanwhile is read from the database. */
  public void checkHeldNow() {
    keeper.check();
  }

  private final java.util.concurrent.atomic.AtomicLong checks = new java.util.concurrent.atomic.AtomicLong();
  private long lastAppliedCheck; // guarded by registry

  /** A held-task check is about to read: its number, for {@link #apply}. */
  long checkStarting() {
    return checks.incrementAndGet();
  }

  /**
   * Applies what {@link ExecuteQueries#checkHeld} found in check number {@code check}. Stop requests
   * apply whatever the order; the verified requests for unregistered claims are replaced only by a
   * check that started later than the one that last replaced them.
   */
  void apply(Map<Long, ExecuteQueries.Held> found, long check) {
    synchronized (registry) {
      Set<Long> unregistered = new HashSet<>();
      found.forEach((id, answer) -> {
        HeldState state = answer.state();
        LocalTask t = held.get(id);
        if (t == null) {
          if (state == HeldState.CANCEL_REQUESTED) {
            unregistered.add(id); // verified: owned by this worker, its claim's answer still on its way
          }
          return;
        }
        if (t.claimed.attempt() != answer.attempt()) {
          // about another attempt: an earlier one, rescued, that this worker held when the check
          // read, and has claimed again since (the held attempt is checked at the next read)
          return;
        }
        LocalTask.Stop stop = state == HeldState.CANCEL_REQUESTED ? LocalTask.Stop.CANCELLED : LocalTask.Stop.LOST;
        if (t.requestStop(stop)) {
          log.info("pgtask: task {} attempt {}: {}", id, t.claimed.attempt(),
              stop == LocalTask.Stop.CANCELLED ? "cancellation requested; stopping it" : "no longer this worker's; stopping it");
        }
      });
      if (check > lastAppliedCheck) {
        lastAppliedCheck = check;
        verifiedCancels = unregistered;
      } else {
        verifiedCancels.addAll(unregistered);
      }
    }
  }

  // ---- shutdown ----

  /**
   * How long a stop may take beyond the shutdown timeout: interrupted tasks roll back and are put
   * back within it, or have their connections aborted.
   */
  public static final Duration STOP_ALLOWANCE = Duration.ofSeconds(5);

  /**
   * Graceful stop: tasks not yet started are released at once; running tasks get until
   * {@code grace} to finish, then are interrupted and their statements cancelled. A task
   * transaction whose thread has not let go halfway through {@link #STOP_ALLOWANCE} has its
   * connection aborted (the server rolls it back and drops its locks; a thread blocked in a socket
   * read, e.g. waiting for a session pooler's server session, is freed). Then whatever this
   * worker's claims left without a holder is put back, in what is left of the allowance; what
   * cannot be put back in time is rescued once this worker's row is gone or expired. Returns
   * within {@code grace} plus the allowance.
   */
  public void shutdown(Duration grace) {
    stopping = true;
    long deadline = System.nanoTime() + grace.toNanos();
    long end = deadline + STOP_ALLOWANCE.toNanos();
    // what no thread has taken yet goes back now, not when a running task lets its thread go: the
    // put-back notifies the queues, and the other workers run those tasks while these finish
    bounded("pgtask-release-" + config.workerId(), this::releaseWaiting, deadline,
        "putting back the tasks not started yet");
    try {
      if (!awaitThreads(deadline)) {
        // each on a thread of its own: a stop request cancels the running statement, and a cancel
        // request to a server that does not answer waits (pgjdbc's cancelSignalTimeout, 10 s)
        for (LocalTask t : held.values()) {
          Thread stopper = new Thread(() -> t.requestStop(LocalTask.Stop.SHUTDOWN), "pgtask-stop-" + t.id());
          stopper.setDaemon(true);
          stopper.start();
        }
        if (!awaitThreads(deadline + STOP_ALLOWANCE.toNanos() / 2)) {
          int aborted = abortTransactions();
          if (!awaitThreads(deadline + STOP_ALLOWANCE.toNanos() * 3 / 4)) {
            log.warn("pgtask: {} task(s) still held at shutdown after their interruption ({} task connection(s) "
                + "aborted: the server rolls those back); the database does not answer or a handler ignores "
                + "interruption; what is left ends with the process", runningTaskIds().size(), aborted);
          } else if (aborted > 0) {
            log.warn("pgtask: aborted the connections of {} task transaction(s) that did not end after their "
                + "interruption at shutdown; the server rolls them back", aborted);
          }
        }
      }
    } finally {
      closed = true;
      stop(Duration.ZERO);
      keeper.stop(upTo(Duration.ofSeconds(5), end));
      completer.stop(upTo(Duration.ofSeconds(10), end));
      watchdog.shutdownNow();
      // both need a connection from the pool, which may have none to give: each waits at most what is left
      bounded("pgtask-flush-" + config.workerId(), completer::flushRemaining, end,
          "writing the outcomes of finished plain tasks");
      bounded("pgtask-release-" + config.workerId(), this::releaseOrphans, end,
          "putting back the tasks this worker no longer holds");
    }
  }

  /**
   * At shutdown: puts back the claimed tasks that wait for a thread (and ends the transaction a
   * claim opened for one of them, which holds its row).
   */
  private void releaseWaiting() {
    for (LocalTask t = ready.poll(); t != null; t = ready.poll()) {
      Adopted a = adopted.remove(t.id());
      if (a != null) {
        closeUnused(a.conn());
      }
      writeAlone(t, new Outcome.Released(), System.nanoTime());
    }
  }

  /** Rolls back and returns to the pool a transaction a claim opened that no task will use. */
  private static void closeUnused(Connection transaction) {
    try {
      transaction.rollback();
      transaction.setAutoCommit(true);
    } catch (SQLException ignored) {
      // the pool validates it
    }
    try {
      transaction.close();
    } catch (SQLException ignored) {
      // nothing to do
    }
  }

  /** {@code max}, or what is left until {@code deadline} when that is less (at least 100 ms). */
  private static Duration upTo(Duration max, long deadline) {
    long left = Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - System.nanoTime());
    return Duration.ofNanos(Math.min(max.toNanos(), left));
  }

  /** Runs {@code step} on a daemon thread and waits for it until {@code deadline} (at least 100 ms). */
  private void bounded(String thread, Runnable step, long deadline, String what) {
    boolean finished = dev.pgtask.internal.Bounded.run(thread, step,
        Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - System.nanoTime()),
        e -> log.warn("pgtask: {} failed at shutdown", what, e));
    if (!finished) {
      log.warn("pgtask: {} did not finish within the shutdown timeout (no connection from the pool?); the tasks "
          + "concerned are rescued once this worker's row is gone", what);
    }
  }

  /**
   * Aborts the connection of every open task transaction (JDBC {@code Connection.abort}: the socket is
   * closed at once, without waiting for the thread that uses it). Returns how many.
   */
  private int abortTransactions() {
    int n = 0;
    for (Worker w : workers) {
      TaskTransaction tx = w.tx;
      if (tx != null && tx.abort()) {
        n++;
      }
    }
    return n;
  }

  private void releaseOrphans() {
    List<Long> ids = new ArrayList<>(held.keySet());
    try (Connection c = config.dataSource().getConnection()) {
      int n;
      c.setAutoCommit(false);
      try (java.sql.Statement st = c.createStatement()) {
        // at shutdown nothing may wait long: a table locked by someone else keeps the rows for rescue
        st.execute("SET LOCAL lock_timeout = '1s'");
        n = ExecuteQueries.releaseOrphans(Sql.using(c), config.workerId(), ids);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
      if (n > 0) {
        log.info("pgtask: put back {} task(s) claimed by this worker that it no longer held", n);
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("pgtask: could not put back the tasks this worker's claims left behind ({}); they are rescued "
          + "after their lease", e.getMessage());
    }
  }

  // ---- executor threads ----

  /** A task transaction that ended before its commit; {@code culprit}, when known, caused it. */
  private static final class TransactionLost extends Exception {
    private static final long serialVersionUID = 1L;
    final transient LocalTask culprit;
    final boolean endedByHandler;

    TransactionLost(Throwable cause, LocalTask culprit, boolean endedByHandler) {
      super(cause);
      this.culprit = culprit;
      this.endedByHandler = endedByHandler;
    }
  }

  /** What one executor thread works on: its open transaction, and tasks to run alone. */
  final class Worker {
    /** Written by its thread; read by {@link #abortTransactions} at shutdown. */
    volatile TaskTransaction tx;
    /** Tasks of a failed commit batch: each runs again in a transaction of its own. */
    final ArrayDeque<LocalTask> alone = new ArrayDeque<>();
  }

  @Override
  protected void run(int index) {
    Worker w = new Worker();
    workers.add(w);
    try {
      loop(w);
    } finally {
      workers.remove(w);
    }
  }

  private void loop(Worker w) {
    while (true) {
      LocalTask t;
      boolean runAlone = false;
      try {
        if (w.tx != null && !w.tx.pending.isEmpty()) {
          t = w.tx.pending.poll(); // locked in the open transaction: they run in it before it commits
        } else if (!w.alone.isEmpty()) {
          commit(w);
          t = w.alone.poll();
          runAlone = true;
        } else if (w.tx != null) {
          t = ready.poll();
          if (t == null) {
            commit(w);
            continue;
          }
        } else if (stopping) {
          t = ready.poll();
          if (t == null) {
            return;
          }
        } else {
          t = ready.poll(200, TimeUnit.MILLISECONDS);
          if (t == null) {
            continue;
          }
        }
      } catch (InterruptedException e) {
        continue; // only stop requests interrupt: the loop checks the flags
      } catch (Throwable e) {
        log.error("pgtask: unexpected failure committing a task transaction", e);
        abandon(w);
        continue;
      }
      LocalTask task = t;
      boolean alone = runAlone;
      withMdc(task, () -> runOne(w, task, alone));
      Thread.interrupted(); // an interrupt meant for a handler must not hit the next task
    }
  }

  void runOne(Worker w, LocalTask t, boolean alone) {
    try {
      Adopted a = adopted.remove(t.id());
      if (a != null) {
        // a claim's head, whose transaction the claim opened: this thread's transaction ends first
        // (its next task must not wait for a row lock that a transaction without a thread holds)
        commit(w);
        w.tx = TaskTransaction.adopt(a.conn(), batchable(t) ? batchCapacity : 1, t.id(), a.lock());
      }
      if (stopping && (w.tx == null || !w.tx.hasLocked(t))) {
        writeAlone(t, new Outcome.Released(), System.nanoTime());
        return;
      }
      HandlerEntry<?> handler = config.handlers().get(t.claimed.kind());
      if (t.plain) {
        commit(w);
        runPlain(t, handler);
        return;
      }
      if (alone || (w.tx != null && !w.tx.hasLocked(t) && !joins(w.tx, t, 0))) {
        commit(w);
      }
      if (w.tx == null) {
        try {
          w.tx = TaskTransaction.open(config.dataSource(), alone || !batchable(t) ? 1 : batchCapacity);
        } catch (SQLException e) {
          log.warn("pgtask: no connection to run task {} ({}); putting it back", t.id(), e.getMessage());
          writeAlone(t, new Outcome.Released(), System.nanoTime());
          return;
        }
      }
      TaskTransaction tx = w.tx;
      try {
        if (!tx.hasLocked(t)) {
          lockAhead(tx, t);
        }
        runInTransaction(tx, t, handler);
      } catch (TransactionLost lost) {
        transactionLost(w, t, lost);
        return;
      }
      if (tx.settingsChanged && w.tx == tx) {
        // a setting the handler made outlives its savepoint: no later task may run in this transaction
        List<LocalTask> later = new ArrayList<>(tx.pending);
        tx.pending.clear();
        commit(w);
        renewLeases(later);
        for (int i = later.size() - 1; i >= 0; i--) {
          later.get(i).requeued();
          ready.offerFirst(later.get(i)); // next, in claim order, in a new transaction
        }
        return;
      }
      if (tx.pending.isEmpty() && (tx.size() >= tx.capacity || System.nanoTime() - tx.startNanos >= batchTimeNanos)) {
        commit(w);
      }
    } catch (Throwable e) {
      // pgtask's own code failed around the task (a handler's throwable is an outcome, never here)
      log.error("pgtask: unexpected failure around task {}; its transaction is rolled back and it runs again "
          + "after its lease", t.id(), e);
      abandon(w);
      finished(t);
    }
  }

  /**
   * Whether {@code t} may open a transaction that carries more tasks after it: commit batching is on,
   * its kind opted in ({@code HandlerOptions.withSharedTransaction}) and its recent runs took at most
   * a quarter of the batch's time. Otherwise its transaction
   * carries it alone, and nothing it finishes waits for another task.
   */
  private boolean batchable(LocalTask t) {
    HandlerEntry<?> handler = config.handlers().get(t.claimed.kind());
    return batchCapacity > 1 && !t.plain && handler != null && handler.options().sharesTransaction()
        && pace.expectedNanos(t.claimed.kind()) <= batchTimeNanos / 4;
  }

  /**
   * Whether {@code t} may join {@code tx}, whose tasks are expected to take {@code plannedNanos} more:
   * there is room, and by its kind's recent runs it will be done before the transaction has been open
   * for the batch's time. The tasks already finished in {@code tx} wait for their commit at most that
   * long, unless a handler takes far longer than its kind's recent runs.
   */
  private boolean joins(TaskTransaction tx, LocalTask t, long plannedNanos) {
    if (tx.capacity == 1 || tx.size() >= tx.capacity || !batchable(t)) {
      return false;
    }
    long expected = pace.expectedNanos(t.claimed.kind());
    return System.nanoTime() - tx.startNanos + plannedNanos + expected <= batchTimeNanos;
  }

  /**
   * Locks {@code first} for execution in the transaction; with commit batching, also up to the
   * transaction's remaining room of waiting transactional tasks, in the same round trip (their rows
   * and tenant locks are held until it commits either way). They run next, in claim order.
   */
  private void lockAhead(TaskTransaction tx, LocalTask first) throws TransactionLost {
    List<LocalTask> chunk = new ArrayList<>();
    chunk.add(first);
    int room = tx.capacity - tx.size() - 1;
    long planned = room > 0 ? pace.expectedNanos(first.claimed.kind()) : 0;
    while (room > 0) {
      LocalTask next = ready.poll();
      if (next == null) {
        break;
      }
      // a plain task runs outside; a claim's head is locked by its own transaction already (locking
      // it here would wait for that transaction, which waits for a thread); a stopped one needs no lock
      // nor one whose kind, by its recent runs, might not be done within the batch's time
      if (next.plain || adopted.containsKey(next.id()) || next.stopReason() != LocalTask.Stop.NONE
          || !joins(tx, next, planned)) {
        ready.offerFirst(next);
        break;
      }
      planned += pace.expectedNanos(next.claimed.kind());
      chunk.add(next);
      room--;
    }
    long serverTimeoutMillis = 0;
    for (LocalTask t : chunk) {
      serverTimeoutMillis = Math.max(serverTimeoutMillis, serverTimeoutMillis(config.handlers().get(t.claimed.kind())));
    }
    try {
      tx.lock(chunk, applicationName(first), serverTimeoutMillis, config.tenantLockNamespace(), config.transactionBounds());
    } catch (SQLException | RuntimeException e) {
      // the chunk's later tasks were not run: they go back to the front of the queue
      for (int i = chunk.size() - 1; i > 0; i--) {
        tx.pending.remove(chunk.get(i));
        ready.offerFirst(chunk.get(i));
      }
      throw new TransactionLost(e, null, false);
    }
  }

  /** Runs one transactional task, locked by {@link #lockAhead}, inside the open transaction. */
  private <T> void runInTransaction(TaskTransaction tx, LocalTask t, HandlerEntry<T> handler) throws TransactionLost {
    long startNanos = System.nanoTime();
    LockResult lock = tx.lockOf(t);
    if (lock == LockResult.FENCED_OUT) {
      log.info("pgtask: task {} attempt {} is no longer ours; abandoned", t.id(), t.claimed.attempt());
      finished(t);
      return;
    }
    Outcome outcome;
    if (lock == LockResult.TENANT_BUSY) {
      outcome = new Outcome.Deferred(config.tenantDeferDelay());
    } else if (lock == LockResult.CANCEL_REQUESTED) {
      outcome = new Outcome.Cancelled(ExecuteQueries.CANCELLED_AS_REQUESTED);
    } else if (t.stopReason() != LocalTask.Stop.NONE) {
      outcome = outcomes.ofStop(t, t.stopReason());
    } else if (stopping) {
      outcome = new Outcome.Released();
    } else {
      Payload<T> payload;
      try {
        payload = parse(t, handler);
      } catch (Exception e) {
        outcome = payloadMismatch(t, handler, e);
        record(tx, t, outcome, startNanos);
        return;
      }
      Duration timeout = outcomes.timeout(t);
      Connection handlerConnection = TaskConnection.wrap(tx.conn, () -> tx.ensureSavepoint(applicationName(t)));
      t.running(handlerConnection, Sql.using(handlerConnection), tx.conn, payload.node(),
          t.claimed.claimedAt().plus(timeout));
      outcome = supervise(t, handler, payload.value(), timeout);
      t.finishing();
      pace.ran(t.claimed.kind(), System.nanoTime() - startNanos);
      if (TaskConnection.changedSettings(handlerConnection)) {
        tx.settingsChanged = true;
        pace.changesSettings(t.claimed.kind());
      }
      TransactionState state = tx.transactionState();
      if (state == TransactionState.IDLE) {
        throw new TransactionLost(new SQLException("the handler ended the task's transaction"), t, true);
      }
      if (state == TransactionState.FAILED && outcome instanceof Outcome.Completed) {
        outcome = outcomes.abortedByHandler(t);
      }
      if (outcome instanceof Outcome.Completed) {
        if (tx.capacity > 1) {
          savepointStep(tx, t, false); // a transaction of one task releases it with its commit
        }
        tx.completed.add(new TaskTransaction.Run(t, outcome, null, startNanos));
        return;
      }
      savepointStep(tx, t, true);
      if (outcome instanceof Outcome.Failed && carriesOthers(tx)) {
        // the failure may be another task's doing (a lock it holds, a deadlock with another batch, a
        // temporary object or setting it left): it counts only if the task fails alone
        log.info("pgtask: task {} attempt {} failed in a transaction shared with {} other task(s) ({}); it runs again "
            + "alone before its failure counts", t.id(), t.claimed.attempt(), tx.completed.size() + tx.recorded.size(),
            ((Outcome.Failed) outcome).error());
        tx.again.add(t);
        return;
      }
    }
    record(tx, t, outcome, startNanos);
  }

  /** Whether tasks ran in {@code tx} before the current one: what they did is still in it. */
  private static boolean carriesOthers(TaskTransaction tx) {
    return !tx.completed.isEmpty() || !tx.recorded.isEmpty();
  }

  /**
   * Releases or rolls back to the task's savepoint; a missing savepoint means the handler ended the
   * transaction. A lost session is not the handler's doing (its backend was terminated, the server
   * restarted, the network broke): the attempt then fails as a lost transaction.
   */
  private static void savepointStep(TaskTransaction tx, LocalTask t, boolean rollback) throws TransactionLost {
    try {
      if (rollback) {
        tx.rollbackToSavepoint();
      } else {
        tx.releaseSavepointIfOpen();
      }
    } catch (SQLException e) {
      if (sessionLost(tx, e)) {
        throw new TransactionLost(e, null, false); // no task's fault: as a failed COMMIT
      }
      boolean ended = "3B001".equals(e.getSQLState()) || tx.transactionState() == TransactionState.IDLE;
      throw new TransactionLost(e, t, ended || rollback);
    }
  }

  /** Whether {@code e} says the task's session is gone: a connection error, or the server ended it. */
  private static boolean sessionLost(TaskTransaction tx, SQLException e) {
    String state = e.getSQLState();
    if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
      return true;
    }
    try {
      return tx.conn.isClosed();
    } catch (SQLException closed) {
      return true;
    }
  }

  /** Writes a task's outcome in the transaction that holds its locks; it is durable with the commit. */
  private void record(TaskTransaction tx, LocalTask t, Outcome outcome, long startNanos) throws TransactionLost {
    try {
      tx.releaseSavepointIfOpen(); // the row is written at the top level, never inside a savepoint
      TaskState result = writer.write(tx.dsl, t, outcome);
      tx.recorded.add(new TaskTransaction.Run(t, outcome, result, startNanos));
    } catch (SQLException | RuntimeException e) {
      throw new TransactionLost(e, null, false);
    }
  }

  /** Commits the thread's open transaction, if any, and reports its tasks. */
  void commit(Worker w) {
    TaskTransaction tx = w.tx;
    if (tx == null) {
      return;
    }
    w.tx = null;
    int done;
    Runnable wake = selfWake;
    // a stopping worker claims nothing more: its hand-offs notify the other workers
    String own = wake != null && !stopping ? workerQueues : "";
    try {
      done = tx.commit(tx.capacity == 1, own);
    } catch (SQLException e) {
      if (tx.capacity == 1 && tx.completed.size() == 1 && tx.transactionState() == TransactionState.FAILED) {
        // the check of the task's deferred constraints (or its savepoint's release) failed before
        // the COMMIT: the savepoint is still there, with the row and tenant locks above it
        LocalTask t = tx.completed.get(0).task();
        long startNanos = tx.completed.get(0).startNanos();
        tx.completed.clear();
        try {
          tx.rollbackToSavepoint();
          record(tx, t, outcomes.ofFailure(t, e), startNanos);
          w.tx = tx;
          commit(w);
          return;
        } catch (SQLException | TransactionLost again) {
          tx.completed.add(new TaskTransaction.Run(t, new Outcome.Completed(), null, startNanos));
          boolean ended = again instanceof SQLException s && "3B001".equals(s.getSQLState());
          transactionLost(w, tx, null, new TransactionLost(e, ended ? t : null, ended));
          return;
        }
      }
      if (!(sessionLost(tx, e) && committedDespite(w, tx, e))) {
        transactionLost(w, tx, null, new TransactionLost(e, null, false));
      }
      if (!own.isEmpty()) {
        // the COMMIT may have reached the server with its answer lost: what it handed on was not
        // notified, so claim (a claim that finds nothing costs one round trip)
        wake.run();
      }
      return;
    }
    if (!own.isEmpty() && handsOn(tx.completed)) {
      // the commit sent no notification for what it handed on in this worker's queues; before the
      // slots are freed, so the claim those free takes the hand-off's spill check with it
      wake.run();
    }
    int i = 0;
    for (TaskTransaction.Run r : tx.completed) {
      writer.count(r.task(), r.outcome(), i++ < done ? TaskState.completed : null, r.startNanos());
      finished(r.task());
    }
    for (TaskTransaction.Run r : tx.recorded) {
      writer.count(r.task(), r.outcome(), r.result(), r.startNanos());
      finished(r.task());
    }
    tx.close();
    runAgainAlone(w, tx.again);
  }

  /** Tasks taken out of a transaction that ended, to run again, each in a transaction of its own. */
  private void runAgainAlone(Worker w, List<LocalTask> tasks) {
    if (tasks.isEmpty()) {
      return;
    }
    renewLeases(tasks);
    for (LocalTask t : tasks) {
      t.requeued();
      w.alone.add(t);
    }
  }

  /**
   * A COMMIT whose answer was lost with its session may still have committed: durable state says
   * (one task suffices: the COMMIT is atomic). If it did, its tasks are reported and counted as what
   * they are, not as failed or abandoned; the tasks it locked ahead and did not run go back to the
   * queue, and those to run again alone do so. Returns false when it did not commit, or the check
   * could not be made (then the transaction is handled as lost: fenced, nothing runs twice).
   */
  private boolean committedDespite(Worker w, TaskTransaction tx, SQLException e) {
    TaskTransaction.Run probe = !tx.completed.isEmpty() ? tx.completed.get(0)
        : !tx.recorded.isEmpty() ? tx.recorded.get(0) : null;
    try {
      if (probe == null || config.transactionBounds().inTransaction(config.dataSource(),
          dsl -> ExecuteQueries.stillRunningAs(dsl, probe.task().fence))) {
        return false;
      }
    } catch (RuntimeException checkFailed) {
      log.warn("pgtask: the answer to a COMMIT was lost ({}) and whether it committed could not be read ({})",
          e.getMessage(), checkFailed.getMessage());
      return false;
    }
    tx.abandon();
    log.warn("pgtask: the answer to the COMMIT of {} task(s) was lost ({}); the database shows it committed, so "
        + "their outcomes stand", tx.completed.size() + tx.recorded.size(), e.getMessage());
    for (TaskTransaction.Run r : tx.completed) {
      writer.count(r.task(), r.outcome(), TaskState.completed, r.startNanos());
      finished(r.task());
    }
    for (TaskTransaction.Run r : tx.recorded) {
      writer.count(r.task(), r.outcome(), r.result(), r.startNanos());
      finished(r.task());
    }
    List<LocalTask> notRun = new ArrayList<>(tx.pending);
    renewLeases(notRun);
    for (int i = notRun.size() - 1; i >= 0; i--) {
      notRun.get(i).requeued();
      ready.offerFirst(notRun.get(i));
    }
    runAgainAlone(w, tx.again);
    return true;
  }

  /** Whether completing these may have made a task claimable: a tenant's task stopped running. */
  private static boolean handsOn(List<TaskTransaction.Run> completed) {
    for (TaskTransaction.Run r : completed) {
      if (r.task().claimed.tenantId() != null) {
        return true;
      }
    }
    return false;
  }

  /**
   * Sets what claims for this worker after a commit whose completions handed tasks on in its
   * queues without a notification (the producer's wake-up). Without it (a direct run, no
   * producer), every hand-off notifies.
   */
  public void selfWake(Runnable wake) {
    this.selfWake = wake;
  }

  private void transactionLost(Worker w, LocalTask current, TransactionLost lost) {
    TaskTransaction tx = w.tx;
    w.tx = null;
    transactionLost(w, tx, current, lost);
  }

  /**
   * The transaction ended without committing (its connection, the server, its COMMIT, or a handler
   * that ended it): everything in it is gone. A transaction of one task: that task's attempt fails,
   * recorded in a new transaction. A commit batch: the culprit, when known, fails; every other task
   * it carried runs again alone, in the same attempt.
   */
  private void transactionLost(Worker w, TaskTransaction tx, LocalTask current, TransactionLost lost) {
    tx.abandon();
    List<LocalTask> carried = new ArrayList<>();
    tx.completed.forEach(r -> carried.add(r.task()));
    tx.recorded.forEach(r -> carried.add(r.task()));
    carried.addAll(tx.pending);
    carried.addAll(tx.again);
    if (current != null && !carried.contains(current)) {
      carried.add(current);
    }
    Throwable cause = lost.getCause();
    LocalTask culprit = lost.culprit != null ? lost.culprit : carried.size() == 1 ? carried.get(0) : null;
    if (carried.size() > 1) {
      log.warn("pgtask: a task transaction carrying {} tasks failed ({}); {}", carried.size(), Outcomes.describe(cause),
          culprit == null ? "each runs again in a transaction of its own" : "task " + culprit.id()
              + " caused it; the others run again in transactions of their own");
    }
    List<LocalTask> again = new ArrayList<>();
    for (LocalTask t : carried) {
      if (t == culprit) {
        Outcome o = lost.endedByHandler ? outcomes.endedByHandler(t)
            : t.stopReason() == LocalTask.Stop.NONE ? outcomes.transactionFailed(t, cause) : outcomes.ofStop(t, t.stopReason());
        log.warn("pgtask: task {} attempt {}: {}", t.id(), t.claimed.attempt(),
            o instanceof Outcome.Failed f ? f.error() : o.name());
        writeAlone(t, o, System.nanoTime());
      } else {
        again.add(t);
      }
    }
    runAgainAlone(w, again);
  }

  /** Tasks taken out of a transaction that ended: their rows are unlocked now, so their leases must not run out while they wait. */
  private void renewLeases(List<LocalTask> tasks) {
    if (tasks.isEmpty()) {
      return;
    }
    long sent = System.nanoTime();
    try {
      renewed(tasks, ExecuteQueries.extendLeases(Sql.using(config.dataSource()), fences(tasks),
          config.leaseDuration()), sent, false);
    } catch (RuntimeException e) {
      log.warn("pgtask: renewing the leases of {} task(s) failed: {}", tasks.size(), e.getMessage());
    }
  }

  private void abandon(Worker w) {
    TaskTransaction tx = w.tx;
    w.tx = null;
    if (tx == null) {
      return;
    }
    tx.abandon();
    tx.completed.forEach(r -> finished(r.task()));
    tx.recorded.forEach(r -> finished(r.task()));
    tx.pending.forEach(this::finished);
  }

  /** Writes an outcome outside any task transaction (autocommit), counts it, and lets the task go. */
  private void writeAlone(LocalTask t, Outcome o, long startNanos) {
    try {
      TaskState result = writer.write(Sql.using(config.dataSource()), t, o);
      writer.count(t, o, result, startNanos);
    } catch (RuntimeException e) {
      log.warn("pgtask: could not record the outcome of task {} ({}); it will be rescued after its lease",
          t.id(), e.getMessage());
    } finally {
      finished(t);
    }
  }

  // ---- plain mode ----

  private <T> void runPlain(LocalTask t, HandlerEntry<T> handler) {
    long startNanos = System.nanoTime();
    if (!mayStartWithoutCheck(t) && !fenceStart(t)) {
      if (ready.contains(t)) {
        return; // the check could not be made; it waits for its next turn
      }
      log.info("pgtask: task {} attempt {} was cancelled or rescued before it started; not running it",
          t.id(), t.claimed.attempt());
      finished(t);
      return;
    }
    if (t.stopReason() != LocalTask.Stop.NONE) {
      writeAlone(t, outcomes.ofStop(t, t.stopReason()), startNanos);
      return;
    }
    Payload<T> payload;
    try {
      payload = parse(t, handler);
    } catch (Exception e) {
      writeAlone(t, payloadMismatch(t, handler, e), startNanos);
      return;
    }
    Duration timeout = outcomes.timeout(t);
    t.running(null, null, null, payload.node(), t.claimed.claimedAt().plus(timeout));
    Outcome outcome = supervise(t, handler, payload.value(), timeout);
    t.finishing();
    if (outcome instanceof Outcome.Completed) {
      completer.complete(t, startNanos);
      freeSlot(t);
    } else {
      writeAlone(t, outcome, startNanos);
    }
  }

  /**
   * Whether a plain task may start on what this worker already knows: no cancellation hint named
   * it, the listener has listened without a break since before the task was last known to be
   * this worker's (its claim, or its last lease renewal, which is also a check), so a
   * {@code cancel_task} since then would have been heard, and that renewal is less than half a
   * lease old, so no rescue can have taken it. Otherwise {@link #fenceStart} asks the database.
   */
  private boolean mayStartWithoutCheck(LocalTask t) {
    long since = listeningSince.getAsLong();
    long known = t.leaseFromNanos();
    return !t.suspect() && since != 0 && since - known < 0
        && System.nanoTime() - known < config.leaseDuration().toNanos() / 2;
  }

  /**
   * Renews the lease of {@code t} (and, while the listener listens, of every other waiting plain
   * task that would need the same check, in the same statement): a renewal succeeds only for a task
   * still running as this worker's claim, and reads its cancel request. Returns whether {@code t}
   * is still ours; a cancel request found becomes a stop request.
   */
  private boolean fenceStart(LocalTask t) {
    List<LocalTask> batch = new ArrayList<>();
    batch.add(t);
    if (listeningSince.getAsLong() != 0) {
      for (LocalTask other : held.values()) {
        if (other != t && other.plain && other.state() == LocalTask.State.WAITING && batch.size() < 500
            && !mayStartWithoutCheck(other)) {
          batch.add(other);
        }
      }
    }
    for (LocalTask b : batch) {
      b.clearSuspect(); // before the read: a hint arriving from now on marks it again
    }
    try {
      for (int round = 0; ; round++) {
        long sent = System.nanoTime();
        Map<Long, Boolean> found = ExecuteQueries.extendLeases(Sql.using(config.dataSource()), fences(batch),
            config.leaseDuration());
        renewed(batch, found, sent, false);
        if (found.containsKey(t.id())) {
          return true;
        }
        // not renewed: no longer ours, or its row was locked for a moment (another renewal, an
        // operator's lock attempt); the durable state says which
        ExecuteQueries.Held answer = ExecuteQueries.checkHeld(Sql.using(config.dataSource()),
            config.workerId(), List.of(t.fence)).get(t.id());
        ExecuteQueries.HeldState state = answer == null || answer.attempt() != t.claimed.attempt() ? null : answer.state();
        if (state == ExecuteQueries.HeldState.GONE) {
          t.requestStop(LocalTask.Stop.LOST);
          return false;
        }
        if (state == ExecuteQueries.HeldState.CANCEL_REQUESTED) {
          t.requestStop(LocalTask.Stop.CANCELLED);
          return true;
        }
        if (round == 4) {
          return true; // ours as of the read just made
        }
        batch = List.of(t);
        Thread.sleep(2);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
    } catch (SQLException | RuntimeException e) {
      log.warn("pgtask: could not check task {} before starting it ({}); it waits for its next turn", t.id(),
          e.getMessage());
      t.markSuspect();
      try {
        Thread.sleep(100);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      }
      ready.addLast(t);
      return false;
    }
  }

  static List<ExecuteQueries.Fence> fences(List<LocalTask> tasks) {
    List<ExecuteQueries.Fence> out = new ArrayList<>(tasks.size());
    tasks.forEach(t -> out.add(t.fence));
    return out;
  }

  /**
   * Applies a lease renewal sent at {@code sent}: the renewed tasks are known to be this worker's
   * as of then, a cancel request found stops its task; with {@code missingIsLost}, a task the
   * renewal did not find (no longer running as this claim) is lost.
   */
  void renewed(List<LocalTask> tasks, Map<Long, Boolean> renewed, long sent, boolean missingIsLost) {
    for (LocalTask t : tasks) {
      Boolean cancel = renewed.get(t.id());
      if (cancel == null) {
        if (missingIsLost) {
          t.requestStop(LocalTask.Stop.LOST);
        }
        continue;
      }
      t.leaseRenewed(sent);
      if (cancel) {
        t.requestStop(LocalTask.Stop.CANCELLED);
      }
    }
  }

  // ---- helpers ----

  /**
   * Runs the handler under the watchdog (stopped at {@code timeout}); returns its outcome. Every
   * throwable is an outcome.
   */
  private <T> Outcome supervise(LocalTask t, HandlerEntry<T> handler, T payload, Duration timeout) {
    ScheduledFuture<?> timer = null;
    try {
      timer = watchdog.schedule(() -> t.requestStop(LocalTask.Stop.TIMED_OUT), timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (stopping) {
        t.requestStop(LocalTask.Stop.SHUTDOWN);
      }
      if (t.stopReason() != LocalTask.Stop.NONE) {
        return outcomes.ofStop(t, t.stopReason());
      }
      TracedCall.handle(config.tracing(), t, handler, payload);
      return t.stopReason() == LocalTask.Stop.NONE ? new Outcome.Completed() : outcomes.ofStop(t, t.stopReason());
    } catch (Throwable e) {
      if (t.stopReason() != LocalTask.Stop.NONE) {
        return outcomes.ofStop(t, t.stopReason());
      }
      if (e instanceof Error) {
        log.error("pgtask: task {} attempt {} failed with an error", t.id(), t.claimed.attempt(), e);
      } else if (!(e instanceof dev.pgtask.SnoozeTaskException) && !(e instanceof dev.pgtask.DiscardTaskException)) {
        log.warn("pgtask: task {} attempt {} failed: {}", t.id(), t.claimed.attempt(), e.toString());
      }
      return outcomes.ofFailure(t, e);
    } finally {
      if (timer != null) {
        timer.cancel(false);
      }
      Thread.interrupted();
    }
  }

  /** A task's payload as JSON and as the handler's type. */
  private record Payload<T>(JsonNode node, T value) {}

  private <T> Payload<T> parse(LocalTask t, HandlerEntry<T> handler) throws Exception {
    JsonNode node = config.objectMapper().readTree(t.claimed.payload().data());
    T value = JsonNode.class.equals(handler.payloadType())
        ? handler.payloadType().cast(node)
        : config.objectMapper().treeToValue(node, handler.payloadType());
    return new Payload<>(node, value);
  }

  /** A payload that does not deserialize never will: discard, naming the field but no value (see PayloadErrors). */
  private static Outcome payloadMismatch(LocalTask t, HandlerEntry<?> handler, Exception e) {
    String why = PayloadErrors.describe(handler.payloadType(), e);
    log.warn("pgtask: task {} attempt {} of kind {} is discarded: {}", t.id(), t.claimed.attempt(), handler.kind(), why);
    return Outcome.Failed.discarded(why);
  }

  /** Plain-mode kinds run outside any transaction, except tasks with a tenant. */
  private boolean runsPlain(Claimed c) {
    HandlerEntry<?> h = config.handlers().get(c.kind());
    return h != null && h.options().mode() == HandlerOptions.Mode.PLAIN && c.tenantId() == null;
  }

  /** Transaction-local {@code application_name} while {@code t} runs: which task, on which worker. */
  private String applicationName(LocalTask t) {
    String name = "pgtask task " + t.id() + " " + config.workerId();
    return name.length() > 63 ? name.substring(0, 63) : name;
  }

  /** The server-side statement and idle timeouts of a task transaction: a little above the task timeout. */
  private long serverTimeoutMillis(HandlerEntry<?> handler) {
    long t = outcomes.timeout(handler).toMillis();
    return t + Math.max(5_000, t / 10);
  }

  /** The MDC keys set while a task runs on a thread (docs/logging.md); removed when it is done. */
  static final String MDC_TASK_ID = "pgtask.task_id", MDC_KIND = "pgtask.kind", MDC_QUEUE = "pgtask.queue",
      MDC_ATTEMPT = "pgtask.attempt", MDC_TENANT = "pgtask.tenant", MDC_WORKER = "pgtask.worker";

  static void withMdc(LocalTask t, Runnable r) {
    MDC.put(MDC_TASK_ID, Long.toString(t.id()));
    MDC.put(MDC_KIND, t.claimed.kind());
    MDC.put(MDC_QUEUE, t.claimed.queue());
    MDC.put(MDC_ATTEMPT, Integer.toString(t.claimed.attempt()));
    if (t.claimed.tenant() != null) {
      MDC.put(MDC_TENANT, t.claimed.tenant());
    }
    MDC.put(MDC_WORKER, t.workerId());
    try {
      r.run();
    } finally {
      MDC.remove(MDC_TASK_ID);
      MDC.remove(MDC_KIND);
      MDC.remove(MDC_QUEUE);
      MDC.remove(MDC_ATTEMPT);
      MDC.remove(MDC_TENANT);
      MDC.remove(MDC_WORKER);
    }
  }
}
