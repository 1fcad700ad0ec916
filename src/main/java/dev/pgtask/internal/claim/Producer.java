package dev.pgtask.internal.claim;

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
import dev.pgtask.internal.wakeup.Spills;
import dev.pgtask.internal.wakeup.WakeSignal;
import dev.pgtask.internal.wakeup.Wakeups;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides when to claim, and hands claimed tasks to the executor.
 *
 * <p>It waits for a wake-up ({@link WakeSignal}: a notification for one of its queues, a listener
 * reconnect, the due timer, its own hand-off, an enqueue committed by {@code PgTask} in this JVM; see
 * {@code dev.pgtask.internal.wakeup}) or the poll interval (jittered by up to 10%), then claims in a
 * loop. While the listener listens, the poll runs on its session ({@link #sessionPoll()}: a read of
 * whether a claim would find a task, which wakes this producer when it would); otherwise the
 * producer polls with a plain claim of its own. The claim loop: wait for room (fewer than
 * concurrency + prefetch tasks outstanding), claim at most that room (and at most the batch size) in
 * one statement, hand the tasks to the executor, and claim again at once while claims come back
 * full; a short claim means the queue is drained, so it waits again. With the default prefetch of
 * 0 it never claims more than it can start at once. A claim into an idle worker also starts its
 * first transactional task in the same round trip. The claim after this worker's own hand-off
 * carries the spill as {@link Spills} says.
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
  private final WakeSignal signal;
  private final Spills spills;
  private final Wakeups wakeups;
  // System.nanoTime() of the next poll on the listener's session (see sessionPoll())
  private volatile long sessionPollDue;
  // System.currentTimeMillis() when the last poll on the listener's session committed (0: none)
  private volatile long sessionPollMillis;
  private volatile java.util.function.BooleanSupplier listening = () -> false;
  private final List<String> kinds;
  // a claim into an idle worker starts its head's transaction in the same round trip
  // (ClaimQueries.claimAndStart); not for a worker of plain-mode kinds only, whose claims have none.
  // Not while tasks run: the re-lock would then lengthen the claim loop, which limits a busy
  // worker without prefetch (measured: a fifth fewer tasks/s with one transaction per task)
  private final List<String> plainKinds;
  private final boolean startHeads;
  private final org.postgresql.util.PGobject serverTimeouts;
  // whether the last claim saw a flow limit set: if not, the next one is sent without flow control
  // (ClaimQueries.LimitInput); the first claim is the full one
  private boolean limitsSeen = true;

  /** How long a claim after {@code held_for_room} waits for more idle executors than one. */
  static final long HELD_FOR_ROOM_BATCH_MILLIS = 10;

  public Producer(WorkerConfig config, WorkerStats stats, Executor executor, Wakeups wakeups) {
    super("pgtask-producer-" + config.workerId(), 1);
    this.config = config;
    this.stats = stats;
    this.executor = executor;
    this.kinds = config.kinds();
    this.plainKinds = executor.plainKinds();
    this.startHeads = plainKinds.size() < kinds.size();
    this.serverTimeouts = executor.serverTimeouts();
    this.sessionPollDue = System.nanoTime() + config.pollInterval().toNanos();
    this.wakeups = wakeups;
    this.signal = wakeups.signal();
    this.spills = wakeups.spills();
  }

  @Override
  protected void onStop() {
    wakeups.stop();
    signal.wake();
    interruptThreads();
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
            signal.wake();
          }
        };
      }
    };
  }

  /** Whether the listener is listening (then it runs the polls on its session, see {@link #sessionPoll()}). */
  public void listening(java.util.function.BooleanSupplier listening) {
    this.listening = listening;
  }

  /**
   * Waits for a wake-up; returns false when the poll interval passed without one and this producer
   * polls itself: while the listener listens and its session's poll is not overdue (half a poll
   * interval), the session polls and this producer only waits.
   */
  private boolean awaitWake() throws InterruptedException {
    while (isRunning()) {
      if (signal.await(jitteredPollNanos())) {
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
      Spills.Claim spill = spills.nextClaim();
      long claimNanos = executor.claimStarting();
      ClaimQueries.LimitInput limits = new ClaimQueries.LimitInput(executor.idleExecutors(), executor.takeRefunds(),
          limitsSeen);
      try {
        boolean startHead = startHeads && executor.isIdle() && !first;
        first = false;
        if (startHead) {
          StartedClaim started = ClaimQueries.claimAndStart(config.dataSource(), config.queues(), kinds, plainKinds,
              room, config.workerId(), config.leaseDuration(), serverTimeouts, config.tenantLockNamespace(),
              spill.sends(), config.transactionBounds(), limits);
          claim = started.claim();
          count(claim.tasks());
          if (started.transaction() != null) {
            executor.submitStarted(claim.tasks(), started.transaction(), started.headId(), started.headLock(), claimNanos);
          } else {
            executor.submitAll(claim.tasks(), claimNanos);
          }
        } else {
          claim = ClaimQueries.claimAvailable(config.dataSource(), config.queues(), kinds, room,
              config.workerId(), config.leaseDuration(), spill.sends(), config.transactionBounds(), limits);
          count(claim.tasks());
          executor.submitAll(claim.tasks(), claimNanos);
        }
      } catch (RuntimeException e) {
        executor.claimFailed();
        throw e;
      }
      limitsSeen = claim.limitsExist();
      if (claim.nextTokenMillis() != null) {
        // a task waits for a rate limit's token: claim when it is due, not at the next poll
        wakeups.timer().dueIn(java.time.Duration.ofMillis(claim.nextTokenMillis()));
      }
      if (claim.heldForRoom() > 0 && isRunning()) {
        // tasks under a limit were left for want of an idle executor: claim again when one is free
        // (bounded, so a stop is seen), not at a wake-up that nobody sends
        executor.awaitIdleExecutor(config.pollInterval().toMillis());
        // then a few milliseconds for more to free up: one claim for several tasks, not a claim
        // per task (claims cost the server more than the re-locks they save)
        executor.awaitIdleExecutors(Math.min(claim.heldForRoom(), Math.max(1, config.concurrency() / 2)),
            HELD_FOR_ROOM_BATCH_MILLIS);
        continue;
      }
      boolean full = claim.locked() >= room;
      spills.claimed(spill, full);
      if (!full) {
        return; // drained: wait for a wake-up or the next poll
      }
    }
  }
}
