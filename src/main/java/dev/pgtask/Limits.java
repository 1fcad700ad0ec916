package dev.pgtask;

import dev.pgtask.internal.sql.LimitQueries;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * The limits of tenants, queues and kinds ({@link PgTask#limits()}; docs/how-it-works.md, "Limits"):
 * durable, read by every claim and every start across the cluster, changeable while tasks run.
 *
 * <pre>{@code
 * pgTask.limits().set(LimitScope.TENANT, "acme", Limit.maxRunning(4));
 * pgTask.limits().set(LimitScope.KIND, "report.render", Limit.maxRunning(2));
 * pgTask.limits().set(LimitScope.KIND, "sms.send", Limit.perSecond(50, 10));
 * pgTask.limits().set(LimitScope.TENANT, "bigco", Limit.maxRunning(8).withWeight(3));
 * }</pre>
 */
public final class Limits {

  private final DataSource dataSource;
  private final DSLContext dsl;

  Limits(DataSource dataSource, DSLContext dsl) {
    this.dataSource = dataSource;
    this.dsl = dsl;
  }

  /**
   * Sets the limit of a tenant, queue or kind ({@code pgtask.set_limit}), replacing any limit it
   * had: at most {@code limit.maxRunning()} of its tasks run at once across the whole cluster, and/or
   * at most {@code burst + perSecond × t} start in any t seconds, and/or (a tenant) a weight in fair
   * share of its queues' starts, composed with every other limit
   * that applies (a task starts only when all of them admit it). Workers that start later obey it;
   * it applies to every task that starts after this call returns. A lowered limit stops no running
   * task. Without a limit a tenant runs one task at a time, and a queue or kind is unlimited.
   *
   * @return true when the key had no limit before, false when this replaced one
   * @throws InvalidLimitException the key is empty or too long, or not a valid queue name, or a weight
   *     is given for a queue or kind; nothing was stored
   */
  public boolean set(LimitScope scope, String key, Limit limit) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(limit, "limit");
    return "created".equals(call("set limit", () -> LimitQueries.setLimit(dsl, scope.sqlName(), key, limit.maxRunning(),
        limit.perSecond(), limit.burst(), limit.weight())));
  }

  /**
   * Removes the limit of a tenant, queue or kind ({@code pgtask.clear_limit}): a tenant then runs
   * one task at a time again, a queue or kind is unlimited.
   *
   * @return true when there was a limit
   * @throws InvalidLimitException the key is empty or too long, or not a valid queue name
   */
  public boolean clear(LimitScope scope, String key) {
    Objects.requireNonNull(scope, "scope");
    return call("clear limit", () -> LimitQueries.clearLimit(dsl, scope.sqlName(), key));
  }

  /** Every limit with what it admits now ({@code pgtask.limits}), by scope and key. */
  public List<dev.pgtask.ops.LimitStatus> list() {
    return Failures.call("list limits", () -> dev.pgtask.ops.PgTaskOperations.create(dataSource).limits());
  }

  /** Runs a limit statement; a refused input is an {@link InvalidLimitException} with the rule's name. */
  private static <T> T call(String action, java.util.function.Supplier<T> statement) {
    try {
      return statement.get();
    } catch (RuntimeException e) {
      RuntimeException translated = Failures.of(action, e);
      if (translated instanceof InvalidTaskException invalid) {
        throw new InvalidLimitException(invalid.constraint(),
            invalid.getMessage().replace("pgtask: invalid task:", "pgtask: invalid limit:"), e);
      }
      throw translated;
    }
  }
}
