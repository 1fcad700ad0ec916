package dev.pgtask.testsupport;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Assumptions;

/**
 * A real PgBouncer (the Debian package's {@code pgbouncer} binary) started by a test on a free
 * local port in front of one {@link TestDatabase}, with a generated configuration: a pool mode, a
 * server pool size, trust authentication for the test's user, and the admin console for the same
 * user. PgBouncer refuses to run as root, so as root it runs as {@code nobody}. {@link #close()}
 * stops it.
 *
 * <p>Where the binary is missing, {@link #start} skips the test (a JUnit assumption) with the
 * reason; with {@code PGTASK_REQUIRE_PGBOUNCER=1} (set by {@code .ci/run}) it fails instead, so
 * CI never passes by skipping.
 */
public final class PgBouncer implements AutoCloseable {

  /** The environment variable that turns a missing pgbouncer from a skip into a failure. */
  public static final String REQUIRE_ENV = "PGTASK_REQUIRE_PGBOUNCER";

  /** PgBouncer's pool modes. */
  public enum Mode { SESSION, TRANSACTION }

  private final Process process;
  private final Path dir;
  private final int port;
  private final String database;
  private final String user;

  private PgBouncer(Process process, Path dir, int port, String database, String user) {
    this.process = process;
    this.dir = dir;
    this.port = port;
    this.database = database;
    this.user = user;
  }

  /** The pgbouncer binary, or {@code null} when it is not installed. */
  public static Path binary() {
    for (String p : List.of("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer")) {
      Path path = Path.of(p);
      if (Files.isExecutable(path)) {
        return path;
      }
    }
    String pathEnv = System.getenv("PATH");
    if (pathEnv != null) {
      for (String d : pathEnv.split(":")) {
        Path path = Path.of(d, "pgbouncer");
        if (Files.isExecutable(path)) {
          return path;
        }
      }
    }
    return null;
  }

  /** Skips the calling test when pgbouncer is not installed (fails instead in CI, see {@link #REQUIRE_ENV}). */
  public static Path requireBinary() {
    Path bin = binary();
    if (bin == null) {
      String why = "pgbouncer is not installed (Debian: apt-get install -y pgbouncer)";
      if ("1".equals(System.getenv(REQUIRE_ENV))) {
        throw new AssertionError(why + ", and " + REQUIRE_ENV + "=1 says this run must test it");
      }
      Assumptions.abort(why + "; the PgBouncer tests are skipped");
    }
    return bin;
  }

  /** A PgBouncer in front of {@code db} in {@code mode}, with at most {@code poolSize} server connections. */
  public static PgBouncer start(TestDatabase db, Mode mode, int poolSize) {
    return start(db, mode, poolSize, Map.of());
  }

  /** As {@link #start(TestDatabase, Mode, int)}, with more {@code [pgbouncer]} settings. */
  public static PgBouncer start(TestDatabase db, Mode mode, int poolSize, Map<String, String> extra) {
    Path bin = requireBinary();
    URI target = URI.create(db.url().substring("jdbc:".length()));
    String host = target.getHost() == null ? "localhost" : target.getHost();
    int targetPort = target.getPort() < 0 ? 5432 : target.getPort();
    String user = db.user();
    try {
      Path dir = Files.createTempDirectory("pgtask-pgbouncer-");
      boolean root = "root".equals(System.getProperty("user.name"));
      if (root) {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
      }
      Files.writeString(dir.resolve("users.txt"), "\"" + user + "\" \"\"\n");
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put("listen_addr", "127.0.0.1");
      settings.put("unix_socket_dir", "");
      settings.put("auth_type", "trust");
      settings.put("auth_file", dir.resolve("users.txt").toString());
      settings.put("admin_users", user);
      settings.put("pool_mode", mode.name().toLowerCase(java.util.Locale.ROOT));
      settings.put("default_pool_size", Integer.toString(poolSize));
      settings.put("min_pool_size", "0");
      settings.put("reserve_pool_size", "0");
      settings.put("max_client_conn", "1000");
      settings.put("ignore_startup_parameters", "extra_float_digits,options");
      settings.put("logfile", dir.resolve("pgbouncer.log").toString());
      settings.put("pidfile", dir.resolve("pgbouncer.pid").toString());
      settings.put("server_check_delay", "0");
      settings.putAll(extra);
      for (int attempt = 0; ; attempt++) {
        int port = freePort();
        StringBuilder ini = new StringBuilder("[databases]\n")
            .append(db.name()).append(" = host=").append(host).append(" port=").append(targetPort)
            .append(" dbname=").append(db.name()).append('\n')
            .append("\n[pgbouncer]\nlisten_port = ").append(port).append('\n');
        settings.forEach((k, v) -> ini.append(k).append(" = ").append(v).append('\n'));
        Path ini_ = dir.resolve("pgbouncer.ini");
        Files.writeString(ini_, ini);
        List<String> cmd = new ArrayList<>();
        if (root) {
          cmd.addAll(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"));
        }
        cmd.add(bin.toString());
        cmd.add(ini_.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(dir.resolve("pgbouncer.out").toFile()).start();
        PgBouncer b = new PgBouncer(p, dir, port, db.name(), user);
        if (b.awaitListening(Duration.ofSeconds(10))) {
          return b;
        }
        p.destroyForcibly();
        p.waitFor(5, TimeUnit.SECONDS);
        if (attempt == 2) {
          throw new IllegalStateException("pgbouncer did not start: " + b.log());
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot start pgbouncer: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting pgbouncer", e);
    }
  }

  /** Waits until pgbouncer accepts a connection on its port; false when it exited or the timeout passed. */
  private boolean awaitListening(Duration timeout) {
    try {
      Awaitility.await("pgbouncer listening on " + port).atMost(timeout).pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(20)).until(() -> !process.isAlive() || accepts());
    } catch (ConditionTimeoutException e) {
      return false;
    }
    return process.isAlive();
  }

  private boolean accepts() {
    try (Socket s = new Socket("127.0.0.1", port)) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** The JDBC URL of the database through this PgBouncer (no parameters). */
  public String url() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  /** The URL with the test's user as a parameter (plus {@code params}, e.g. {@code prepareThreshold=0}). */
  public String fullUrl(String... params) {
    StringBuilder u = new StringBuilder(url()).append("?user=").append(user);
    for (String p : params) {
      u.append('&').append(p);
    }
    return u.toString();
  }

  /** The port PgBouncer listens on. */
  public int port() {
    return port;
  }

  /** A new client connection through PgBouncer (the caller closes it). */
  public Connection connect(String... params) throws SQLException {
    return DriverManager.getConnection(fullUrl(params));
  }

  /**
   * Rows of an admin console command ({@code SHOW SERVERS}, {@code SHOW POOLS}...), each a map of
   * column to text.
   */
  public List<Map<String, String>> admin(String command) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    props.setProperty("preferQueryMode", "simple");
    props.setProperty("assumeMinServerVersion", "9.0");
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/pgbouncer", props);
        Statement s = c.createStatement(); ResultSet rs = s.executeQuery(command)) {
      List<Map<String, String>> rows = new ArrayList<>();
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        Map<String, String> row = new LinkedHashMap<>();
        for (int i = 1; i <= n; i++) {
          row.put(rs.getMetaData().getColumnLabel(i), rs.getString(i));
        }
        rows.add(row);
      }
      return rows;
    }
  }

  /**
   * What is prepared on each server connection of the pool (pid to {@code name: statement}
   * lines; an empty list: nothing). Every server connection is visited: {@code poolSize} clients
   * (the pool size this PgBouncer was started with, its cap on server connections) each hold one in
   * a transaction at once, so no two share one and none is left out (PgBouncer opens one more when
   * fewer exist). The clients use the simple query protocol, which prepares nothing itself.
   */
  public Map<Integer, List<String>> preparedStatementsOnEveryServer(int poolSize) throws SQLException {
    Map<Integer, List<String>> byServer = new LinkedHashMap<>();
    List<Connection> clients = new ArrayList<>();
    try {
      for (int i = 0; i < poolSize; i++) {
        Connection c = connect("preferQueryMode=simple", "assumeMinServerVersion=9.0");
        clients.add(c);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT pg_backend_pid(), coalesce((SELECT array_agg(name || ': ' || statement"
                + " ORDER BY name) FROM pg_prepared_statements), '{}')")) {
          rs.next();
          List<String> prepared = List.of((String[]) rs.getArray(2).getArray());
          if (byServer.put(rs.getInt(1), prepared) != null) {
            throw new IllegalStateException("two clients, each in a transaction, were served by one server (pid "
                + rs.getInt(1) + "): not transaction pooling");
          }
        }
      }
      return byServer;
    } finally {
      for (Connection c : clients) {
        try {
          c.rollback();
          c.close();
        } catch (SQLException e) {
          // closed with the client
        }
      }
    }
  }

  /**
   * Stops the PgBouncer process (SIGSTOP): its sockets stay open and nothing on them is answered,
   * as when the network to the database hangs. {@link #thaw()} resumes it.
   */
  public void freeze() {
    signal("STOP");
  }

  /** Resumes a frozen PgBouncer (SIGCONT). */
  public void thaw() {
    signal("CONT");
  }

  private void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
      if (kill.waitFor() != 0) {
        throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** PgBouncer's log, for failure messages. */
  public String log() {
    StringBuilder s = new StringBuilder();
    for (String f : List.of("pgbouncer.out", "pgbouncer.log")) {
      try {
        s.append(Files.readString(dir.resolve(f)));
      } catch (IOException e) {
        // not written
      }
    }
    return s.toString();
  }

  @Override
  public void close() {
    thaw();
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
