package dev.pgtask;

/**
 * Thrown by a handler to fail the task for good: it is discarded now, with the message recorded
 * in its error history, whatever attempts remain.
 */
public class DiscardTaskException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public DiscardTaskException(String reason) {
    super(reason);
  }

  public DiscardTaskException(String reason, Throwable cause) {
    super(reason, cause);
  }
}
