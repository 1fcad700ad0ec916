package dev.pgtask;

/** Base class of the exceptions pgtask throws. Unchecked. */
public class PgTaskException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public PgTaskException(String message) {
    super(message);
  }

  public PgTaskException(String message, Throwable cause) {
    super(message, cause);
  }
}
