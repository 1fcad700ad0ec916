package dev.pgtask;

/**
 * A task was rejected at enqueue because one of its fields is invalid; nothing was stored.
 *
 * <p>{@link #constraint()} names the rule that failed, the same name the database uses (e.g.
 * {@code task_queue_format}, {@code task_payload_size}), including the bounds the database's owner
 * set on the enqueueing role ({@code task_priority_bound}, {@code task_run_at_bound}: see
 * {@code pgtask.set_producer_bounds}). The message never contains the payload.
 */
public class InvalidTaskException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  private final String constraint;

  public InvalidTaskException(String constraint, String message) {
    super(message);
    this.constraint = constraint;
  }

  public InvalidTaskException(String constraint, String message, Throwable cause) {
    super(message, cause);
    this.constraint = constraint;
  }

  /** The name of the rule that rejected the task, e.g. {@code task_kind_length}. */
  public String constraint() {
    return constraint;
  }
}
