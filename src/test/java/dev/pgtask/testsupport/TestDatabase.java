package dev.pgtask.testsupport;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.internal.embedded.EmbeddedPostgres;
import dev.pgtask.migrate.Migrations;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A throwaway PostgreSQL database for one test class, on a real server.
 *
 * <p>The server is found in this order:
 * <ol>
 *   <li>{@code -Dpgtask.test.embedded=13} (or another major version of {@code target/pg-binaries},
 *       or the path of a zonky binaries jar): an embedded PostgreSQL of that version, started by the
 *       suite (the version matrix of {@code mvn verify} sets it);</li>
 *   <li>{@code PGTASK_TEST_URL} (environment) or {@code -Dpgtask.test.url}: a JDBC URL of a server
 *       where the suite may create and drop databases; a {@code user}/{@code password} in it is the
 *       admin role, and connections as another role ({@link #connectAs}) never inherit it;</li>
 *   <li>a server answering on the libpq defaults ({@code PGHOST}, {@code PGPORT}, {@code PGUSER},
 *       {@code PGPASSWORD}; localhost:5432 and the OS user otherwise);</li>
 *   <li>Testcontainers ({@code postgres:15-alpine}) when a Docker engine is available;</li>
 *   <li>otherwise an embedded PostgreSQL (the default binaries on the class path) in a scratch
 *       directory on a free port, stopped when the test JVM exits; where it cannot run, the suite
 *       fails at once and says why and how to provide a server.</li>
 * </ol>
 * The chosen server is printed in one line.
 * Each {@link #create(String)} makes a fresh database named after the test class, a copy of a
 * template database that this JVM migrated once with the real migrations ({@link TemplateDatabase});
 * {@link #close()} drops it. {@code create(label, false)} makes an empty database (tests of the
 * migrations themselves), and {@link #createOn} migrates its one database on a test's own server
 * directly; {@code -Dpgtask.test.template=false} migrates every database directly, as before the
 * template.
 */
public final class TestDatabase implements AutoCloseable {

  private static volatile Server server;

  private final Server srv;
  private final String name;
  private final String url;
  private final HikariDataSource dataSource;

  private TestDatabase(Server srv, String name, String url, HikariDataSource dataSource) {
    this.srv = srv;
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
    return create(server(), label, migrate, false);
  }

  /**
   * Creates and migrates a fresh database on {@code pg}, a server the test started itself (e.g. one it
   * restarts), instead of the suite's server.
   */
  public static TestDatabase createOn(EmbeddedPostgres pg, String label) {
    return create(Server.of(pg), label, true, true);
  }

  /**
   * The PostgreSQL binaries of the suite's version: those of {@code -Dpgtask.test.embedded} when
   * given, else the default ones on the class path.
   */
  public static EmbeddedPostgres.Binaries embeddedBinaries() {
    String choice = System.getProperty("pgtask.test.embedded");
    return choice == null || choice.isBlank() ? EmbeddedPostgres.Binaries.classpath() : binaries(choice.trim());
  }

  /**
   * {@code ownServer}: a server the test started itself, which gets one database: migrated
   * directly; on the suite's servers a migrated database is a copy of the JVM's template.
   */
  private static TestDatabase create(Server s, String label, boolean migrate, boolean ownServer) {
    String name = ("pgtask_t_" + label.replaceAll("[^A-Za-z0-9]", "_") + "_"
            + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT);
    if (name.length() > 63) {
      name = name.substring(0, 54) + name.substring(name.length() - 9);
    }
    boolean fromTemplate = migrate && !ownServer && !"false".equals(System.getProperty("pgtask.test.template"));
    if (fromTemplate) {
      TemplateDatabase.of(s).copyTo(name);
    } else {
      s.execAdmin("CREATE DATABASE " + name);
    }
    String url = s.urlFor(name);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(s.user);
    config.setPassword(s.password);
    config.setMaximumPoolSize(20);
    config.setMinimumIdle(0);
    config.setPoolName("test-" + name);
    HikariDataSource ds = new HikariDataSource(config);
    TestDatabase db = new TestDatabase(s, name, url, ds);
    if (migrate && !fromTemplate) {
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
    Server s = srv;
    String sep = url.contains("?") ? "&" : "?";
    return url + sep + "user=" + s.user + (s.password == null ? "" : "&password=" + s.password);
  }

  public String user() {
    return srv.user;
  }

  public String password() {
    return srv.password;
  }

  /** The database's name. */
  public String name() {
    return name;
  }

  /** A new unpooled connection (the caller closes it). */
  public Connection connect() throws SQLException {
    return srv.connect(url);
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
    Server s = srv;
    s.execAdmin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
    s.execAdmin("DROP DATABASE IF EXISTS " + name);
  }

  /** A major version ({@code 13}) found in {@code target/pg-binaries}, or the path of a binaries jar. */
  private static EmbeddedPostgres.Binaries binaries(String choice) {
    if (!choice.matches("\\d+")) {
      return EmbeddedPostgres.Binaries.jar(Path.of(choice));
    }
    Path dir = Path.of(System.getProperty("pgtask.test.binaries", "target/pg-binaries"));
    try (var files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().matches(".*-" + choice + "\\.\\d+\\.\\d+\\.jar"))
          .findFirst().map(EmbeddedPostgres.Binaries::jar)
          .orElseThrow(() -> new IllegalStateException("-Dpgtask.test.embedded=" + choice + ": no PostgreSQL "
              + choice + " binaries jar in " + dir + " (mvn generate-test-resources copies them there)"));
    } catch (IOException e) {
      throw new UncheckedIOException("-Dpgtask.test.embedded=" + choice + ": cannot list " + dir, e);
    }
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
  static final class Server {
    final String baseUrl; // jdbc:postgresql://host:port/
    final String query; // "" or "?..."
    final String adminDb;
    final String user;
    final String password;
    /** The embedded server behind this, when the suite started one. */
    EmbeddedPostgres embedded;
    /** The migrated template of this server for this JVM, once made (see {@link TemplateDatabase}). */
    TemplateDatabase template;

    Server(String baseUrl, String query, String adminDb, String user, String password) {
      this.baseUrl = baseUrl;
      this.query = query;
      this.adminDb = adminDb;
      this.user = user;
      this.password = password;
    }

    static Server of(EmbeddedPostgres pg) {
      return new Server("jdbc:postgresql://127.0.0.1:" + pg.port() + "/", "", "postgres", EmbeddedPostgres.SUPERUSER,
          null);
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
      return find(System::getProperty, System.getenv(), TestcontainersServer::start);
    }

    /** The lookup order of the class comment, over explicit system properties, environment and Docker. */
    static Server find(java.util.function.UnaryOperator<String> props, java.util.Map<String, String> envs,
        java.util.function.Supplier<Server> dockerOrNull) {
      java.util.function.BinaryOperator<String> env = (name, fallback) -> {
        String v = envs.get(name);
        return v == null || v.isBlank() ? fallback : v;
      };
      String embedded = props.apply("pgtask.test.embedded");
      if (embedded != null && !embedded.isBlank()) {
        return embedded(binaries(embedded.trim()), "-Dpgtask.test.embedded=" + embedded.trim());
      }
      String explicit = props.apply("pgtask.test.url") != null ? props.apply("pgtask.test.url") : envs.get("PGTASK_TEST_URL");
      if (explicit != null && !explicit.isBlank()) {
        Server s = fromUrl(explicit.trim(), envs);
        announce(s, "PGTASK_TEST_URL/pgtask.test.url");
        return s;
      }
      String host = env.apply("PGHOST", "localhost");
      String port = env.apply("PGPORT", "5432");
      String user = env.apply("PGUSER", props.apply("user.name"));
      String password = envs.get("PGPASSWORD");
      String db = env.apply("PGDATABASE", "postgres");
      Server local = new Server("jdbc:postgresql://" + host + ":" + port + "/", "", db, user, password);
      String localError;
      try (Connection c = local.connect(local.urlFor(db))) {
        announce(local, "libpq defaults");
        return local;
      } catch (SQLException e) {
        localError = e.getMessage();
      }
      Server docker = dockerOrNull.get();
      if (docker != null) {
        announce(docker, "Testcontainers");
        return docker;
      }
      try {
        return embedded(EmbeddedPostgres.Binaries.classpath(), "no server configured, none answering on "
            + host + ":" + port + ", no Docker");
      } catch (IllegalStateException e) {
        throw new IllegalStateException(
            "No PostgreSQL server for the tests. Tried: PGTASK_TEST_URL (unset); "
                + host + ":" + port + " as " + user + " (" + localError + "); Testcontainers (no Docker); "
                + "an embedded PostgreSQL (" + e.getMessage() + "). "
                + "Start a local server, or set PGTASK_TEST_URL=jdbc:postgresql://HOST:PORT/postgres?user=U&password=P "
                + "(a role that may create databases), or start Docker.", e);
      }
    }

    /** Starts an embedded server for the whole test JVM; stopped by its shutdown hook at exit. */
    static Server embedded(EmbeddedPostgres.Binaries binaries, String why) {
      EmbeddedPostgres pg;
      try {
        pg = EmbeddedPostgres.start(binaries);
      } catch (IOException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
      System.out.println("pgtask tests: started " + pg.describe() + " (" + why + "); stopped when the tests end");
      Server s = of(pg);
      s.embedded = pg;
      return s;
    }

    private static void announce(Server s, String how) {
      String version;
      try (Connection c = s.connect(s.urlFor(s.adminDb)); var st = c.createStatement();
          var rs = st.executeQuery("SHOW server_version")) {
        rs.next();
        version = rs.getString(1);
      } catch (SQLException e) {
        version = "?";
      }
      System.out.println("pgtask tests: PostgreSQL " + version + " at " + s.baseUrl + " (" + how + ")");
    }

    static Server fromUrl(String url) {
      return fromUrl(url, System.getenv());
    }

    static Server fromUrl(String url, java.util.Map<String, String> envs) {
      // jdbc:postgresql://host:port/db?user=...&password=...
      int q = url.indexOf('?');
      String query = q < 0 ? "" : url.substring(q);
      String noQuery = q < 0 ? url : url.substring(0, q);
      int slash = noQuery.indexOf('/', "jdbc:postgresql://".length());
      String base = slash < 0 ? noQuery + "/" : noQuery.substring(0, slash + 1);
      String db = slash < 0 || slash == noQuery.length() - 1 ? "postgres" : noQuery.substring(slash + 1);
      String pgUser = envs.get("PGUSER");
      String user = param(query, "user", pgUser == null || pgUser.isBlank() ? System.getProperty("user.name") : pgUser);
      String password = param(query, "password", envs.get("PGPASSWORD"));
      // the credentials are passed as connection properties, never in the URL: a URL's user would
      // win over the role a test connects as (connectAs)
      return new Server(base, withoutCredentials(query), db, user, password);
    }

    static String withoutCredentials(String query) {
      if (query.isEmpty()) {
        return query;
      }
      List<String> kept = new ArrayList<>();
      for (String kv : query.substring(1).split("&")) {
        String key = kv.contains("=") ? kv.substring(0, kv.indexOf('=')) : kv;
        if (!kv.isEmpty() && !key.equals("user") && !key.equals("password")) {
          kept.add(kv);
        }
      }
      return kept.isEmpty() ? "" : "?" + String.join("&", kept);
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
