package dev.pgtask.cli;

/** The exit codes of {@code bin/pgtask}: scripts may rely on them. */
public final class ExitCodes {

  /** Success (for {@code worker}: stopped gracefully after SIGTERM/SIGINT). */
  public static final int OK = 0;
  /** The command ran and failed. */
  public static final int FAILURE = 1;
  /** Bad command line: unknown option, bad value, missing argument. */
  public static final int USAGE = 2;
  /** No database: the server does not answer, refuses the login, or the database does not exist. */
  public static final int CANNOT_CONNECT = 3;

  private ExitCodes() {}
}
