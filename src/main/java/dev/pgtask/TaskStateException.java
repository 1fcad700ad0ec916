package dev.pgtask;

/**
 * The task's state does not allow the operation (e.g. retrying a completed task, cancelling a
 * finished one). Nothing was changed.
 */
public class TaskStateException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  public TaskStateException(String message, Throwable cause) {
    super(message, cause);
  }
}
