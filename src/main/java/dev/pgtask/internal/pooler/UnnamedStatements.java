package dev.pgtask.internal.pooler;

import com.zaxxer.hikari.HikariConfig;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import org.postgresql.PGConnection;

/**
 * The one place that decides how a connection pgtask opens behind a transaction pooler names its
 * statements: it names none ({@code prepareThreshold=0}).
 *
 * <p>Why: pgjdbc prepares a statement under a name ({@code S_1}, {@code S_2}, ...) on the server
 * session that ran it once the statement has run {@code prepareThreshold} times (5 by default), and
 * its own {@code COMMIT} and {@code ROLLBACK} at their first run whenever the threshold is not 0; a
 * negative threshold names every statement at once. A pgjdbc connection never deallocates them
 * before it closes, and behind a transaction pooler (PgBouncer {@code pool_mode = transaction})
 * closing the client does not close the server session: the name stays there, and the next pgjdbc
 * client served by that session that names its own {@code S_1} fails ({@code prepared statement
 * "S_1" already exists}). With {@code prepareThreshold=0} pgjdbc sends every statement, its
 * transaction commands included, unnamed: nothing outlives the statement. That holds whatever the
 * pooler does with named statements itself (PgBouncer 1.21+ {@code max_prepared_statements}).
 *
 * <p>Every path that opens a pooled-in-transaction-mode connection for pgtask goes through here:
 * the CLI ({@code ConnectionSettings}: the worker, demo and migrate pools once the pooler probe
 * found a transaction pooler, and every one-command connection of the operator commands), the
 * Spring worker's own pool ({@link #fit(HikariConfig)}), and the probe itself ({@link #during}).
 */
public final class UnnamedStatements {

  /** pgjdbc's property (and URL parameter) that decides when a statement gets a name. */
  public static final String PROPERTY = "prepareThreshold";

  /** Its value for no named statements. */
  public static final String VALUE = "0";

  private UnnamedStatements() {}

  /** The value of {@value #PROPERTY} a JDBC URL sets, or {@code null} when it sets none. */
  public static String inUrl(String jdbcUrl) {
    int q = jdbcUrl.indexOf('?');
    if (q < 0) {
      return null;
    }
    String found = null;
    for (String kv : jdbcUrl.substring(q + 1).split("&")) {
      int eq = kv.indexOf('=');
      if (eq > 0 && PROPERTY.equals(kv.substring(0, eq))) {
        found = URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8); // the driver takes the last
      }
    }
    return found;
  }

  /** Whether {@code value} (of {@value #PROPERTY}) asks for named statements. */
  public static boolean names(String value) {
    return value != null && !VALUE.equals(value.trim());
  }

  /**
   * {@code jdbcUrl} with {@code prepareThreshold=0} (a parameter it already had is replaced; pgjdbc
   * lets the URL's parameters win over the properties passed beside it).
   */
  public static String url(String jdbcUrl) {
    int q = jdbcUrl.indexOf('?');
    if (q < 0) {
      return jdbcUrl + "?" + PROPERTY + "=" + VALUE;
    }
    StringBuilder kept = new StringBuilder(jdbcUrl.substring(0, q + 1));
    for (String kv : jdbcUrl.substring(q + 1).split("&")) {
      int eq = kv.indexOf('=');
      if (kv.isEmpty() || PROPERTY.equals(eq > 0 ? kv.substring(0, eq) : kv)) {
        continue;
      }
      kept.append(kv).append('&');
    }
    return kept.append(PROPERTY).append('=').append(VALUE).toString();
  }

  /**
   * Fits a HikariCP configuration that pgtask builds (and so owns) to a transaction pooler: when
   * {@link Poolers#probe} finds one behind its JDBC URL, its connections name no statement. A
   * threshold the configuration sets itself (URL or data source property) is kept: a worker on such
   * a pool is then stopped at start with what to change ({@link Poolers#checkWorkerPool}). Returns
   * whether the configuration was changed; a configuration without a JDBC URL (a wrapped data
   * source), or one whose probe cannot run, is left as it is.
   */
  public static boolean fit(HikariConfig config) {
    String url = config.getJdbcUrl();
    if (url == null || inUrl(url) != null || config.getDataSourceProperties().containsKey(PROPERTY)) {
      return false;
    }
    Properties props = new Properties();
    props.putAll(config.getDataSourceProperties());
    if (config.getUsername() != null) {
      props.setProperty("user", config.getUsername());
    }
    if (config.getPassword() != null) {
      props.setProperty("password", config.getPassword());
    }
    Poolers.Probe probe;
    try {
      probe = Poolers.probe(() -> java.sql.DriverManager.getConnection(url, props));
    } catch (Exception e) {
      return false; // unreachable now: the pool reports that itself
    }
    if (!probe.sharesSessions()) {
      return false;
    }
    config.addDataSourceProperty(PROPERTY, VALUE);
    return true;
  }

  /** Something to run on a connection. */
  public interface Body<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code body} with {@code c} naming no statement (its own {@code BEGIN}, {@code COMMIT}
   * and {@code ROLLBACK} included), then gives the connection its threshold back: for a connection
   * pgtask borrows before it knows what is behind it (the pooler probe).
   */
  public static <T> T during(Connection c, Body<T> body) throws SQLException {
    PGConnection pg = c.isWrapperFor(PGConnection.class) ? c.unwrap(PGConnection.class) : null;
    if (pg == null) {
      return body.run();
    }
    int threshold = pg.getPrepareThreshold();
    pg.setPrepareThreshold(0);
    try {
      return body.run();
    } finally {
      if (!c.isClosed()) {
        pg.setPrepareThreshold(threshold);
      }
    }
  }
}
