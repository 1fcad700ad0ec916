package dev.pgtask.spring;

import dev.pgtask.HandlerOptions;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;

/**
 * A handler bean: every bean of this type in the application context is registered with the
 * auto-configured worker at startup. The payload type is the type argument; the kind is the one
 * the payload record declares with {@link TaskKind} (the same the producer enqueues with), so it
 * is written once.
 *
 * <pre>{@code
 * @TaskKind("invoice.send")
 * public record SendInvoice(long invoiceId) implements TaskArgs {}
 *
 * @Component
 * class SendInvoiceHandler implements PgTaskHandler<SendInvoice> {
 *   private final JdbcTemplate jdbc;
 *   SendInvoiceHandler(JdbcTemplate jdbc) { this.jdbc = jdbc; }
 *
 *   public void handle(TaskContext ctx, SendInvoice task) {
 *     // joins the task's transaction: commits with the task's completion, or rolls back with it
 *     jdbc.update("INSERT INTO invoice_mail (invoice_id) VALUES (?)", task.invoiceId());
 *   }
 * }
 * }</pre>
 *
 * <p>In the default transactional mode the task's connection is bound to Spring's transaction
 * synchronization for the application's {@code DataSource} while {@link #handle} runs: the
 * application's {@code JdbcTemplate}, Boot's jOOQ {@code DSLContext}, {@code DataSourceUtils} and
 * {@code @Transactional} methods (propagation {@code REQUIRED}, {@code SUPPORTS}, {@code MANDATORY})
 * all work inside the task's transaction. A failed attempt rolls all of it back. A method with
 * {@code REQUIRES_NEW} runs in its own transaction on the application's pool and commits on its own,
 * as it would anywhere else.
 *
 * @param <T> the payload type: a {@link TaskArgs} record annotated with {@link TaskKind}, or
 *     Jackson's {@code JsonNode} (then {@link #kind()} must be overridden)
 */
public interface PgTaskHandler<T> {

  /**
   * Runs one task. Returning normally completes it; throwing retries it with backoff (or discards
   * it once attempts are exhausted); see {@link dev.pgtask.TaskHandler} for the exceptions that decide
   * explicitly.
   */
  void handle(TaskContext context, T payload) throws Exception;

  /**
   * The kind this handler runs. Default: the {@link TaskKind} of the payload type; override it for
   * {@code JsonNode} payloads or payload types that override {@link TaskArgs#kind()} instead.
   */
  default String kind() {
    return TaskArgs.kindOf(PgTaskHandlers.payloadType(this));
  }

  /** This kind's execution options (timeout, mode); default: transactional, the worker's timeout. */
  default HandlerOptions options() {
    return HandlerOptions.defaults();
  }
}
