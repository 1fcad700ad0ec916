package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.internal.Secrets;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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

  private static final String JDBC_PREFIX = "jdbc:postgresql:";
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
    if (urlOption != null && !urlOption.isBlank()) {
      return fromUrl(urlOption.trim(), env, osUser, "--url");
    }
    String fromEnv = env.get("PGTASK_URL");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return fromUrl(fromEnv.trim(), env, osUser, "PGTASK_URL");
    }
    return fromParts(null, null, null, null, null, new LinkedHashMap<>(), env, osUser, "PG* variables");
  }

  private static ConnectionSettings fromUrl(String url, Map<String, String> env, String osUser, String source) {
    if (url.startsWith(JDBC_PREFIX)) {
      Map<String, String> params = query(url);
      String urlUser = params.get("user");
      String user = urlUser != null ? urlUser : libpqUser(env, osUser);
      String password = params.containsKey("password") ? null : blankToNull(env.get("PGPASSWORD"));
      return new ConnectionSettings(url, user, password, source);
    }
    if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
      return fromUri(url, env, osUser, source);
    }
    throw new CliException(ExitCodes.USAGE, source + " '" + redact(url)
        + "' is not a PostgreSQL URL: use jdbc:postgresql://HOST:PORT/DB or postgresql://USER@HOST:PORT/DB");
  }

  /** Converts a libpq URI: {@code postgresql://[user[:password]@][host][:port][,...][/db][?k=v&...]}. */
  private static ConnectionSettings fromUri(String uri, Map<String, String> env, String osUser, String source) {
    String rest = uri.substring(uri.indexOf("://") + 3);
    String queryPart = "";
    int q = rest.indexOf('?');
    if (q >= 0) {
      queryPart = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    String path = null;
    int slash = rest.indexOf('/');
    if (slash >= 0) {
      path = rest.substring(slash + 1);
      rest = rest.substring(0, slash);
    }
    String user = null;
    String password = null;
    int at = rest.lastIndexOf('@');
    if (at >= 0) {
      String userInfo = rest.substring(0, at);
      rest = rest.substring(at + 1);
      int colon = userInfo.indexOf(':');
      user = decode(colon >= 0 ? userInfo.substring(0, colon) : userInfo);
      password = colon >= 0 ? decode(userInfo.substring(colon + 1)) : null;
    }
    List<String> hosts = new ArrayList<>();
    List<String> ports = new ArrayList<>();
    if (!rest.isEmpty()) {
      for (String hp : rest.split(",", -1)) {
        String host = hp;
        String port = "";
        if (hp.startsWith("[")) {
          int close = hp.indexOf(']');
          if (close < 0) {
            throw badUri(uri, source, "unclosed '[' in host");
          }
          host = hp.substring(0, close + 1);
          String after = hp.substring(close + 1);
          port = after.startsWith(":") ? after.substring(1) : after;
        } else {
          int colon = hp.lastIndexOf(':');
          if (colon >= 0) {
            host = hp.substring(0, colon);
            port = hp.substring(colon + 1);
          }
        }
        hosts.add(decode(host));
        ports.add(port);
      }
    }
    String db = path == null || path.isEmpty() ? null : decode(path);
    Map<String, String> params = new LinkedHashMap<>();
    String hostParam = null;
    String portParam = null;
    if (!queryPart.isEmpty()) {
      for (String kv : queryPart.split("&")) {
        if (kv.isEmpty()) {
          continue;
        }
        int eq = kv.indexOf('=');
        String k = decode(eq >= 0 ? kv.substring(0, eq) : kv);
        String v = eq >= 0 ? decode(kv.substring(eq + 1)) : "";
        switch (k) {
          case "user" -> user = v;
          case "password" -> password = v;
          case "dbname" -> db = v;
          case "host" -> hostParam = v;
          case "port" -> portParam = v;
          case "application_name" -> params.put("ApplicationName", v);
          case "connect_timeout" -> params.put("connectTimeout", v);
          case "target_session_attrs" -> params.put("targetServerType", targetServerType(v, uri, source));
          default -> params.put(k, v);
        }
      }
    }
    String hostList = hostParam != null ? hostParam
        : hosts.stream().allMatch(String::isEmpty) ? null : String.join(",", hosts);
    String portList = portParam != null ? portParam
        : ports.stream().allMatch(String::isEmpty) ? null : String.join(",", ports);
    return fromParts(hostList, portList, db, user, password, params, env, osUser, source);
  }

  /** Fills what is missing from the libpq variables and defaults, then builds the JDBC URL. */
  private static ConnectionSettings fromParts(String hostList, String portList, String db, String user,
      String password, Map<String, String> params, Map<String, String> env, String osUser, String source) {
    String hostSpec = hostList != null ? hostList : envOr(env, "PGHOST", "localhost");
    String portSpec = portList != null ? portList : envOr(env, "PGPORT", "5432");
    String u = user != null && !user.isEmpty() ? user : libpqUser(env, osUser);
    String d = db != null && !db.isEmpty() ? db : envOr(env, "PGDATABASE", u);
    String p = password != null ? password : blankToNull(env.get("PGPASSWORD"));
    if (!params.containsKey("sslmode") && blankToNull(env.get("PGSSLMODE")) != null) {
      params.put("sslmode", env.get("PGSSLMODE"));
    }
    if (!params.containsKey("connectTimeout") && blankToNull(env.get("PGCONNECT_TIMEOUT")) != null) {
      params.put("connectTimeout", env.get("PGCONNECT_TIMEOUT"));
    }
    String[] hosts = hostSpec.split(",", -1);
    String[] ports = portSpec.split(",", -1);
    if (ports.length != 1 && ports.length != hosts.length) {
      throw new CliException(ExitCodes.USAGE, source + ": " + hosts.length + " hosts but " + ports.length
          + " ports; give one port, or one per host");
    }
    StringBuilder url = new StringBuilder("jdbc:postgresql://");
    for (int i = 0; i < hosts.length; i++) {
      String host = hosts[i].trim();
      if (host.isEmpty() || host.startsWith("/")) {
        host = "localhost"; // pgjdbc has no Unix-domain sockets: libpq's socket default becomes TCP localhost
      } else if (host.contains(":") && !host.startsWith("[")) {
        host = "[" + host + "]";
      }
      String port = (ports.length == 1 ? ports[0] : ports[i]).trim();
      if (port.isEmpty()) {
        port = "5432";
      }
      if (!port.matches("\\d{1,5}")) {
        throw new CliException(ExitCodes.USAGE, source + ": port '" + port + "' is not a number");
      }
      url.append(i == 0 ? "" : ",").append(host).append(':').append(port);
    }
    url.append('/').append(encode(d));
    String sep = "?";
    for (Map.Entry<String, String> e : params.entrySet()) {
      url.append(sep).append(encode(e.getKey())).append('=').append(encode(e.getValue()));
      sep = "&";
    }
    return new ConnectionSettings(url.toString(), u, p, source);
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

  private static String targetServerType(String v, String uri, String source) {
    return switch (v) {
      case "any" -> "any";
      case "read-write", "primary" -> "primary";
      case "read-only", "standby" -> "secondary";
      case "prefer-standby" -> "preferSecondary";
      default -> throw badUri(uri, source, "target_session_attrs '" + v + "' is not supported");
    };
  }

  private static CliException badUri(String uri, String source, String why) {
    return new CliException(ExitCodes.USAGE, source + " '" + redact(uri) + "': " + why);
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
    String inUrl = query(jdbcUrl).get("password");
    return inUrl == null ? s : Secrets.redact(s, inUrl);
  }

  private static Map<String, String> query(String url) {
    Map<String, String> params = new LinkedHashMap<>();
    int q = url.indexOf('?');
    if (q >= 0) {
      for (String kv : url.substring(q + 1).split("&")) {
        int eq = kv.indexOf('=');
        if (eq > 0) {
          params.put(kv.substring(0, eq), decode(kv.substring(eq + 1)));
        }
      }
    }
    return params;
  }

  private static String libpqUser(Map<String, String> env, String osUser) {
    return envOr(env, "PGUSER", osUser);
  }

  private static String envOr(Map<String, String> env, String name, String fallback) {
    String v = blankToNull(env.get(name));
    return v != null ? v : fallback;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  @Override
  public String toString() {
    return "ConnectionSettings[" + redact(jdbcUrl) + ", user=" + user + ", password=" + (password == null ? "none" : "***")
        + ", from " + source + "]";
  }
}
