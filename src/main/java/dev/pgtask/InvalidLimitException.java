package dev.pgtask;

/**
 * A limit was refused ({@link Limits#set}, {@link Limits#clear}, {@code pgtask.set_limit}):
 * an unknown scope, an empty or too long key, an invalid queue name, or a maximum outside 1 to 1024.
 * Nothing was stored. {@link #constraint()} names the rule, as the database does (e.g.
 * {@code limit_scope}, {@code limit_key_length}, {@code limit_max_running}, {@code task_queue_format}).
 */
public class InvalidLimitException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  private final String constraint;

  public InvalidLimitException(String constraint, String message) {
    super(message);
    this.constraint = constraint;
  }

  public InvalidLimitException(String constraint, String message, Throwable cause) {
    super(message, cause);
    this.constraint = constraint;
  }

  /** The name of the rule that refused the limit, e.g. {@code limit_max_running}. */
  public String constraint() {
    return constraint;
  }
}
