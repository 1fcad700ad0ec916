package dev.pgtask.internal.wakeup;

import dev.pgtask.internal.wakeup.WakePayload.Cancel;
import dev.pgtask.internal.wakeup.WakePayload.DueLater;
import dev.pgtask.internal.wakeup.WakePayload.DueNow;
import dev.pgtask.internal.wakeup.WakePayload.Message;
import dev.pgtask.internal.wakeup.WakePayload.SchedulesChanged;
import java.util.List;
import java.util.Set;

/**
 * Acts on the notifications the worker's listener receives ({@link WakePayload} decodes them): a
 * task of one of this worker's queues due now wakes the producer; one due later sets the
 * {@link DueTimer}; a cancellation hint goes to the executor by task id (checked there, never
 * trusted); a schedules change to the scheduler. Notifications of other queues, and anything that is
 * not pgtask's, are dropped.
 *
 * <p>Threads: {@link #received} on the listener's thread; {@link #lastQueueNotification} read by
 * the producer's and the timer's (the spill's hold-back).
 */
public final class WakeReceiver {

  /** Receives the cancellation hints sent on {@link WakePayload#CONTROL_CHANNEL}. */
  @FunctionalInterface
  public interface CancelSink {
    /** A notification named {@code taskId}: check it, do not trust it. */
    void hint(long taskId);
  }

  private final Set<String> queues;
  private final WakeSignal signal;
  private final DueTimer timer;
  private volatile CancelSink onCancel = id -> { };
  private volatile Runnable onSchedulesChanged = () -> { };
  // System.nanoTime() when the last notification that one of this worker's queues has a task due now
  // arrived (0: none)
  private volatile long lastQueueNotification;

  WakeReceiver(List<String> queues, WakeSignal signal, DueTimer timer) {
    this.queues = Set.copyOf(queues);
    this.signal = signal;
    this.timer = timer;
  }

  /** Where the cancellation hints go (set before the listener starts). */
  public void onCancel(CancelSink sink) {
    this.onCancel = sink;
  }

  /** What runs when the schedules changed (a hint; set before the listener starts). */
  public void onSchedulesChanged(Runnable action) {
    this.onSchedulesChanged = action;
  }

  /** A notification on {@code channel} with {@code payload} arrived at {@code now} (System.nanoTime()). */
  public void received(String channel, String payload, long now) {
    Message m = WakePayload.decode(channel, payload);
    if (m instanceof DueNow d) {
      if (queues.contains(d.queue())) {
        lastQueueNotification = now;
        signal.wake();
      }
    } else if (m instanceof DueLater d) {
      if (queues.contains(d.queue())) {
        timer.dueIn(d.delay());
      }
    } else if (m instanceof Cancel c) {
      onCancel.hint(c.taskId());
    } else if (m instanceof SchedulesChanged) {
      onSchedulesChanged.run();
    }
  }

  /**
   * {@code System.nanoTime()} when the last notification that one of this worker's queues has a task
   * due now arrived, or 0 when none has (see {@link SpillPolicy}).
   */
  public long lastQueueNotification() {
    return lastQueueNotification;
  }
}
