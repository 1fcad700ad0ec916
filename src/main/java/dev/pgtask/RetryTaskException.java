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

  /** Retry after {@code delay} (database clock). */
  public RetryTaskException(Duration delay, String reason) {
    super(reason);
    this.delay = Objects.requireNonNull(delay, "delay");
  }

  /** Retry at {@code instant}. */
  public static RetryTaskException at(Instant instant, String reason) {
    Duration d = Duration.between(Instant.now(), instant);
    return new RetryTaskException(d.isNegative() ? Duration.ZERO : d, reason);
  }

  /** The delay before the retry. */
  public Duration delay() {
    return delay;
  }
}
