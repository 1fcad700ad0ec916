package dev.pgtask;

/**
 * A worker could not register: a live worker holds its id (its heartbeat is less than a minute old
 * by the database clock, or its LISTEN session is connected). Nothing was changed: the live
 * worker's registry row and tasks are untouched. Give each worker process its own id (the default
 * is unique per process start), or wait until the other one has stopped.
 */
public class WorkerIdInUseException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  private final String workerId;

  public WorkerIdInUseException(String workerId, String message) {
    super(message);
    this.workerId = workerId;
  }

  /** The id that is in use. */
  public String workerId() {
    return workerId;
  }
}
