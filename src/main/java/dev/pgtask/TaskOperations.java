package dev.pgtask;

import dev.pgtask.internal.sql.OperationQueries;
import java.util.Objects;
import org.jooq.DSLContext;

/** {@link PgTask}'s operations on one task by id: cancel, retry, delete, update. */
final class TaskOperations {

  private final DSLContext dsl;
  private final Payloads payloads;

  TaskOperations(DSLContext dsl, Payloads payloads) {
    this.dsl = dsl;
    this.payloads = payloads;
  }

  CancelResult cancel(long taskId) {
    String r = Failures.call("cancel", () -> OperationQueries.cancelTask(dsl, taskId));
    return "cancelled".equals(r) ? CancelResult.CANCELLED : CancelResult.CANCEL_REQUESTED;
  }

  void retry(long taskId) {
    Failures.call("retry", () -> {
      OperationQueries.retryTask(dsl, taskId);
      return null;
    });
  }

  void delete(long taskId) {
    Failures.call("delete", () -> {
      OperationQueries.deleteTask(dsl, taskId);
      return null;
    });
  }

  /** {@code pgtask.update_task}, where NULL leaves a field as it is: what {@code change} does not set. */
  void update(long taskId, TaskUpdate change) {
    Objects.requireNonNull(change, "change");
    String json = change.payload().map(p -> payloads.json(p, -1)).orElse(null);
    Failures.call("update", () -> {
      OperationQueries.updateTask(dsl, taskId, json, change.runAt().orElse(null), change.priority().orElse(null));
      return null;
    });
  }
}
