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
    try {
      String r = OperationQueries.cancelTask(dsl, taskId);
      return "cancelled".equals(r) ? CancelResult.CANCELLED : CancelResult.CANCEL_REQUESTED;
    } catch (RuntimeException e) {
      throw Failures.of("cancel", e);
    }
  }

  void retry(long taskId) {
    try {
      OperationQueries.retryTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw Failures.of("retry", e);
    }
  }

  void delete(long taskId) {
    try {
      OperationQueries.deleteTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw Failures.of("delete", e);
    }
  }

  /** {@code pgtask.update_task}, where NULL leaves a field as it is: what {@code change} does not set. */
  void update(long taskId, TaskUpdate change) {
    Objects.requireNonNull(change, "change");
    String json = change.payload().map(p -> payloads.json(p, -1)).orElse(null);
    try {
      OperationQueries.updateTask(dsl, taskId, json, change.runAt().orElse(null), change.priority().orElse(null));
    } catch (RuntimeException e) {
      throw Failures.of("update", e);
    }
  }
}
