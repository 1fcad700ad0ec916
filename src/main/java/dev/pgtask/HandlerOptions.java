package dev.pgtask;

import java.time.Duration;
import java.util.Objects;

/** How the tasks of one kind are executed. Immutable. */
public final class HandlerOptions {

  private static final HandlerOptions DEFAULTS = new HandlerOptions(null);

  private final Duration timeout;

  private HandlerOptions(Duration timeout) {
    this.timeout = timeout;
  }

  /** The worker's defaults. */
  public static HandlerOptions defaults() {
    return DEFAULTS;
  }

  /** This kind's timeout, instead of the worker's default task timeout. */
  public HandlerOptions withTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
    return new HandlerOptions(timeout);
  }

  /** The timeout, or {@code null} for the worker's default. */
  public Duration timeout() {
    return timeout;
  }
}
