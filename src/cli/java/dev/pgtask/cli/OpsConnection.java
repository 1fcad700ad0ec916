package dev.pgtask.cli;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * The database behind a read-only operator command ({@code status}, {@code locks}, {@code workers},
 * {@code tasks}): one plain JDBC connection, no pool, no jOOQ, so that the command costs a JVM
 * start and a few round trips (docs/benchmarks.md, "Command line"). Failures are the same one-line
 * errors with the same exit codes as {@link OpsDatabase}'s: 3 when nothing answers, 1 with "run
 * 'pgtask migrate' first" when the database has no pgtask schema.
 */
final class OpsConnection implements AutoCloseable {

  /** A read over the connection. */
  interface Read<T> {
    T read(Connection c) throws SQLException;
  }

  private final ConnectionSettings settings;
  private final Connection connection;

  private OpsConnection(ConnectionSettings settings, Connection connection) {
    this.settings = settings;
    this.connection = connection;
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
  <T> T read(Read<T> read) {
    try {
      return read.read(connection);
    } catch (SQLException e) {
      CliException noSchema = missingSchema(settings, e.getSQLState(), e);
      throw noSchema != null ? noSchema
          : new CliException(Main.isConnectionFailure(e) ? ExitCodes.CANNOT_CONNECT : ExitCodes.FAILURE,
              Main.oneLine(Main.describe(e)), e);
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
}
