package dev.pgtask;

import dev.pgtask.internal.sql.LimitQueries;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/** {@link PgTask}'s limits: set, clear and list them through {@code pgtask.set_limit}, {@code clear_limit}, {@code limits}. */
final class LimitOperations {

  private final DataSource dataSource;
  private final DSLContext dsl;

  LimitOperations(DataSource dataSource, DSLContext dsl) {
    this.dataSource = dataSource;
    this.dsl = dsl;
  }

  boolean set(LimitScope scope, String key, Limit limit) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(limit, "limit");
    return "created".equals(call("set limit", () -> LimitQueries.setLimit(dsl, scope.sqlName(), key, limit.maxRunning(),
        limit.perSecond(), limit.burst())));
  }

  boolean clear(LimitScope scope, String key) {
    Objects.requireNonNull(scope, "scope");
    return call("clear limit", () -> LimitQueries.clearLimit(dsl, scope.sqlName(), key));
  }

  List<dev.pgtask.ops.LimitStatus> list() {
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
