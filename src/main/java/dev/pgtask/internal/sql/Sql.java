package dev.pgtask.internal.sql;

import dev.pgtask.InvalidTaskException;
import dev.pgtask.PgTaskException;
import dev.pgtask.TaskBusyException;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskStateException;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/** jOOQ contexts configured the pgtask way, and translation of database errors. */
public final class Sql {

  static {
    // jOOQ prints a banner and tips on first use; a library should stay quiet.
    if (System.getProperty("org.jooq.no-logo") == null) {
      System.setProperty("org.jooq.no-logo", "true");
    }
    if (System.getProperty("org.jooq.no-tips") == null) {
      System.setProperty("org.jooq.no-tips", "true");
    }
  }

  private static final Settings SETTINGS = new Settings()
      .withExecuteLogging(false)
      .withRenderSchema(true)
      .withRenderFormatted(false);

  private Sql() {}

  /** The settings every pgtask jOOQ context uses. */
  static Settings settings() {
    return SETTINGS;
  }

  /** A context that borrows a pooled connection per statement (autocommit). */
  public static DSLContext using(DataSource dataSource) {
    return DSL.using(dataSource, SQLDialect.POSTGRES, SETTINGS);
  }

  /** A context over one connection, e.g. the caller's or the task's transaction. */
  public static DSLContext using(Connection connection) {
    return DSL.using(connection, SQLDialect.POSTGRES, SETTINGS);
  }

  /** The message of the innermost cause, for one-line reports. */
  public static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    String m = c.getMessage() != null ? c.getMessage() : c.getClass().getSimpleName();
    if (dev.pgtask.internal.pooler.Poolers.isNamedStatementClash(t)) {
      // pgjdbc's named statements behind a transaction pooler: say what to change
      m += " (pgjdbc's named server-side statements behind a transaction pooler: "
          + dev.pgtask.internal.pooler.Poolers.PREPARE_FIX + ")";
    }
    return m;
  }

  /** The SQLSTATE of the database error behind {@code t}, or {@code null}. */
  public static String sqlState(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLException e && e.getSQLState() != null) {
        return e.getSQLState();
      }
    }
    return null;
  }

  /**
   * Turns a database error into pgtask's exception: a check violation raised by pgtask's
   * validation becomes {@link InvalidTaskException} naming the rule. Server error details (which
   * could contain row contents) are never copied into the message.
   */
  public static RuntimeException translate(String action, RuntimeException e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof PSQLException p) {
        ServerErrorMessage m = p.getServerErrorMessage();
        String state = p.getSQLState();
        if (m != null && "23514".equals(state)) {
          String constraint = m.getConstraint();
          String message = m.getMessage();
          if (message == null || !message.startsWith("pgtask:")) {
            message = "pgtask: invalid task: violates " + constraint;
          }
          return new InvalidTaskException(constraint, message);
        }
        String msg = m != null && m.getMessage() != null ? m.getMessage() : p.getMessage();
        if (msg != null && msg.startsWith("pgtask: ")) {
          switch (String.valueOf(state)) {
            case "55P03":
              return new TaskBusyException(msg, e);
            case "P0002":
              return new TaskNotFoundException(msg, e);
            case "55000":
              return new TaskStateException(msg, e);
            default:
              break;
          }
        }
        if (dev.pgtask.internal.pooler.Poolers.isNamedStatementClash(p)) {
          msg += " (pgjdbc's named server-side statements behind a transaction pooler: "
              + dev.pgtask.internal.pooler.Poolers.PREPARE_FIX + ")";
        }
        return new PgTaskException("pgtask: " + action + " failed: " + msg + " (SQLSTATE " + state + ")", e);
      }
    }
    return e instanceof PgTaskException ? e : new PgTaskException("pgtask: " + action + " failed: " + e.getMessage(), e);
  }
}
