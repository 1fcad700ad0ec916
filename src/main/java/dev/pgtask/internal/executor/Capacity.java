package dev.pgtask.internal.executor;

import dev.pgtask.internal.WorkerConfig;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The producer's capacity: how many claimed tasks an executor thread has not let go of yet
 * ({@link #occupied}), against {@code concurrency} threads plus the prefetch (fixed, or adaptive by
 * the recent pace of finishes).
 *
 * <p>Threads: {@link #awaitCapacity} runs on the producer's thread and waits on
 * {@link #capacityMonitor}; {@link #taken} is called by the claim's hand-over (producer's thread,
 * or the caller of a direct run); {@link #freeSlot} by whichever thread lets a task go (an executor
 * thread, the completer, the shutdown), which notifies the monitor when a good-sized claim fits.
 * {@link #occupied} is atomic and {@link RecentFinishes} synchronized: any of those threads writes
 * and reads them.
 */
final class Capacity {

  /** The most claimed tasks the adaptive prefetch lets wait here. */
  static final int AUTO_PREFETCH_MAX = 400;

  private final WorkerConfig config;
  private final int concurrency;
  /** Claimed tasks that may wait for a thread; {@link dev.pgtask.PgTaskWorker#PREFETCH_AUTO}: by the recent pace. */
  private final int fixedPrefetch;
  private final RecentFinishes recentFinishes = new RecentFinishes();
  /**
   * Claimed tasks an executor thread has not let go of yet: the producer's capacity. A plain task
   * whose completion waits in the {@link dev.pgtask.internal.complete.Completer} is still held, but no longer occupies a slot.
   */
  private final AtomicInteger occupied = new AtomicInteger();
  private final Object capacityMonitor = new Object();

  Capacity(WorkerConfig config) {
    this.config = config;
    this.concurrency = config.concurrency();
    this.fixedPrefetch = config.prefetch();
  }

  /**
   * Blocks until fewer than concurrency + prefetch claimed tasks are held; returns how many more
   * may be claimed (at most {@code max}).
   */
  int awaitCapacity(int max) throws InterruptedException {
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

  /** Producers waiting in {@link #awaitIdle}. */
  private volatile int idleWaiters;

  /**
   * Blocks until an executor thread has no claimed task, at most {@code millis}: the producer's
   * wait after a claim that left tasks under a limit for want of one.
   */
  void awaitIdle(long millis) throws InterruptedException {
    awaitIdle(1, millis);
  }

  /** Blocks until at least {@code n} executor threads have no claimed task, at most {@code millis}. */
  void awaitIdle(int n, long millis) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    synchronized (capacityMonitor) {
      idleWaiters++;
      try {
        while (idle() < n) {
          long left = (deadline - System.nanoTime()) / 1_000_000L;
          if (left <= 0) {
            return;
          }
          capacityMonitor.wait(left);
        }
      } finally {
        idleWaiters--;
      }
    }
  }

  /** Executor threads with no claimed task: tasks handed over now start at once. */
  int idle() {
    return Math.max(0, concurrency - occupied.get());
  }

  /** Whether no claimed task is waiting or running here: a task handed over now starts at once. */
  boolean isIdle() {
    return occupied.get() == 0;
  }

  /** A claimed task was registered: it occupies a slot until {@link #freeSlot}. */
  void taken() {
    occupied.incrementAndGet();
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
      if (concurrency + prefetch - now >= minClaim(prefetch) || idleWaiters > 0) {
        synchronized (capacityMonitor) {
          capacityMonitor.notifyAll();
        }
      }
    }
  }
}
