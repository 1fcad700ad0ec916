package dev.pgtask.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start/stop base of a worker's moving parts (executor, producer, completer, listener,
 * maintenance): each runs its own loop on its own daemon thread(s) while {@link #isRunning()};
 * {@link #stop} clears the flag, lets the service wake its loops ({@link #onStop()}), and waits for
 * the threads to end. A service starts once and stops once; a second call of either is a no-op.
 * A loop that throws is logged and restarted (after a short pause) while the service runs: a
 * moving part never dies quietly.
 */
public abstract class Service {

  private static final Logger log = LoggerFactory.getLogger(Service.class);

  private final String name;
  private final int threadCount;
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running;
  private boolean started; // guarded by this
  private boolean stopped; // guarded by this

  /** {@code name}: the threads' name (numbered when there are several). */
  protected Service(String name, int threadCount) {
    this.name = name;
    this.threadCount = threadCount;
  }

  /** The loop of thread {@code index} (0-based); it returns when {@link #isRunning()} turns false. */
  protected abstract void run(int index);

  /** Called by {@link #stop} once the flag is cleared: wake loops that wait (the default: nothing). */
  protected void onStop() {}

  /** Whether the service has started and not been asked to stop. Read by the loops. */
  public final boolean isRunning() {
    return running;
  }

  public final synchronized void start() {
    if (started) {
      return;
    }
    started = true;
    running = true;
    for (int i = 0; i < threadCount; i++) {
      int index = i;
      Thread t = new Thread(() -> loop(index), threadCount == 1 ? name : name + "-" + (i + 1));
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void loop(int index) {
    while (running) {
      try {
        run(index);
        return;
      } catch (Throwable t) { // a bug in a loop must not silently stop a moving part
        if (!running) {
          return;
        }
        log.error("pgtask: {} failed unexpectedly; restarting it", Thread.currentThread().getName(), t);
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          // the flag decides
        }
      }
    }
  }

  /**
   * Asks the loops to end and waits up to {@code timeout} for them. Returns whether every thread
   * has ended.
   */
  public final boolean stop(Duration timeout) {
    synchronized (this) {
      if (!started || stopped) {
        return awaitThreads(System.nanoTime());
      }
      stopped = true;
      running = false;
    }
    onStop();
    return awaitThreads(System.nanoTime() + timeout.toNanos());
  }

  /** Waits until {@code deadline} (System.nanoTime) for the threads; returns whether all ended. */
  protected final boolean awaitThreads(long deadline) {
    List<Thread> ts;
    synchronized (this) {
      ts = List.copyOf(threads);
    }
    try {
      for (Thread t : ts) {
        long left = deadline - System.nanoTime();
        if (left > 0 && t != Thread.currentThread()) {
          t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return ts.stream().noneMatch(t -> t.isAlive() && t != Thread.currentThread());
  }

  /** Interrupts the service's threads (to end a wait in a loop). */
  protected final void interruptThreads() {
    List<Thread> ts;
    synchronized (this) {
      ts = List.copyOf(threads);
    }
    ts.forEach(Thread::interrupt);
  }
}
