package dev.pgtask.testsupport;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.migrate.Migrations;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Properties;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A throwaway PostgreSQL database for one test class, on a real server.
 *
 * <p>The server is found in this order:
 * <ol>
 *   <li>{@code PGTASK_TEST_URL} (environment) or {@code -Dpgtask.test.url}: a JDBC URL of a server
 *       where the suite may create and drop databases;</li>
 *   <li>a server answering on the libpq defaults ({@code PGHOST}, {@code PGPORT}, {@code PGUSER},
 *       {@code PGPASSWORD}; localhost:5432 and the OS user otherwise);</li>
 *   <li>Testcontainers ({@code postgres:15-alpine}) when a Docker engine is available;</li>
 *   <li>otherwise the suite fails at once and says how to provide a server.</li>
 * </ol>
 * Each {@link #create(String)} makes a fresh database named after the test class, migrated with
 * the real migrations; {@link #close()} drops it.
 */
public final class TestDatabase implements AutoCloseable {

  private static volatile Server server;

  private final String name;
  private final String url;
  private final HikariDataSource dataSource;

  private TestDatabase(String name, String url, HikariDataSource dataSource) {
    this.name = name;
    this.url = url;
    this.dataSource = dataSource;
  }

  /** Creates and migrates a fresh database whose name starts with {@code label}. */
  public static TestDatabase create(String label) {
    return create(label, true);
  }

  /** Creates a fresh database; migrates it when {@code migrate} is true. */
  public static TestDatabase create(String label, boolean migrate) {
    Server s = server();
    String name = ("pgtask_t_" + label.replaceAll("[^A-Za-z0-9]", "_") + "_"
            + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
    if (name.length() > 63) {
      name = name.substring(0, 54) + name.substring(name.length() - 9);
    }
    s.execAdmin("CREATE DATABASE " + name);
    String url = s.urlFor(name);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(s.user);
    config.setPassword(s.password);
    config.setMaximumPoolSize(20);
    config.setMinimumIdle(0);
    config.setPoolName("test-" + name);
    HikariDataSource ds = new HikariDataSource(config);
    TestDatabase db = new TestDatabase(name, url, ds);
    if (migrate) {
      Migrations.apply(ds);
    }
    return db;
  }

  /** A new HikariCP pool of at most {@code maxSize} connections on this database; the caller closes it. */
  public HikariDataSource pool(int maxSize) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(user());
    config.setPassword(password());
    config.setMaximumPoolSize(maxSize);
    return new HikariDataSource(config);
  }

  /** A pooled data source for the database (at most 20 connections). */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The database's JDBC URL (without credentials; see {@link #user()}, {@link #password()}). */
  public String url() {
    return url;
  }

  /** The database's JDBC URL with user and password as parameters: enough on its own. */
  public String fullUrl() {
    Server s = server();
    String sep = url.contains("?") ? "&" : "?";
    return url + sep + "user=" + s.user + (s.password == null ? "" : "&password=" + s.password);
  }

  public String user() {
    return server().user;
  }

  public String password() {
    return server().password;
  }

  /** The database's name. */
  public String name() {
    return name;
  }

  /** A new unpooled connection (the caller closes it). */
  public Connection connect() throws SQLException {
    return server().connect(url);
  }

  /** A new unpooled connection as another role (the caller closes it). */
  public Connection connectAs(String role, String password) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", role);
    if (password != null) {
      p.setProperty("password", password);
    }
    return DriverManager.getConnection(url, p);
  }

  /** Runs a statement as the server's admin user, outside this database (e.g. CREATE ROLE). */
  public static void execAdmin(String sql) {
    server().execAdmin(sql);
  }

  @Override
  public void close() {
    dataSource.close();
    Server s = server();
    s.execAdmin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
    s.execAdmin("DROP DATABASE IF EXISTS " + name);
  }

  private static Server server() {
    Server s = server;
    if (s == null) {
      synchronized (TestDatabase.class) {
        s = server;
        if (s == null) {
          s = Server.find();
          server = s;
        }
      }
    }
    return s;
  }

  /** Where the test databases live. */
  private static final class Server {
    final String baseUrl; // jdbc:postgresql://host:port/
    final String query; // "" or "?..."
    final String adminDb;
    final String user;
    final String password;

    Server(String baseUrl, String query, String adminDb, String user, String password) {
      this.baseUrl = baseUrl;
      this.query = query;
      this.adminDb = adminDb;
      this.user = user;
      this.password = password;
    }

    String urlFor(String db) {
      return baseUrl + db + query;
    }

    Connection connect(String url) throws SQLException {
      Properties p = new Properties();
      p.setProperty("user", user);
      if (password != null) {
        p.setProperty("password", password);
      }
      return DriverManager.getConnection(url, p);
    }

    void execAdmin(String sql) {
      try (Connection c = connect(urlFor(adminDb)); var st = c.createStatement()) {
        st.execute(sql);
      } catch (SQLException e) {
        throw new IllegalStateException("test database admin statement failed: " + sql + ": " + e.getMessage(), e);
      }
    }

    static Server find() {
      String explicit = System.getProperty("pgtask.test.url", System.getenv("PGTASK_TEST_URL"));
      if (explicit != null && !explicit.isBlank()) {
        return fromUrl(explicit.trim());
      }
      String host = env("PGHOST", "localhost");
      String port = env("PGPORT", "5432");
      String user = env("PGUSER", System.getProperty("user.name"));
      String password = System.getenv("PGPASSWORD");
      String db = env("PGDATABASE", "postgres");
      Server local = new Server("jdbc:postgresql://" + host + ":" + port + "/", "", db, user, password);
      String localError;
      try (Connection c = local.connect(local.urlFor(db))) {
        return local;
      } catch (SQLException e) {
        localError = e.getMessage();
      }
      Server docker = TestcontainersServer.start();
      if (docker != null) {
        return docker;
      }
      throw new IllegalStateException(
          "No PostgreSQL server for the tests. Tried: PGTASK_TEST_URL (unset); "
              + host + ":" + port + " as " + user + " (" + localError + "); Testcontainers (no Docker). "
              + "Start a local server, or set PGTASK_TEST_URL=jdbc:postgresql://HOST:PORT/postgres?user=U&password=P "
              + "(a role that may create databases), or start Docker.");
    }

    static Server fromUrl(String url) {
      // jdbc:postgresql://host:port/db?user=...&password=...
      int q = url.indexOf('?');
      String query = q < 0 ? "" : url.substring(q);
      String noQuery = q < 0 ? url : url.substring(0, q);
      int slash = noQuery.indexOf('/', "jdbc:postgresql://".length());
      String base = slash < 0 ? noQuery + "/" : noQuery.substring(0, slash + 1);
      String db = slash < 0 || slash == noQuery.length() - 1 ? "postgres" : noQuery.substring(slash + 1);
      String user = param(query, "user", env("PGUSER", System.getProperty("user.name")));
      String password = param(query, "password", System.getenv("PGPASSWORD"));
      return new Server(base, query, db, user, password);
    }

    private static String param(String query, String key, String fallback) {
      if (query.isEmpty()) {
        return fallback;
      }
      for (String kv : query.substring(1).split("&")) {
        int eq = kv.indexOf('=');
        if (eq > 0 && kv.substring(0, eq).equals(key)) {
          return java.net.URLDecoder.decode(kv.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8);
        }
      }
      return fallback;
    }

    private static String env(String name, String fallback) {
      String v = System.getenv(name);
      return v == null || v.isBlank() ? fallback : v;
    }
  }

  /** Testcontainers, used only when no server was configured or found and Docker is there. */
  private static final class TestcontainersServer {
    static Server start() {
      try {
        if (!org.testcontainers.DockerClientFactory.instance().isDockerAvailable()) {
          return null;
        }
      } catch (Throwable t) {
        return null;
      }
      var container = new org.testcontainers.postgresql.PostgreSQLContainer("postgres:15-alpine");
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
      String url = container.getJdbcUrl();
      return Server.fromUrl(url + (url.contains("?") ? "&" : "?") + "user=" + container.getUsername()
          + "&password=" + container.getPassword());
    }
  }
}
