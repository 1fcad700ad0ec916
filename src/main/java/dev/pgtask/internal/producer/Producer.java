package dev.pgtask.internal.producer;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.executor.Executor;
import dev.pgtask.internal.notifier.SessionWork;
import dev.pgtask.internal.sql.IdleQueries;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.ClaimQueries.Claim;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ClaimQueries.StartedClaim;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides when to claim, and hands claimed tasks to the executor.
 *
 * <p>It waits for a wake-up (a notification for one of its queues, a listener reconnect, an
 * enqueue committed by {@code PgTask} in this JVM, see {@code LocalWake}) or the
 * poll interval (jittered by up to 10%), then claims in a loop. While the listener listens, the
 * poll runs on its session ({@link #sessionPoll()}: a read of whether a claim would find a task,
 * which wakes this producer when it would); otherwise the producer polls with a plain claim of its
 * own. The claim loop: wait for room (fewer than
 * concurrency + prefetch tasks outstanding), claim at most that room (and at most the batch size) in
 * one statement, hand the tasks to the executor, and claim again at once while claims come back
 * full; a short claim means the queue is drained, so it waits again. With the default prefetch of
 * 0 it never claims more than it can start at once. A claim into an idle worker also starts its
 * first transactional task in the same round trip.
 *
 * <p>A claim whose answer is lost (the connection failed after its COMMIT) is reported to the
 * executor, which puts back what this worker holds in the database without knowing it. A claim
 * still in flight when the worker stops hands its tasks to a closed executor, which puts them back.
 */
public final class Producer extends Service {

  private static final Logger log = LoggerFactory.getLogger(Producer.class);

  private final WorkerConfig config;
  private final WorkerStats stats;
  private final Executor executor;
  private final Semaphore wakeups = new Semaphore(0);
  // set by wakeForHandOff, taken by the next claim
  private volatile boolean handedOn;
  // System.nanoTime() of the next poll on the listener's session (see sessionPoll())
  private volatile long sessionPollDue;
  // System.currentTimeMillis() when the last poll on the listener's session committed (0: none)
  private volatile long sessionPollMillis;
  private volatile java.util.function.BooleanSupplier listening = () -> false;
  // Listener.lastQueueNotification of this worker's listener (0: none heard)
  private volatile java.util.function.LongSupplier lastQueueNotification = () -> 0;
  // System.nanoTime() of a full claim after a hand-off whose spill was held back (0: none owed, see oweSpill)
  private final java.util.concurrent.atomic.AtomicLong spillOwed = new java.util.concurrent.atomic.AtomicLong();
  // System.nanoTime() when this worker last sent a spill (0: never)
  private volatile long lastSpillSent;
  private final List<String> kinds;
  // a claim into an idle worker starts its head's transaction in the same round trip
  // (ClaimQueries.claimAndStart); not for a worker of plain-mode kinds only, whose claims have none.
  // Not while tasks run: the re-lock would then lengthen the claim loop, which limits a busy
  // worker without prefetch (measured: a fifth fewer tasks/s with one transaction per task)
  private final List<String> plainKinds;
  private final boolean startHeads;
  private final org.postgresql.util.PGobject serverTimeouts;
  // one timer for the earliest due time this worker knows of (a retry, snooze or deferral it wrote)
  private final java.util.concurrent.ScheduledThreadPoolExecutor timer;
  private java.util.concurrent.ScheduledFuture<?> nextDue; // guarded by timer
  private long nextDueNanos; // guarded by timer
  // the later known due times, earliest first (bounded: beyond it, the poll finds them)
  private final java.util.PriorityQueue<Long> laterDue = new java.util.PriorityQueue<>(); // guarded by timer
  private static final int MAX_KNOWN_DUE = 10_000;

  public Producer(WorkerConfig config, WorkerStats stats, Executor executor) {
    super("pgtask-producer-" + config.workerId(), 1);
    this.config = config;
    this.stats = stats;
    this.executor = executor;
    this.kinds = config.kinds();
    this.plainKinds = executor.plainKinds();
    this.startHeads = plainKinds.size() < kinds.size();
    this.serverTimeouts = executor.serverTimeouts();
    this.sessionPollDue = System.nanoTime() + config.pollInterval().toNanos();
    this.timer = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "pgtask-due-" + config.workerId());
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
  }

  /**
   * How long after a notification of its queues this worker's claims send no spill of their own
   * (see {@link #holdSpill}).
   */
  static final long SPILL_QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  /**
   * A notification heard this long after a held-back spill is taken to have been sent after the
   * claim that held it back committed. A notification takes 1 to 5 ms from its COMMIT to a listener
   * on a healthy server, but a listener thread that waits for a CPU hears it later: the enqueue's
   * notification that made the claim hold its spill can arrive after the claim. A wrong guess here
   * costs one notification more; the other way, a task that waits for the next poll.
   */
  static final long SPILL_HEARD_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /** Margin after a due time before the claim: the database's clock decides, a little late is fine. */
  private static final long DUE_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /**
   * A task of this worker's queues becomes due in {@code delay} (a retry, snooze or deferral this
   * worker just wrote, or a wake-up notification {@code <queue> <ms>}: a task enqueued or handed
   * its tenant's head for later, by anyone): claim then instead of at the next poll. One timer,
   * for the earliest such time; the later ones wait, earliest first, behind it.
   */
  public void dueIn(java.time.Duration delay) {
    long at = System.nanoTime() + Math.max(0, delay.toNanos()) + DUE_MARGIN_NANOS;
    synchronized (timer) {
      if (timer.isShutdown()) {
        return;
      }
      if (nextDue != null && !nextDue.isDone()) {
        if (nextDueNanos - at <= 0) {
          if (laterDue.size() < MAX_KNOWN_DUE) {
            laterDue.add(at);
          }
          return;
        }
        nextDue.cancel(false);
        laterDue.add(nextDueNanos);
      }
      schedule(at);
    }
  }

  private void schedule(long at) { // holding timer
    nextDueNanos = at;
    nextDue = timer.schedule(this::dueNow, Math.max(0, at - System.nanoTime()), TimeUnit.NANOSECONDS);
  }

  /** The timer fired: claim now, and set the timer for the next known due time. */
  private void dueNow() {
    wake();
    synchronized (timer) {
      long now = System.nanoTime();
      while (!laterDue.isEmpty() && laterDue.peek() - now <= 0) {
        laterDue.poll(); // due by now: the claim just asked for finds it
      }
      nextDue = null;
      if (!laterDue.isEmpty() && !timer.isShutdown()) {
        schedule(laterDue.poll());
      }
    }
  }

  @Override
  protected void onStop() {
    synchronized (timer) {
      timer.shutdownNow();
    }
    wake();
    interruptThreads();
  }

  /**
   * Asks for a claim after this worker's own commit handed tasks on in its queues without a
   * notification: the first claim then notifies the other workers if it leaves claimable tasks
   * behind (ClaimQueries, the spill).
   */
  public void wakeForHandOff() {
    handedOn = true;
    wake();
  }

  /** Asks for a claim as soon as possible. */
  public void wake() {
    if (wakeups.availablePermits() == 0) {
      wakeups.release();
    }
  }

  /** The poll interval less a jitter of up to 10%, in nanoseconds. */
  private long jitteredPollNanos() {
    long poll = config.pollInterval().toNanos();
    return poll - ThreadLocalRandom.current().nextLong(poll / 10 + 1);
  }

  /**
   * The poll as the listener runs it on its session while it listens (an idle worker's poll costs
   * one read-only transaction there, and no pool check): reads whether a claim would find a task
   * ({@link IdleQueries#claimable}) and wakes this producer when it would, which then claims as
   * after a notification; and asks for the check of the held tasks' cancel requests (a read only
   * when tasks are held). Due a poll interval after the producer's last claim.
   */
  public SessionWork sessionPoll() {
    return new SessionWork() {
      @Override
      public long dueAt() {
        return sessionPollDue;
      }

      @Override
      public boolean runsInRoundAt(long now) {
        return sessionPollDue - now <= 0;
      }

      @Override
      public Runnable run(org.jooq.DSLContext tx, long now) {
        sessionPollDue = now + jitteredPollNanos();
        boolean found = IdleQueries.claimable(tx, config.queues(), kinds);
        return () -> {
          sessionPollMillis = System.currentTimeMillis();
          executor.requestCheck();
          if (found) {
            wake();
          }
        };
      }
    };
  }

  /**
   * Whether the claim after this worker's own hand-off holds its spill back: when this worker heard
   * a notification of its queues, or sent a spill itself, less than {@link #SPILL_QUIET_NANOS} ago.
   * Every idle worker of the queue heard that too and claimed, and on a busy cluster nearly every
   * claim after a hand-off is full: a spill for each would signal every listening session of the
   * database for each (with 64 workers, about 60 times a second, each waking 64 sessions). A
   * held-back spill whose claim comes back full is owed ({@link #oweSpill}).
   */
  private boolean holdSpill() {
    long last = lastQueueCall();
    return last != 0 && System.nanoTime() - last < SPILL_QUIET_NANOS;
  }

  /**
   * {@code System.nanoTime()} of the later of the last notification of this worker's queues it
   * heard and the last spill it sent (0: neither yet).
   */
  private long lastQueueCall() {
    long heard = lastQueueNotification.getAsLong();
    long sent = lastSpillSent;
    return heard == 0 || (sent != 0 && sent - heard > 0) ? sent : heard;
  }

  /**
   * A full claim held its spill back ({@link #holdSpill}): a quiet interval after the last call of
   * its queues (plus a jitter of up to half of one, so that the workers that owe one do not all
   * send at once), this worker sends it on its own, if no notification arrived and no spill of its
   * own went out since, and a task of its queues and kinds is still claimable then. So a worker that
   * idles hears of a task a busy one left behind within about 150 ms, and the database sends about
   * one spill per quiet interval, whatever the number of workers. A worker that dies owing one
   * leaves those tasks to the next poll of the queue's workers, as one that dies before its claim
   * after a hand-off.
   */
  private void oweSpill() {
    long now = System.nanoTime();
    if (!spillOwed.compareAndSet(0, now)) {
      return; // owed already: that one reads the claimable tasks later than this claim committed
    }
    long last = lastQueueCall();
    long due = last == 0 ? now : Math.max(now, last + SPILL_QUIET_NANOS);
    long delay = due - now + ThreadLocalRandom.current().nextLong(SPILL_QUIET_NANOS / 2 + 1);
    synchronized (timer) {
      if (!timer.isShutdown()) {
        timer.schedule(this::sendOwedSpill, delay, TimeUnit.NANOSECONDS);
      }
    }
  }

  /**
   * The owed spill ({@link #oweSpill}), on the timer's thread: one statement on the pool that reads
   * whether a task is claimable and notifies if one is ({@link IdleQueries#notifyIfClaimable}).
   */
  private void sendOwedSpill() {
    long owed = spillOwed.getAndSet(0); // before the read: a claim that owes after it owes again
    if (owed == 0 || !isRunning() || lastQueueNotification.getAsLong() - owed > SPILL_HEARD_MARGIN_NANOS
        || lastSpillSent - owed > 0) {
      return; // the idle workers were called since
    }
    try {
      if (IdleQueries.notifyIfClaimable(dev.pgtask.internal.sql.Sql.using(config.dataSource()), config.queues(),
          kinds) > 0) {
        lastSpillSent = System.nanoTime();
      }
    } catch (RuntimeException e) {
      log.warn("pgtask: notifying the queues of the tasks a claim left behind failed ({}); the other workers "
          + "find them at their next poll", e.getMessage());
    }
  }

  /** Whether the listener is listening (then it runs the polls on its session, see {@link #sessionPoll()}). */
  public void listening(java.util.function.BooleanSupplier listening) {
    this.listening = listening;
  }

  /** When this worker's listener last heard a notification of its queues (see {@link #holdSpill}). */
  public void lastQueueNotification(java.util.function.LongSupplier lastQueueNotification) {
    this.lastQueueNotification = lastQueueNotification;
  }

  /**
   * Waits for a wake-up; returns false when the poll interval passed without one and this producer
   * polls itself: while the listener listens and its session's poll is not overdue (half a poll
   * interval), the session polls and this producer only waits.
   */
  private boolean awaitWake() throws InterruptedException {
    while (isRunning()) {
      if (wakeups.tryAcquire(jitteredPollNanos(), TimeUnit.NANOSECONDS)) {
        wakeups.drainPermits();
        return true;
      }
      if (!listening.getAsBoolean()
          || System.nanoTime() - sessionPollDue >= config.pollInterval().toNanos() / 2) {
        return false;
      }
      // the session's poll counts as this loop's claim (lastClaimAt) only while the loop comes
      // here, waiting: a claim loop stuck in a claim shows in lastClaimAt however the session polls
      long polled = sessionPollMillis;
      if (polled > stats.lastClaimMillis.get()) {
        stats.lastClaimMillis.set(polled);
      }
    }
    return true;
  }

  @Override
  protected void run(int index) {
    long errorBackoff = 100;
    boolean poll = false;
    while (isRunning()) {
      try {
        drain(poll);
        if (poll) {
          // a poll: also read the held tasks' cancel requests, which need no notification to arrive
          // (after the claim: a claim that found nothing leaves nothing to read)
          executor.requestCheck();
        }
        poll = false;
        errorBackoff = 100;
        sessionPollDue = System.nanoTime() + jitteredPollNanos();
        poll = !awaitWake();
      } catch (InterruptedException e) {
        // the flag decides
      } catch (RuntimeException e) {
        if (!isRunning()) {
          return;
        }
        log.warn("pgtask: claim failed ({}); retrying in {} ms", e.getMessage(), errorBackoff);
        try {
          Thread.sleep(errorBackoff);
        } catch (InterruptedException ie) {
          // the flag decides
        }
        errorBackoff = Math.min(5_000, errorBackoff * 2);
      }
    }
  }

  private void reportClaims(List<Claimed> tasks) {
    if (config.metrics() == dev.pgtask.PgTaskMetrics.NOOP) {
      return;
    }
    java.util.Map<String, Integer> perQueue = new java.util.HashMap<>();
    for (Claimed t : tasks) {
      perQueue.merge(t.queue(), 1, Integer::sum);
      if (t.attempt() == 1) {
        config.metrics().startLatency(t.queue(), t.kind(), java.time.Duration.between(t.runAt(), t.claimedAt()));
      }
    }
    perQueue.forEach(config.metrics()::claimed);
  }

  private void count(List<Claimed> tasks) {
    stats.lastClaimMillis.set(System.currentTimeMillis());
    stats.claimed.addAndGet(tasks.size());
    if (!tasks.isEmpty()) {
      reportClaims(tasks);
    }
  }

  /**
   * Claims until a claim comes back short. {@code poll}: the first claim is the producer's own
   * poll, which most often finds nothing: a plain claim (one transaction), not the claim-and-start,
   * whose head transaction an empty claim would open and roll back.
   */
  private void drain(boolean poll) throws InterruptedException {
    boolean first = poll;
    while (isRunning()) {
      int room = executor.awaitCapacity(config.batchSize());
      if (!isRunning()) {
        return;
      }
      stats.claimQueries.incrementAndGet();
      Claim claim;
      boolean spill = handedOn;
      handedOn = false;
      boolean heldSpill = spill && holdSpill();
      if (heldSpill) {
        spill = false;
      }
      long claimNanos = executor.claimStarting();
      try {
        boolean startHead = startHeads && executor.isIdle() && !first;
        first = false;
        if (startHead) {
          StartedClaim started = ClaimQueries.claimAndStart(config.dataSource(), config.queues(), kinds, plainKinds,
              room, config.workerId(), config.leaseDuration(), serverTimeouts, config.tenantLockNamespace(), spill,
              config.transactionBounds());
          claim = started.claim();
          count(claim.tasks());
          if (started.transaction() != null) {
            executor.submitStarted(claim.tasks(), started.transaction(), started.headId(), started.headLock(), claimNanos);
          } else {
            executor.submitAll(claim.tasks(), claimNanos);
          }
        } else {
          claim = ClaimQueries.claimAvailable(config.dataSource(), config.queues(), kinds, room,
              config.workerId(), config.leaseDuration(), spill, config.transactionBounds());
          count(claim.tasks());
          executor.submitAll(claim.tasks(), claimNanos);
        }
      } catch (RuntimeException e) {
        executor.claimFailed();
        throw e;
      }
      if (claim.locked() < room) {
        spillOwed.set(0); // it left nothing claimable behind: an owed spill has nothing to tell
        return; // drained: wait for a wake-up or the next poll
      }
      if (heldSpill) {
        oweSpill();
      } else if (spill) {
        lastSpillSent = System.nanoTime(); // a full claim with its spill: it notified if it left a task behind
      }
    }
  }
}
