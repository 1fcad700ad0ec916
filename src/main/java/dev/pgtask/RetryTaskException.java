package dev.pgtask;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * Thrown by a handler to fail this attempt and retry at a chosen time instead of the default
 * backoff. The attempt counts; when it was the last one the task is discarded.
 */
public class RetryTaskException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final Duration delay;
  private final Instant at;

  /** Retry after {@code delay}, measured on the database clock from when the failure is recorded. */
  public RetryTaskException(Duration delay, String reason) {
    super(reason);
    this.delay = Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("retry delay must not be negative: " + delay);
    }
    this.at = null;
  }

  private RetryTaskException(Instant at, String reason) {
    super(reason);
    this.delay = null;
    this.at = Objects.requireNonNull(at, "instant");
  }

  /**
   * Retry at {@code instant}: the task's run_at is set to it as given (an instant in the past means
   * at once), with no conversion to a delay on this JVM's clock.
   */
  public static RetryTaskException at(Instant instant, String reason) {
    return new RetryTaskException(instant, reason);
  }

  /** The delay before the retry, or {@code null} when the retry was given as an instant ({@link #at()}). */
  public Duration delay() {
    return delay;
  }

  /** The instant of the retry, or {@code null} when it was given as a delay. */
  public Instant at() {
    return at;
  }
}
