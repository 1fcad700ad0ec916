package dev.pgtask.internal.executor;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries;
import dev.pgtask.internal.sql.ExecuteQueries.Fence;
import dev.pgtask.internal.sql.Sql;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes plain-mode completions in batches (one fenced UPDATE, one commit, for up to
 * {@value #MAX_BATCH} tasks, at least every {@value #FLUSH_MILLIS} ms), and renews the claim lease
 * of every task this worker holds without a transaction (plain tasks running, claimed tasks
 * waiting to start) every third of the lease.
 */
final class Completer {

  private static final Logger log = LoggerFactory.getLogger(Completer.class);
  static final int MAX_BATCH = 500;
  static final long FLUSH_MILLIS = 5;

  private record Pending(Claimed claimed, Fence fence, long startNanos) {}

  private final WorkerConfig config;
  private final WorkerStats stats;
  private final Supplier<List<Long>> heldWithoutTransaction;
  private final DSLContext dsl;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition nonEmpty = lock.newCondition();
  private List<Pending> pending = new ArrayList<>();
  private volatile boolean running;
  private Thread thread;

  Completer(WorkerConfig config, WorkerStats stats, Supplier<List<Long>> heldWithoutTransaction) {
    this.config = config;
    this.stats = stats;
    this.heldWithoutTransaction = heldWithoutTransaction;
    this.dsl = Sql.using(config.dataSource());
  }

  void start() {
    running = true;
    thread = new Thread(this::run, "pgtask-completer-" + config.workerId());
    thread.setDaemon(true);
    thread.start();
  }

  /** Flushes what is pending and stops. */
  void stop() {
    running = false;
    lock.lock();
    try {
      nonEmpty.signalAll();
    } finally {
      lock.unlock();
    }
    if (thread != null) {
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    flush(take());
  }

  void complete(Claimed c, Fence fence, long startNanos) {
    lock.lock();
    try {
      pending.add(new Pending(c, fence, startNanos));
      if (pending.size() >= MAX_BATCH || pending.size() == 1) {
        nonEmpty.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  private List<Pending> take() {
    lock.lock();
    try {
      List<Pending> out = pending;
      pending = new ArrayList<>();
      return out;
    } finally {
      lock.unlock();
    }
  }

  private void run() {
    long leaseEvery = Math.max(1, config.leaseDuration().toNanos() / 3);
    long nextLease = System.nanoTime() + leaseEvery;
    while (running) {
      lock.lock();
      try {
        if (pending.isEmpty()) {
          nonEmpty.await(Math.min(250, TimeUnit.NANOSECONDS.toMillis(leaseEvery)), TimeUnit.MILLISECONDS);
        }
      } catch (InterruptedException e) {
        // stop() decides
      } finally {
        lock.unlock();
      }
      if (!running) {
        return;
      }
      // let a few more completions join the batch
      try {
        Thread.sleep(FLUSH_MILLIS);
      } catch (InterruptedException e) {
        // flush anyway
      }
      flush(take());
      if (System.nanoTime() >= nextLease) {
        renewLeases();
        nextLease = System.nanoTime() + leaseEvery;
      }
    }
  }

  private void flush(List<Pending> batch) {
    for (int from = 0; from < batch.size(); from += MAX_BATCH) {
      List<Pending> part = batch.subList(from, Math.min(batch.size(), from + MAX_BATCH));
      List<Fence> fences = new ArrayList<>(part.size());
      for (Pending p : part) {
        fences.add(p.fence());
      }
      try (java.sql.Connection c = config.dataSource().getConnection()) {
        int done = ExecuteQueries.completeAll(c, fences);
        stats.completed.addAndGet(done);
        if (done < part.size()) {
          log.info("pgtask: {} plain-mode completion(s) were fenced out (the tasks were rescued meanwhile)",
              part.size() - done);
        }
        for (Pending p : part) {
          config.metrics().finished(p.claimed().queue(), p.claimed().kind(), "completed",
              Duration.ofNanos(System.nanoTime() - p.startNanos()));
        }
      } catch (java.sql.SQLException | RuntimeException e) {
        log.warn("pgtask: recording {} completion(s) failed ({}); retrying", part.size(), e.getMessage());
        lock.lock();
        try {
          pending.addAll(part);
        } finally {
          lock.unlock();
        }
        if (!running) {
          return; // at shutdown: the leases expire and rescue re-runs them (at-least-once)
        }
      }
    }
  }

  private void renewLeases() {
    List<Long> ids = heldWithoutTransaction.get();
    lock.lock();
    try {
      for (Pending p : pending) {
        ids.add(p.claimed().id());
      }
    } finally {
      lock.unlock();
    }
    try {
      ExecuteQueries.extendLeases(dsl, config.workerId(), ids, config.leaseDuration());
    } catch (RuntimeException e) {
      log.warn("pgtask: renewing the leases of {} task(s) failed: {}", ids.size(), e.getMessage());
    }
  }
}
