package dev.pgtask.cli;

import dev.pgtask.PgTaskException;
import dev.pgtask.ops.PgTaskOperations;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.function.Function;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The database behind a read-only operator command ({@code status}, {@code locks}, {@code workers},
 * {@code tasks}, {@code schedules}, {@code explain}): one plain JDBC connection, no pool, no jOOQ,
 * read through the public {@link PgTaskOperations} (over a data source that hands out that one
 * connection), so that the command costs a JVM start and a few round trips (docs/benchmarks.md,
 * "Command line"). Failures are the same one-line
 * errors with the same exit codes as {@link OpsDatabase}'s: 3 when nothing answers, 1 with "run
 * 'pgtask migrate' first" when the database has no pgtask schema.
 */
final class OpsConnection implements AutoCloseable {

  private final ConnectionSettings settings;
  private final Connection connection;
  private final PgTaskOperations operations;

  private OpsConnection(ConnectionSettings settings, Connection connection) {
    this.settings = settings;
    this.connection = connection;
    this.operations = PgTaskOperations.create(new OneConnection(connection));
  }

  /** Connects as {@code application_name = applicationName}; throws {@link CliException} (exit 3) when it cannot. */
  static OpsConnection open(ConnectionOptions options, String applicationName) {
    ConnectionSettings settings = options.settings().forOneCommand();
    Properties props = settings.driverProperties();
    props.setProperty("ApplicationName", applicationName);
    props.setProperty("assumeMinServerVersion", ConnectionSettings.ASSUME_MIN_SERVER_VERSION);
    try {
      return new OpsConnection(settings, DriverManager.getConnection(settings.jdbcUrl(), props));
    } catch (SQLException e) {
      throw settings.cannotConnect(e);
    }
  }

  /** Runs {@code read}; a missing pgtask schema and a lost connection become {@link CliException}s. */
  <T> T read(Function<PgTaskOperations, T> read) {
    try {
      return read.apply(operations);
    } catch (PgTaskException e) {
      Throwable cause = e.getCause() instanceof SQLException s ? s : e;
      CliException noSchema = missingSchema(settings, cause instanceof SQLException s ? s.getSQLState() : null, cause);
      throw noSchema != null ? noSchema
          : new CliException(Main.isConnectionFailure(cause) ? ExitCodes.CANNOT_CONNECT : ExitCodes.FAILURE,
              Main.oneLine(Main.describe(cause)), e);
    }
  }

  /**
   * The error for a statement that found no pgtask schema (or an older one: a missing relation,
   * schema or function), or {@code null} when {@code sqlState} says something else.
   */
  static CliException missingSchema(ConnectionSettings settings, String sqlState, Throwable e) {
    if (!"42P01".equals(sqlState) && !"3F000".equals(sqlState) && !"42883".equals(sqlState)) {
      return null;
    }
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String message = root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
    return new CliException(ExitCodes.FAILURE, "no pgtask schema (or an older one) in " + settings.describe()
        + ": run 'pgtask migrate' first (" + Main.oneLine(message) + ")", e);
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (SQLException e) {
      // the command's output is complete; a failed close of a read-only session changes nothing
    }
  }

  /**
   * A data source that hands out the command's one connection, its {@code close()} left to the
   * command: {@link PgTaskOperations} closes what it borrows after each read.
   */
  private static final class OneConnection implements DataSource {

    private final Connection borrowed;

    OneConnection(Connection connection) {
      this.borrowed = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, method, args) -> {
            if (method.getName().equals("close") && method.getParameterCount() == 0) {
              return null;
            }
            try {
              return method.invoke(connection, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    @Override
    public Connection getConnection() {
      return borrowed;
    }

    @Override
    public Connection getConnection(String username, String password) {
      return borrowed;
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
      // nothing to log
    }

    @Override
    public void setLoginTimeout(int seconds) {
      // connected already
    }

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
      return false;
    }
  }
}
