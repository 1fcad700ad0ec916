package dev.pgtask.internal.producer;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.executor.Executor;
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
 * poll interval (jittered by up to 10%), then claims in a loop: wait for room (fewer than
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
  private final List<String> kinds;
  // a claim into an idle worker starts its head's transaction in the same round trip
  // (ClaimQueries.claimAndStart); not for a worker of plain-mode kinds only, whose claims have none.
  // Not while tasks run: the re-lock would then lengthen the claim loop, which limits a busy
  // worker without prefetch (measured: a fifth fewer tasks/s with one transaction per task)
  private final List<String> plainKinds;
  private final boolean startHeads;
  private final org.postgresql.util.PGobject serverTimeouts;

  public Producer(WorkerConfig config, WorkerStats stats, Executor executor) {
    super("pgtask-producer-" + config.workerId(), 1);
    this.config = config;
    this.stats = stats;
    this.executor = executor;
    this.kinds = config.kinds();
    this.plainKinds = executor.plainKinds();
    this.startHeads = plainKinds.size() < kinds.size();
    this.serverTimeouts = executor.serverTimeouts();
  }

  @Override
  protected void onStop() {
    wake();
    interruptThreads();
  }

  /** Asks for a claim as soon as possible. */
  public void wake() {
    if (wakeups.availablePermits() == 0) {
      wakeups.release();
    }
  }

  @Override
  protected void run(int index) {
    long errorBackoff = 100;
    while (isRunning()) {
      try {
        drain();
        errorBackoff = 100;
        long poll = config.pollInterval().toMillis();
        long jitter = ThreadLocalRandom.current().nextLong(poll / 10 + 1);
        wakeups.tryAcquire(poll - jitter, TimeUnit.MILLISECONDS);
        wakeups.drainPermits();
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
    stats.claimed.addAndGet(tasks.size());
    if (!tasks.isEmpty()) {
      reportClaims(tasks);
    }
  }

  private void drain() throws InterruptedException {
    while (isRunning()) {
      int room = executor.awaitCapacity(config.batchSize());
      if (!isRunning()) {
        return;
      }
      stats.claimQueries.incrementAndGet();
      Claim claim;
      long claimNanos = executor.claimStarting();
      try {
        if (startHeads && executor.isIdle()) {
          StartedClaim started = ClaimQueries.claimAndStart(config.dataSource(), config.queues(), kinds, plainKinds,
              room, config.workerId(), config.leaseDuration(), serverTimeouts, config.tenantLockNamespace());
          claim = started.claim();
          count(claim.tasks());
          if (started.transaction() != null) {
            executor.submitStarted(claim.tasks(), started.transaction(), started.headId(), started.headLock(), claimNanos);
          } else {
            executor.submitAll(claim.tasks(), claimNanos);
          }
        } else {
          claim = ClaimQueries.claimAvailable(config.dataSource(), config.queues(), kinds, room,
              config.workerId(), config.leaseDuration());
          count(claim.tasks());
          executor.submitAll(claim.tasks(), claimNanos);
        }
      } catch (RuntimeException e) {
        executor.claimFailed();
        throw e;
      }
      if (claim.locked() < room) {
        return; // drained: wait for a wake-up or the next poll
      }
    }
  }
}
