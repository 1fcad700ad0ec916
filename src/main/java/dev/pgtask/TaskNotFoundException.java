package dev.pgtask;

/** No task has the given id (it never existed, or it was deleted or pruned). */
public class TaskNotFoundException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  public TaskNotFoundException(String message, Throwable cause) {
    super(message, cause);
  }
}
