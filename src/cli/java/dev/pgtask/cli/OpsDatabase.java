package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.InvalidTaskException;
import dev.pgtask.PgTaskException;
import dev.pgtask.TaskBusyException;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskStateException;
import dev.pgtask.internal.sql.Sql;
import java.util.function.Function;
import org.jooq.DSLContext;

/**
 * The database behind one operator command: a small pool opened after a reachability check (exit
 * 3 with one line when nothing answers), and the translation of pgtask's errors to exit codes.
 */
final class OpsDatabase implements AutoCloseable {

  private final ConnectionSettings settings;
  private final HikariDataSource pool;
  private final DSLContext dsl;

  private OpsDatabase(ConnectionSettings settings, HikariDataSource pool) {
    this.settings = settings;
    this.pool = pool;
    this.dsl = Sql.using(pool);
  }

  /** Connects as {@code application_name = applicationName}; throws {@link CliException} (exit 3) when it cannot. */
  static OpsDatabase open(ConnectionOptions connection, String applicationName) {
    ConnectionSettings settings = connection.settings().forOneCommand();
    settings.checkReachable(applicationName);
    return new OpsDatabase(settings, settings.openPool("pgtask-cli", 2, applicationName));
  }

  HikariDataSource dataSource() {
    return pool;
  }

  ConnectionSettings settings() {
    return settings;
  }

  /** Runs {@code query}; a missing pgtask schema and pgtask's task errors become {@link CliException}s. */
  <T> T run(Function<DSLContext, T> query) {
    try {
      return query.apply(dsl);
    } catch (RuntimeException e) {
      throw translate(e);
    }
  }

  /** The exit code and one-line message for a failure of a pgtask call. */
  CliException translate(RuntimeException e) {
    if (e instanceof CliException c) {
      return c;
    }
    CliException noSchema = OpsConnection.missingSchema(settings, Sql.sqlState(e), e);
    if (noSchema != null) {
      return noSchema;
    }
    if (e instanceof PgTaskException p) {
      String msg = p.getMessage() == null ? p.getClass().getSimpleName() : p.getMessage().replaceFirst("^pgtask: ", "");
      int code = e instanceof TaskNotFoundException ? ExitCodes.NOT_FOUND
          : e instanceof TaskBusyException ? ExitCodes.BUSY
          : e instanceof TaskStateException ? ExitCodes.WRONG_STATE
          : e instanceof InvalidTaskException || e instanceof dev.pgtask.InvalidLimitException ? ExitCodes.USAGE
          : ExitCodes.FAILURE;
      return new CliException(code, msg, e);
    }
    return new CliException(Main.isConnectionFailure(e) ? ExitCodes.CANNOT_CONNECT : ExitCodes.FAILURE,
        Main.oneLine(Main.describe(e)), e);
  }

  @Override
  public void close() {
    pool.close();
  }
}
