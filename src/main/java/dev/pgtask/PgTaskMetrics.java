package dev.pgtask;

import java.time.Duration;

/**
 * Where a worker reports what it does. The default does nothing; {@code
 * dev.pgtask.micrometer.MicrometerMetrics} records to a Micrometer registry (Micrometer is an
 * optional dependency: add {@code io.micrometer:micrometer-core} to use it). Implementations must be
 * thread-safe and fast: they are called on the hot path. Tags are low-cardinality only (queue,
 * kind, outcome), never task ids or tenants.
 */
public interface PgTaskMetrics {

  /** Reports nothing. */
  PgTaskMetrics NOOP = new PgTaskMetrics() {};

  /** {@code count} tasks were claimed from {@code queue}. */
  default void claimed(String queue, int count) {}

  /**
   * A task attempt ended. {@code outcome} is one of completed, retried, discarded, cancelled,
   * snoozed, released.
   */
  default void finished(String queue, String kind, String outcome, Duration duration) {}

  /** Time from a task's run_at (its enqueue, unless scheduled) to the start of its first attempt. */
  default void startLatency(String queue, String kind, Duration latency) {}

  /** A task was put back because its tenant's lock was busy. */
  default void tenantDeferred(String queue) {}

  /**
   * A task was put back without spending an attempt because a concurrency limit that applies to
   * it was full when it was to start ({@code pgtask.set_limit}).
   */
  default void limitDeferred(String queue) {}

  /** The worker's LISTEN connection was re-established. */
  default void listenerReconnected() {}

  /** A rescue pass made {@code count} tasks of lost workers claimable again. */
  default void rescued(int count) {}

  /** Periodic sample of a queue: tasks ready to run and the age of the oldest one. */
  default void queueSampled(String queue, long available, Duration lag) {}

  /** {@code count} tasks were enqueued into {@code queue} by a {@link PgTask} client. */
  default void enqueued(String queue, int count) {}
}
