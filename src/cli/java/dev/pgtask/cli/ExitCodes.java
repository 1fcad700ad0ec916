package dev.pgtask.cli;

/** The exit codes of {@code bin/pgtask}: scripts may rely on them. */
public final class ExitCodes {

  /** Success (for {@code worker}: stopped gracefully after SIGTERM/SIGINT). */
  public static final int OK = 0;
  /** The command ran and failed. */
  public static final int FAILURE = 1;
  /** Bad command line: unknown option, bad value, missing argument; also an invalid task at {@code enqueue}. */
  public static final int USAGE = 2;
  /** No database: the server does not answer, refuses the login, or the database does not exist. */
  public static final int CANNOT_CONNECT = 3;
  /** {@code cancel}, {@code retry}, {@code delete}: no task with that id. */
  public static final int NOT_FOUND = 4;
  /** {@code cancel}, {@code retry}, {@code delete}: the task is running, or another transaction holds it right now. */
  public static final int BUSY = 5;
  /** {@code cancel}, {@code retry}: the task is in a state that does not allow it (e.g. retry a completed task). */
  public static final int WRONG_STATE = 6;

  private ExitCodes() {}
}
