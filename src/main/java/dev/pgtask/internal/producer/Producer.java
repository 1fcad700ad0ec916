package dev.pgtask.internal.producer;

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
 */
public final class Producer {

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
  private volatile boolean running;
  private Thread thread;

  public Producer(WorkerConfig config, WorkerStats stats, Executor executor) {
    this.config = config;
    this.stats = stats;
    this.executor = executor;
    this.kinds = config.kinds();
    this.plainKinds = executor.plainKinds();
    this.startHeads = plainKinds.size() < kinds.size();
    this.serverTimeouts = executor.serverTimeouts();
  }

  public void start() {
    running = true;
    thread = new Thread(this::run, "pgtask-producer-" + config.workerId());
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops claiming; returns when the claim loop has exited. */
  public void stop() {
    running = false;
    wake();
    if (thread != null) {
      thread.interrupt();
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Asks for a claim as soon as possible. */
  public void wake() {
    if (wakeups.availablePermits() == 0) {
      wakeups.release();
    }
  }

  private void run() {
    long errorBackoff = 100;
    while (running) {
      try {
        drain();
        errorBackoff = 100;
        long poll = config.pollInterval().toMillis();
        long jitter = ThreadLocalRandom.current().nextLong(poll / 10 + 1);
        wakeups.tryAcquire(poll - jitter, TimeUnit.MILLISECONDS);
        wakeups.drainPermits();
      } catch (InterruptedException e) {
        if (!running) {
          return;
        }
      } catch (RuntimeException e) {
        if (!running) {
          return;
        }
        log.warn("pgtask: claim failed ({}); retrying in {} ms", e.getMessage(), errorBackoff);
        try {
          Thread.sleep(errorBackoff);
        } catch (InterruptedException ie) {
          if (!running) {
            return;
          }
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
    while (running) {
      int room = executor.awaitCapacity(config.batchSize());
      if (!running) {
        return;
      }
      stats.claimQueries.incrementAndGet();
      Claim claim;
      if (startHeads && executor.isIdle()) {
        StartedClaim started = ClaimQueries.claimAndStart(config.dataSource(), config.queues(), kinds, plainKinds,
            room, config.workerId(), config.leaseDuration(), serverTimeouts, config.tenantLockNamespace());
        claim = started.claim();
        count(claim.tasks());
        if (started.transaction() != null) {
          executor.submitStarted(claim.tasks(), started.transaction(), started.headId(), started.headLock());
        } else {
          executor.submitAll(claim.tasks());
        }
      } else {
        claim = ClaimQueries.claimAvailable(config.dataSource(), config.queues(), kinds, room,
            config.workerId(), config.leaseDuration());
        count(claim.tasks());
        executor.submitAll(claim.tasks());
      }
      if (claim.locked() < room) {
        return; // drained: wait for a wake-up or the next poll
      }
    }
  }
}
