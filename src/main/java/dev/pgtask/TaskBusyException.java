package dev.pgtask;

/**
 * An operation on a task could not be applied without waiting: the task is running (its worker's
 * transaction holds it), or another transaction holds it right now. Nothing was changed. The message
 * names the task, its worker and since when.
 */
public class TaskBusyException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  public TaskBusyException(String message, Throwable cause) {
    super(message, cause);
  }
}
