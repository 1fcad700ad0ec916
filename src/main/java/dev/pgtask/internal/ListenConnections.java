package dev.pgtask.internal;

import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.ds.common.BaseDataSource;

/**
 * Where a worker's LISTEN connection comes from when none was given. A LISTEN connection must
 * never come out of a pool: closed (on shutdown or reconnect), it would go back into the pool still
 * listening, and whoever borrows it next would receive pgtask's notifications. So the connection is
 * taken from a data source only when it is proven unpooled, and opened directly with a pool's own
 * settings when the pool exposes them:
 * <ul>
 *   <li>a {@code HikariDataSource} with a JDBC URL: a {@code DriverManager} connection with its URL,
 *       data source properties, user and password; with a wrapped data source instead, the rules
 *       below for that one (with the pool's user and password, when set);</li>
 *   <li>pgjdbc's {@code PGSimpleDataSource} (exactly that class), and Spring's
 *       {@code DriverManagerDataSource} and {@code SimpleDriverDataSource} (exactly those): they
 *       open a new connection per call, so theirs are used as they are;</li>
 *   <li>any other pgjdbc data source ({@code PGPoolingDataSource}, deprecated but real, or a
 *       subclass of one): a new {@code PGSimpleDataSource} with the same settings;</li>
 *   <li>anything else (other pools, a {@code ConnectionPoolDataSource}-backed pool, wrappers):
 *       nothing; the worker's builder then asks for {@code listenConnection(...)}.</li>
 * </ul>
 */
public final class ListenConnections {

  /** Data sources known to open a new physical connection per {@code getConnection()}, by exact class name. */
  private static final Set<String> UNPOOLED = Set.of(
      PGSimpleDataSource.class.getName(),
      "org.springframework.jdbc.datasource.DriverManagerDataSource",
      "org.springframework.jdbc.datasource.SimpleDriverDataSource");

  private ListenConnections() {}

  /** How to open a LISTEN connection that belongs to no pool, or {@code null} when that cannot be proven. */
  public static Callable<Connection> derive(DataSource ds) {
    if (ds instanceof HikariDataSource h) {
      if (h.getJdbcUrl() != null) {
        Properties props = new Properties();
        props.putAll(h.getDataSourceProperties());
        if (h.getUsername() != null) {
          props.setProperty("user", h.getUsername());
        }
        if (h.getPassword() != null) {
          props.setProperty("password", h.getPassword());
        }
        String url = h.getJdbcUrl();
        String password = h.getPassword();
        return () -> {
          try {
            return DriverManager.getConnection(url, props);
          } catch (SQLException e) {
            throw withoutPassword(e, password);
          }
        };
      }
      if (h.getDataSource() != null) {
        return derive(h.getDataSource(), h.getUsername(), h.getPassword());
      }
      return null;
    }
    return derive(ds, null, null);
  }

  private static Callable<Connection> derive(DataSource ds, String user, String password) {
    if (ds instanceof BaseDataSource pg && ds.getClass() != PGSimpleDataSource.class) {
      // PGPoolingDataSource hands out pooled connections: open one with its settings instead
      PGSimpleDataSource direct = new PGSimpleDataSource();
      try {
        direct.initializeFrom(pg);
      } catch (IOException | ClassNotFoundException e) {
        return null;
      }
      ds = direct;
    }
    if (!UNPOOLED.contains(ds.getClass().getName())) {
      return null;
    }
    DataSource unpooled = ds;
    if (user != null) {
      return () -> unpooled.getConnection(user, password);
    }
    return unpooled::getConnection;
  }

  /**
   * Opens a direct connection with {@code url} (user and password as given, each may be null: then
   * the URL's own). For the split where the pool goes through a pooler and LISTEN goes to
   * PostgreSQL itself.
   */
  public static Callable<Connection> forUrl(String url, String user, String password) {
    Properties props = new Properties();
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password);
    }
    return () -> {
      try {
        return DriverManager.getConnection(url, props);
      } catch (SQLException e) {
        throw withoutPassword(e, password);
      }
    };
  }

  /** The driver's error without the password it may quote (pgjdbc quotes a URL it cannot parse). */
  private static SQLException withoutPassword(SQLException e, String password) {
    String message = e.getMessage();
    String safe = Secrets.redact(message, password);
    if (message == null || message.equals(safe)) {
      return e;
    }
    SQLException copy = new SQLException(safe, e.getSQLState(), e.getErrorCode());
    copy.setStackTrace(e.getStackTrace());
    return copy;
  }
}
