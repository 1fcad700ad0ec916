package dev.pgtask.testsupport;

import java.sql.SQLException;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/** What the server said when it rejected a statement, for assertions. */
public record ServerErrors(String sqlState, String constraint, String message, String everything) {

  /** Runs {@code statement}, which must fail with a database error, and returns that error. */
  public static ServerErrors of(ThrowingRunnable statement) {
    try {
      statement.run();
    } catch (SQLException e) {
      return from(e);
    } catch (Exception e) {
      for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
        if (c instanceof SQLException s) {
          return from(s);
        }
      }
      throw new AssertionError("expected a database error, got " + e, e);
    }
    throw new AssertionError("expected the database to reject the statement, but it succeeded");
  }

  /** The error behind {@code e}: SQLSTATE, constraint name, message and every text the server sent. */
  public static ServerErrors from(SQLException e) {
    String constraint = null;
    String message = e.getMessage();
    StringBuilder all = new StringBuilder(String.valueOf(e.getMessage()));
    if (e instanceof PSQLException p && p.getServerErrorMessage() != null) {
      ServerErrorMessage m = p.getServerErrorMessage();
      constraint = m.getConstraint();
      message = m.getMessage();
      all.append('\n').append(m.getMessage())
          .append('\n').append(m.getDetail())
          .append('\n').append(m.getHint())
          .append('\n').append(m.getWhere())
          .append('\n').append(m.getInternalQuery())
          .append('\n').append(m);
    }
    return new ServerErrors(e.getSQLState(), constraint, message, all.toString());
  }

  /** A statement that may throw. */
  @FunctionalInterface
  public interface ThrowingRunnable {
    void run() throws Exception;
  }
}
