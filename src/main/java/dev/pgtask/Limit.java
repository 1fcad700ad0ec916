package dev.pgtask;

import java.math.BigDecimal;

/**
 * A limit of a tenant, queue or kind ({@link Limits#set}): at most {@code maxRunning} of its
 * tasks running at once across the whole cluster, and/or at most {@code burst + perSecond × t}
 * starts in any window of t seconds, on the database clock (retries count as starts). A tenant
 * without a concurrency limit runs one task at a time; a queue or kind without one is unlimited.
 *
 * <pre>{@code
 * Limit.maxRunning(4)
 * Limit.perSecond(50, 10)
 * Limit.maxRunning(2).withPerSecond(20, 5)
 * Limit.weight(3)                       // tenants only
 * Limit.maxRunning(4).withWeight(3)
 * }</pre>
 *
 * <p>A tenant's weight is its share of the starts of each queue against the other tenants with
 * tasks waiting there (weighted fair share: with weights 3 and 1, both backlogged, three of the
 * first's tasks start for each of the second's; a tenant without a weight has 1; an idle tenant
 * banks no credit). While no tenant has a weight, tasks start in (priority, run_at, id) order.
 *
 * @param maxRunning how many of its tasks may run at once, 1 to 1024, or null for no concurrency limit
 * @param perSecond starts a second, above 0 and at most 1,000,000, or null for no rate
 * @param burst starts admitted at once by a rate (at least 1; 1 when null), only with a rate
 * @param weight a tenant's share of its queues' starts, above 0 and at most 1000, or null for 1
 */
public record Limit(Integer maxRunning, BigDecimal perSecond, Integer burst, BigDecimal weight) {

  /** The most a limit may admit at once: the slots of one key (docs/how-it-works.md, "Limits"). */
  public static final int MAX_RUNNING = 1024;

  public Limit {
    if (maxRunning == null && perSecond == null && weight == null) {
      throw invalid("limit_not_empty", "give max_running, per_second or weight (Limits.clear removes a limit)");
    }
    if (maxRunning != null && (maxRunning < 1 || maxRunning > MAX_RUNNING)) {
      throw invalid("limit_max_running", "max_running must be between 1 and " + MAX_RUNNING + ", not " + maxRunning);
    }
    if (perSecond != null && (perSecond.signum() <= 0 || perSecond.compareTo(BigDecimal.valueOf(1_000_000)) > 0)) {
      throw invalid("limit_per_second", "per_second must be above 0 and at most 1000000, not " + perSecond);
    }
    if (burst != null && perSecond == null) {
      throw invalid("limit_burst_needs_rate", "burst needs per_second");
    }
    if (burst != null && (burst < 1 || burst > 1_000_000)) {
      throw invalid("limit_burst", "burst must be between 1 and 1000000, not " + burst);
    }
    if (weight != null && (weight.signum() <= 0 || weight.compareTo(BigDecimal.valueOf(1000)) > 0)) {
      throw invalid("limit_weight", "weight must be above 0 and at most 1000, not " + weight.toPlainString());
    }
  }

  /** A limit without a weight. */
  public Limit(Integer maxRunning, BigDecimal perSecond, Integer burst) {
    this(maxRunning, perSecond, burst, null);
  }

  private static InvalidLimitException invalid(String constraint, String message) {
    return new InvalidLimitException(constraint, "pgtask: invalid limit: " + message);
  }

  /** At most {@code n} tasks of the key run at once. */
  public static Limit maxRunning(int n) {
    return new Limit(n, null, null);
  }

  /** At most {@code burst + rate × t} starts of the key in any t seconds. */
  public static Limit perSecond(double rate, int burst) {
    return new Limit(null, BigDecimal.valueOf(rate), burst);
  }

  /** This limit with a rate too. */
  public Limit withPerSecond(double rate, int burst) {
    return new Limit(maxRunning, BigDecimal.valueOf(rate), burst, weight);
  }

  /** A tenant's weight in weighted fair share (tenants only: a queue or kind refuses it). */
  public static Limit weight(double weight) {
    return new Limit(null, null, null, BigDecimal.valueOf(weight));
  }

  /** This limit with a tenant's weight too. */
  public Limit withWeight(double weight) {
    return new Limit(maxRunning, perSecond, burst, BigDecimal.valueOf(weight));
  }
}
