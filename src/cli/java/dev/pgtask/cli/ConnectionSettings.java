package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.internal.Secrets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;

/**
 * Where the CLI connects, resolved the way PostgreSQL users expect:
 * <ol>
 *   <li>{@code --url}, else</li>
 *   <li>the environment variable {@code PGTASK_URL}, else</li>
 *   <li>the libpq variables {@code PGHOST PGPORT PGDATABASE PGUSER PGPASSWORD} with libpq's
 *       defaults: host {@code localhost}, port 5432, user = the OS user, database = the user.</li>
 * </ol>
 * A URL is either a JDBC URL ({@code jdbc:postgresql://host:port/db?user=u&password=p}) or a libpq
 * URI ({@code postgres://} or {@code postgresql://user:password@host:port/db?sslmode=require}),
 * converted to JDBC. As with libpq, what a URL leaves out (user, password; for a URI also host,
 * port and database) comes from the libpq variables and their defaults.
 *
 * @param jdbcUrl the pgjdbc URL (may carry parameters, including credentials given in the URL)
 * @param user the user to log in as, when not given in {@code jdbcUrl}; else the URL's user (informative)
 * @param password the password to send when {@code jdbcUrl} has none, or {@code null}
 * @param source where the settings came from: {@code --url}, {@code PGTASK_URL} or {@code PG* variables}
 */
public record ConnectionSettings(String jdbcUrl, String user, String password, String source) {

  /**
   * Lets pgjdbc send {@code application_name} in the startup packet instead of a {@code SET} after
   * login, so a session is never seen in {@code pg_stat_activity} without its name (pgtask needs
   * PostgreSQL 10+ anyway).
   */
  static final String ASSUME_MIN_SERVER_VERSION = "10";

  private static final String HINT = "to use another server, set --url, PGTASK_URL or PGHOST/PGPORT/PGUSER/PGDATABASE";

  /** Resolves from the command line option, this process's environment and OS user. */
  public static ConnectionSettings resolve(String urlOption) {
    return resolve(urlOption, System.getenv(), System.getProperty("user.name"));
  }
  /** Resolves from an explicit environment (for tests). Throws {@link CliException} (usage) for a bad URL. */
  public static ConnectionSettings resolve(String urlOption, Map<String, String> env, String osUser) {
    return ConnectionUrls.resolve(urlOption, env, osUser);
  }

  /** The properties to pass to the driver next to {@link #jdbcUrl()}. */
  public Properties driverProperties() {
    Properties props = new Properties();
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password);
    }
    return props;
  }

  /** Where this connects, for messages: the URL without its parameters (which may hold a password), and the user. */
  public String describe() {
    int q = jdbcUrl.indexOf('?');
    String base = q < 0 ? jdbcUrl : jdbcUrl.substring(0, q);
    return base + (user != null ? " as " + user : "");
  }

  /**
   * Opens and closes one connection, to fail fast with a one-line message.
   *
   * @throws CliException with {@link ExitCodes#CANNOT_CONNECT} when the server cannot be reached,
   *     refuses the login or has no such database
   */
  public void checkReachable(String applicationName) {
    Properties props = driverProperties();
    props.setProperty("ApplicationName", applicationName);
    props.setProperty("assumeMinServerVersion", ASSUME_MIN_SERVER_VERSION);
    try (Connection c = DriverManager.getConnection(jdbcUrl, props)) {
      c.isValid(5);
    } catch (SQLException e) {
      throw cannotConnect(e);
    }
  }

  /**
   * These settings, fitted to a transaction pooler (PgBouncer with {@code pool_mode = transaction})
   * found in front of the server by {@link dev.pgtask.internal.pooler.Poolers#probe}: pgjdbc's named
   * server-side statements collide there and stay prepared on its server sessions, so {@code
   * prepareThreshold=0} is added to the URL ({@link dev.pgtask.internal.pooler.UnnamedStatements#url}),
   * said once on the log. The probe itself names nothing. A URL that asks for a positive {@code prepareThreshold} itself is an error
   * that says what to change. Without a transaction pooler (or with the threshold already 0),
   * these settings.
   */
  public ConnectionSettings forPooler(String applicationName) {
    Properties props = driverProperties();
    props.setProperty("ApplicationName", applicationName);
    props.setProperty("assumeMinServerVersion", ASSUME_MIN_SERVER_VERSION);
    dev.pgtask.internal.pooler.Poolers.Probe probe;
    try {
      probe = dev.pgtask.internal.pooler.Poolers.probe(() -> DriverManager.getConnection(jdbcUrl, props));
    } catch (Exception e) {
      throw cannotConnect(e);
    }
    if (!probe.namedStatementsCollide()) {
      return this;
    }
    if (dev.pgtask.internal.pooler.UnnamedStatements.inUrl(jdbcUrl) != null) {
      throw new CliException(ExitCodes.USAGE, describe() + " goes through a transaction pooler (two connections"
          + " were served by one server session, e.g. PgBouncer with pool_mode = transaction), where pgjdbc's named"
          + " statements collide, and the URL sets prepareThreshold=" + probe.prepareThreshold()
          + ": set prepareThreshold=0 in it, or use session pooling");
    }
    org.slf4j.LoggerFactory.getLogger(ConnectionSettings.class).info("{} goes through a transaction pooler (e.g."
        + " PgBouncer with pool_mode = transaction): connecting with prepareThreshold=0, as pgjdbc's named"
        + " server-side statements would collide there", describe());
    return new ConnectionSettings(dev.pgtask.internal.pooler.UnnamedStatements.url(jdbcUrl), user, password, source);
  }

  /**
   * These settings for the connections of one operator command ({@code status}, {@code cancel}
   * ...): with {@code prepareThreshold=0} whatever the URL says, without a pooler probe. A command
   * runs each statement once or twice, so a named statement buys it nothing, but pgjdbc names its
   * {@code COMMIT} and {@code ROLLBACK} at their first run, and behind a transaction pooler the name
   * would stay on the server session after the command exits.
   */
  public ConnectionSettings forOneCommand() {
    return new ConnectionSettings(dev.pgtask.internal.pooler.UnnamedStatements.url(jdbcUrl), user, password, source);
  }

  /**
   * The error for a failed connection attempt. The driver's message is passed on without the
   * password (pgjdbc quotes a URL it cannot parse in full, password included).
   */
  public CliException cannotConnect(Throwable cause) {
    String raw = cause.getMessage();
    String msg = raw == null ? cause.getClass().getSimpleName() : scrub(raw);
    Throwable kept = cause;
    if (raw != null && !raw.equals(msg)) {
      // the cause's own message quotes the password: keep its stack trace (--verbose), not its text
      SQLException safe = new SQLException(msg, cause instanceof SQLException s ? s.getSQLState() : null);
      safe.setStackTrace(cause.getStackTrace());
      kept = safe;
    }
    return new CliException(ExitCodes.CANNOT_CONNECT,
        "cannot connect to " + describe() + " (from " + source + "): " + Main.oneLine(msg).replaceAll("[.\\s]+$", "")
            + "; " + HINT, kept);
  }

  /**
   * A HikariCP pool over these settings, started lazily by its first {@code getConnection()} (call
   * {@link #checkReachable} first for a one-line error). Every connection it opens carries
   * {@code applicationName} from its first packet (pgjdbc's {@code ApplicationName} with
   * {@link #ASSUME_MIN_SERVER_VERSION}; a worker's LISTEN connection, derived from the pool's
   * settings, carries it too).
   */
  public HikariDataSource openPool(String poolName, int maxSize, String applicationName) {
    HikariDataSource pool = new HikariDataSource();
    pool.setPoolName(poolName);
    pool.setJdbcUrl(jdbcUrl);
    if (user != null) {
      pool.setUsername(user);
    }
    if (password != null) {
      pool.setPassword(password);
    }
    pool.setMaximumPoolSize(Math.max(1, maxSize));
    pool.setMinimumIdle(Math.min(2, Math.max(1, maxSize)));
    pool.addDataSourceProperty("ApplicationName", applicationName);
    pool.addDataSourceProperty("assumeMinServerVersion", ASSUME_MIN_SERVER_VERSION);
    return pool;
  }

  /** The URL with any password replaced by {@code ***}. */
  static String redact(String url) {
    return Secrets.redact(url);
  }

  /**
   * {@code text} (a message written by the driver or the pool) without this connection's password:
   * URL passwords masked, and every literal occurrence of the password given separately or in
   * the URL.
   */
  public String scrub(String text) {
    String s = Secrets.redact(text, password);
    String inUrl = ConnectionUrls.query(jdbcUrl).get("password");
    return inUrl == null ? s : Secrets.redact(s, inUrl);
  }

  @Override
  public String toString() {
    return "ConnectionSettings[" + redact(jdbcUrl) + ", user=" + user + ", password=" + (password == null ? "none" : "***")
        + ", from " + source + "]";
  }
}
