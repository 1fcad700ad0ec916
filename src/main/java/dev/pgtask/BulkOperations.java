package dev.pgtask;

import dev.pgtask.internal.sql.OperationQueries;
import dev.pgtask.internal.sql.TxBounds;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * {@link PgTask}'s operations on every task a {@link TaskFilter} matches: retry, cancel, delete,
 * each one statement ({@code pgtask.retry_tasks} and its siblings) in a transaction bounded on the
 * server ({@link #BOUNDS}).
 */
final class BulkOperations {

  /**
   * The server-side bounds of a bulk operation's transaction: its statement may run for up to five
   * minutes (it changes every matched task at once), and waits for a lock and idles in its
   * transaction for up to five seconds (it skips locked rows instead of waiting for them).
   */
  static final TxBounds BOUNDS = new TxBounds(Duration.ofMinutes(5), Duration.ofSeconds(5), Duration.ofSeconds(5));

  private final DataSource dataSource;

  BulkOperations(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  BulkResult retry(TaskFilter filter, boolean dryRun) {
    return run("retry", filter, dryRun);
  }

  BulkResult cancel(TaskFilter filter, boolean dryRun) {
    return run("cancel", filter, dryRun);
  }

  BulkResult delete(TaskFilter filter, boolean dryRun) {
    return run("delete", filter, dryRun);
  }

  private BulkResult run(String action, TaskFilter filter, boolean dryRun) {
    if (filter == null || filter.isEmpty()) {
      throw new IllegalArgumentException("pgtask: cannot " + action + " tasks without a filter: set at least one of "
          + "kind, queue, state, tenant, errorLike, since, from, until");
    }
    OperationQueries.Filter f = new OperationQueries.Filter(filter.kind(), filter.queue(),
        filter.state() == null ? null : filter.state().sqlName(), filter.tenant(), filter.errorLike(), filter.since(),
        filter.from(), filter.until());
    List<OperationQueries.Counted> rows = Failures.call(action + " tasks",
        () -> BOUNDS.inTransaction(dataSource, dsl -> switch (action) {
          case "retry" -> OperationQueries.retryTasks(dsl, f, dryRun);
          case "cancel" -> OperationQueries.cancelTasks(dsl, f, dryRun);
          default -> OperationQueries.deleteTasks(dsl, f, dryRun);
        }));
    return new BulkResult(dryRun, rows.stream()
        .map(r -> new BulkResult.ForState(TaskState.fromSql(r.state()), r.changed(), r.skipped())).toList());
  }
}
