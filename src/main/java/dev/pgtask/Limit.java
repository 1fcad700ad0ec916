package dev.pgtask;

/**
 * A concurrency limit of a tenant, queue or kind ({@link PgTask#setLimit}): at most
 * {@code maxRunning} of its tasks run at once across the whole cluster. A tenant without a limit
 * runs one task at a time; a queue or kind without one is unlimited.
 *
 * @param maxRunning how many of its tasks may run at once, 1 to 1024
 */
public record Limit(int maxRunning) {

  /** The most a limit may admit at once: the slots of one key (docs/how-it-works.md, "Limits"). */
  public static final int MAX_RUNNING = 1024;

  public Limit {
    if (maxRunning < 1 || maxRunning > MAX_RUNNING) {
      throw new InvalidLimitException("limit_max_running",
          "pgtask: invalid limit: max_running must be between 1 and " + MAX_RUNNING + ", not " + maxRunning);
    }
  }

  /** At most {@code n} tasks of the key run at once. */
  public static Limit maxRunning(int n) {
    return new Limit(n);
  }
}
