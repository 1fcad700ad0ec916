package dev.pgtask;

import java.time.Duration;
import java.util.Objects;

/**
 * Thrown by a handler to put the task back for later without counting a failure: the attempt is
 * given back and nothing is recorded as an error. The handler's database work is rolled back.
 */
public class SnoozeTaskException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final Duration delay;

  public SnoozeTaskException(Duration delay) {
    super("snoozed for " + delay);
    this.delay = Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("snooze delay must not be negative: " + delay);
    }
  }

  /** How long to wait before the task is available again. */
  public Duration delay() {
    return delay;
  }
}
