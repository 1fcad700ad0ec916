package dev.pgtask.internal.schedule;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.sql.ScheduleQueries;
import dev.pgtask.internal.sql.ScheduleQueries.Fired;
import dev.pgtask.internal.sql.Sql;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires this cluster's schedules: one timer for the earliest due time this worker knows of, then
 * {@link #fireDue()} (see the package documentation for the protocol). Every worker may run one;
 * the database makes a second task for one fire impossible, so how many run decides only who does
 * the work, never what is done.
 *
 * <p>Between fires it costs nothing but a read when {@link #changed()} is called (the listener
 * heard a {@code schedules} control notification, or reconnected), and one firing pass per
 * {@link #MAX_SLEEP} as a backstop. A firing pass that leaves a schedule due (another worker holds
 * its row right now, firing it) is tried again after a short, growing pause (20 ms to 1 s), never
 * in a spin.
 */
public final class Scheduler extends Service {

  private static final Logger log = LoggerFactory.getLogger(Scheduler.class);

  /** The longest the scheduler waits without a firing pass (a backstop: notifications are the signal). */
  public static final Duration MAX_SLEEP = Duration.ofMinutes(1);

  /** After a due time, before the pass: the database's clock decides, a little late is fine. */
  private static final long MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(3);

  private final DataSource dataSource;
  private final Object signal = new Object();
  private boolean changed; // guarded by signal; written by changed(), read and cleared by the scheduler thread
  // written by the scheduler thread, read by anyone (tests, operators)
  private final java.util.concurrent.atomic.AtomicLong passes = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();

  public Scheduler(DataSource dataSource, String workerId) {
    super("pgtask-scheduler-" + workerId, 1);
    this.dataSource = dataSource;
  }

  /** The schedules may have changed (a notification, a listener reconnect): read the next due time again. */
  public void changed() {
    synchronized (signal) {
      changed = true;
      signal.notifyAll();
    }
  }

  /**
   * Fires every schedule that is due, in one transaction, and returns how many tasks were enqueued
   * and how long until the next schedule is due. Safe to call from any number of workers at once.
   * The one entry point of firing: an elected maintenance leader could be its only caller.
   */
  public Fired fireDue() {
    passes.incrementAndGet();
    return ScheduleQueries.fireDue(Sql.using(dataSource));
  }

  /** Firing passes ({@link #fireDue()} calls) since start. */
  public long passes() {
    return passes.get();
  }

  /** Reads of the next due time (after a {@link #changed()}) since start. */
  public long reads() {
    return reads.get();
  }

  @Override
  protected void onStop() {
    changed();
    interruptThreads();
  }

  @Override
  protected void run(int index) {
    long errorBackoff = 100;
    long busyBackoff = 20;
    boolean fire = true; // at start: whatever is due now
    while (isRunning()) {
      Duration next;
      try {
        if (fire) {
          Fired f = fireDue();
          next = f.nextDueIn();
          if (f.fired() > 0 && log.isDebugEnabled()) {
            log.debug("pgtask scheduler: enqueued {} task(s); next due in {}", f.fired(), next);
          }
          if (next != null && !next.isNegative() && !next.isZero()) {
            busyBackoff = 20;
          } else if (next != null) {
            // still due: a schedule another worker is firing right now (its row is locked)
            next = Duration.ofMillis(busyBackoff);
            busyBackoff = Math.min(1_000, busyBackoff * 2);
          }
        } else {
          reads.incrementAndGet();
          next = ScheduleQueries.nextDueIn(Sql.using(dataSource));
          if (next != null && (next.isNegative() || next.isZero())) {
            fire = true;
            continue;
          }
        }
        errorBackoff = 100;
      } catch (RuntimeException e) {
        if (!isRunning()) {
          return;
        }
        log.warn("pgtask scheduler: {} failed ({}); retrying in {} ms", fire ? "firing" : "reading the schedules",
            Sql.rootMessage(e), errorBackoff);
        next = Duration.ofMillis(errorBackoff);
        errorBackoff = Math.min(5_000, errorBackoff * 2);
        fire = true;
        if (await(next.toNanos())) {
          fire = false;
        }
        continue;
      }
      long waitNanos = next == null ? MAX_SLEEP.toNanos()
          : Math.min(MAX_SLEEP.toNanos(), Math.max(0, next.toNanos()) + MARGIN_NANOS);
      fire = !await(waitNanos);
    }
  }

  /** Waits up to {@code nanos} or until {@link #changed()}; returns whether it was called. */
  private boolean await(long nanos) {
    long deadline = System.nanoTime() + nanos;
    synchronized (signal) {
      while (!changed && isRunning()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(signal, left);
        } catch (InterruptedException e) {
          // the flag decides
        }
      }
      boolean was = changed;
      changed = false;
      return was;
    }
  }
}
