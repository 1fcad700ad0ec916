package dev.pgtask.internal.wakeup;

import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A worker's one timer ({@code pgtask-due-<worker>}): wakes the producer when a task of its queues
 * becomes due (a retry, snooze or deferral this worker wrote; a {@code <queue> <ms>} notification;
 * the upcoming due times read at start), so that the task starts then, not at the next poll; and
 * runs the owed spill ({@link Spills}) after its quiet interval. One {@link ScheduledThreadPoolExecutor}
 * of one thread: its queue holds the known due times, earliest first.
 *
 * <p>A due time that arrives while {@value #MAX_KNOWN_DUE} wait is kept only if it is earlier than
 * all of them (beyond them, the poll finds the tasks). Due times that pass together fold into one
 * wake-up: a due time that comes round after a wake-up at or after it is already answered by the
 * claim that wake-up asked for.
 */
public final class DueTimer {

  /** Margin after a due time before the claim: the database's clock decides, a little late is fine. */
  static final long DUE_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
  /** How many due times are kept at most. */
  static final int MAX_KNOWN_DUE = 10_000;

  private final ScheduledThreadPoolExecutor timer;
  private final Runnable wake;
  // System.nanoTime() of the last wake-up this timer gave (timer thread only), valid once woke is set
  private long lastWake;
  private boolean woke;

  /** A timer whose due times call {@code wake}. */
  public DueTimer(String workerId, Runnable wake) {
    this.wake = wake;
    this.timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "pgtask-due-" + workerId);
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
  }

  /** A task of this worker's queues becomes due in {@code delay}: wake the producer then (any thread). */
  public void dueIn(Duration delay) {
    long now = System.nanoTime();
    long at = now + Math.max(0, delay.toNanos()) + DUE_MARGIN_NANOS;
    if (timer.getQueue().size() >= MAX_KNOWN_DUE && !beforeAll(at - now)) {
      return;
    }
    try {
      timer.schedule(() -> due(at), at - now, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException stopped) {
      // stopped: nothing claims any more
    }
  }

  /** Runs {@code action} on the timer's thread after {@code nanos} (any thread); nothing once stopped. */
  void after(long nanos, Runnable action) {
    try {
      timer.schedule(action, nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException stopped) {
      // stopped
    }
  }

  /** Whether a time {@code delayNanos} from now comes before every time the timer holds. */
  private boolean beforeAll(long delayNanos) {
    Runnable head = timer.getQueue().peek();
    return !(head instanceof RunnableScheduledFuture<?> f) || f.getDelay(TimeUnit.NANOSECONDS) > delayNanos;
  }

  private void due(long at) {
    if (woke && lastWake - at >= 0) {
      return; // the claim of that wake-up, made after this time, finds this task too
    }
    woke = true;
    lastWake = System.nanoTime();
    wake.run();
  }

  /** How many due times (and owed spills) wait (tests). */
  int waiting() {
    return timer.getQueue().size();
  }

  /** Stops the timer: the due times it held are dropped (the next worker's poll finds their tasks). */
  public void stop() {
    timer.shutdownNow();
  }
}
