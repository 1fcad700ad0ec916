package dev.pgtask.cli;

/** A failure the CLI reports as one line on stderr, with its own exit code (see {@link ExitCodes}). */
public final class CliException extends RuntimeException {

  private final int exitCode;

  public CliException(int exitCode, String message) {
    super(message);
    this.exitCode = exitCode;
  }

  public CliException(int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  /** The process exit code this failure maps to. */
  public int exitCode() {
    return exitCode;
  }
}
