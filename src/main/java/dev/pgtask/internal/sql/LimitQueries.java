package dev.pgtask.internal.sql;

import dev.pgtask.internal.sql.gen.Routines;
import org.jooq.DSLContext;

/**
 * Limits through the database functions of {@code R__01a_flow_limits.sql} (the view
 * {@code pgtask.limits} is read by {@link OperatorViews}).
 */
public final class LimitQueries {

  private LimitQueries() {}

  /**
   * {@code pgtask.set_limit(scope, key, max_running, per_second, burst, weight)}: "created" or "changed". Refuses bad input
   * with SQLSTATE 23514 and the rule's constraint name. Locks: the limit's row; a tenant's waiting
   * tasks it promotes to heads (SKIP LOCKED).
   */
  public static String setLimit(DSLContext dsl, String scope, String key, Integer maxRunning,
      java.math.BigDecimal perSecond, Integer burst, java.math.BigDecimal weight) {
    return Routines.setLimit(dsl.configuration(), scope, key, maxRunning, perSecond, burst, weight);
  }

  /** {@code pgtask.clear_limit(scope, key)}: whether there was one. Locks: the limit's row. */
  public static boolean clearLimit(DSLContext dsl, String scope, String key) {
    return Boolean.TRUE.equals(Routines.clearLimit(dsl.configuration(), scope, key));
  }
}
