package dev.pgtask.internal.wakeup;

import dev.pgtask.internal.WorkerConfig;

/**
 * One worker's wake-up parts, wired together: the producer's {@link WakeSignal}, the
 * {@link DueTimer}, the {@link WakeReceiver} of the listener's notifications, the {@link Spills}
 * with their {@link SpillPolicy}, the {@link HandOffWake} of its commits, and its registration for
 * in-process wake-ups ({@link LocalWake}). See the package documentation for who wakes whom.
 */
public final class Wakeups {

  private final WorkerConfig config;
  private final WakeSignal signal = new WakeSignal();
  private final DueTimer timer;
  private final WakeReceiver receiver;
  private final Spills spills;
  private final HandOffWake handOff;
  private volatile boolean stopped;
  private Runnable localRegistration = () -> { }; // guarded by this

  public Wakeups(WorkerConfig config) {
    this.config = config;
    this.timer = new DueTimer(config.workerId(), signal::wake);
    this.receiver = new WakeReceiver(config.queues(), signal, timer);
    this.spills = new Spills(new SpillPolicy(receiver::lastQueueNotification), timer, config.dataSource(),
        config.queues(), config.kinds(), () -> !stopped);
    this.handOff = new HandOffWake(config.queues(), spills, signal);
  }

  /** What the producer waits on, and every wake-up releases. */
  public WakeSignal signal() {
    return signal;
  }

  /** Asks for a claim as soon as possible (as a notification of the worker's queues would). */
  public void wake() {
    signal.wake();
  }

  /** The due-time timer. */
  public DueTimer timer() {
    return timer;
  }

  /** What the listener hands its notifications to. */
  public WakeReceiver receiver() {
    return receiver;
  }

  /** The spill of the claims after this worker's own hand-offs. */
  public Spills spills() {
    return spills;
  }

  /** The wake-up of this worker's own commits. */
  public HandOffWake handOff() {
    return handOff;
  }

  /** From now on, an enqueue committed in this JVM over the worker's DataSource wakes it ({@link LocalWake}). */
  public synchronized void registerLocal() {
    localRegistration = LocalWake.register(config.dataSource(), config.queues(), signal::wake);
  }

  /** No more in-process wake-ups ({@link LocalWake}). */
  public synchronized void unregisterLocal() {
    localRegistration.run();
  }

  /** Stops the timer and the owed spill (the producer stops: nothing claims any more). */
  public void stop() {
    stopped = true;
    timer.stop();
  }
}
