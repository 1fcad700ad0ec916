package dev.pgtask.internal.wakeup;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The producer's wake-up: "claim as soon as possible". Every source of a wake-up releases it (a
 * notification of the worker's queues, a listener (re)connect, the due timer, a hand-off, an
 * enqueue committed in this JVM, a maintenance pass that put tasks back, a poll on the listener's
 * session that found a task); the producer's thread waits on it. Wake-ups that arrive while one is
 * pending fold into it: one claim loop answers them all.
 */
public final class WakeSignal {

  private final Semaphore permits = new Semaphore(0);

  /** Asks for a claim as soon as possible (any thread). */
  public void wake() {
    if (permits.availablePermits() == 0) {
      permits.release();
    }
  }

  /**
   * Waits up to {@code nanos} for a wake-up and takes it (and every other pending one); returns
   * false when none came (the producer's thread only).
   */
  public boolean await(long nanos) throws InterruptedException {
    if (permits.tryAcquire(nanos, TimeUnit.NANOSECONDS)) {
      permits.drainPermits();
      return true;
    }
    return false;
  }
}
