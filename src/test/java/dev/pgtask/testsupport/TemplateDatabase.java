package dev.pgtask.testsupport;

import dev.pgtask.migrate.Migrations;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.UUID;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The migrated template of one server for one test JVM: the real migrations run once into it, and
 * each test class's database is a copy ({@code CREATE DATABASE x TEMPLATE t}) instead of a fresh
 * migration.
 *
 * <p>Several test JVMs may use one server at once (developers, the version matrix, parallel CI), so
 * each JVM makes its own template, under a random name ({@value #PREFIX}...), and drops it when it
 * exits. A JVM that was killed cannot drop it: while a JVM uses its template it keeps one idle
 * session open on the server's admin database whose {@code application_name} names the template
 * ({@value #HOLDER}name), opened before the template is created; before making its own, a JVM
 * drops every template of this kind (the name prefix and the {@link #MARKER} comment on the
 * database) that no such session holds any more: its JVM is gone. No other database is touched.
 *
 * <p>{@code CREATE DATABASE ... TEMPLATE} fails while any session is connected to the template, so
 * the migration runs over unpooled connections that Flyway closes, the template then refuses
 * connections ({@code ALLOW_CONNECTIONS false}), and the copy waits until the migration's sessions
 * have left it.
 */
final class TemplateDatabase {

  static final String PREFIX = "pgtask_tpl_";
  static final String HOLDER = "template holder ";
  static final String MARKER = "pgtask test template: dropped when the test JVM that made it exits, or by the"
      + " next test JVM once no session named " + HOLDER + "NAME is left";

  private final TestDatabase.Server server;
  private final String name;
  private Connection holder;

  private TemplateDatabase(TestDatabase.Server server, String name) {
    this.server = server;
    this.name = name;
  }

  /** The server's template for this JVM, made and migrated at the first call. */
  static synchronized TemplateDatabase of(TestDatabase.Server server) {
    if (server.template == null) {
      TemplateDatabase t = new TemplateDatabase(server,
          PREFIX + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT));
      Thread dropAtExit = new Thread(t::drop, "pgtask-test-template-drop");
      Runtime.getRuntime().addShutdownHook(dropAtExit);
      try {
        t.make();
      } catch (RuntimeException e) {
        Runtime.getRuntime().removeShutdownHook(dropAtExit);
        t.drop();
        throw e;
      }
      server.template = t;
    }
    return server.template;
  }

  /** Creates the database {@code db} as a copy of the migrated template. */
  void copyTo(String db) {
    synchronized (this) {
      holdOn();
    }
    try {
      server.execAdmin("CREATE DATABASE " + db + " TEMPLATE " + name);
    } catch (IllegalStateException e) {
      if (!(e.getCause() instanceof SQLException s) || !"3D000".equals(s.getSQLState())) {
        throw e;
      }
      // the template is gone: our holder session was lost (e.g. a server restart) and another JVM
      // took the template for a stale one; make it again
      synchronized (this) {
        make();
      }
      server.execAdmin("CREATE DATABASE " + db + " TEMPLATE " + name);
    }
  }

  private void make() {
    holdOn();
    dropStale();
    server.execAdmin("DROP DATABASE IF EXISTS " + name);
    server.execAdmin("CREATE DATABASE " + name);
    server.execAdmin("COMMENT ON DATABASE " + name + " IS '" + MARKER + "'");
    long start = System.nanoTime();
    PGSimpleDataSource unpooled = new PGSimpleDataSource();
    unpooled.setURL(server.urlFor(name));
    unpooled.setUser(server.user);
    if (server.password != null) {
      unpooled.setPassword(server.password);
    }
    unpooled.setApplicationName("pgtask test template migration");
    Migrations.apply(unpooled);
    server.execAdmin("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false");
    awaitNoSessions();
    System.out.printf("pgtask tests: migrated template database %s in %d ms; each test class gets a copy%n", name,
        (System.nanoTime() - start) / 1_000_000);
  }

  /** Waits until no session is connected to the template (Flyway's closed sessions may still be ending). */
  private void awaitNoSessions() {
    try {
      Awaitility.await("no session on " + name).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
          .until(() -> sessions() == 0);
    } catch (ConditionTimeoutException e) {
      // only the migration's own sessions can be there: nothing else may connect to it any more
      server.execAdmin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
      Awaitility.await("no session on " + name).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
          .until(() -> sessions() == 0);
    }
  }

  private long sessions() {
    try (Connection c = server.connect(server.urlFor(server.adminDb)); var st = c.createStatement();
        var rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE datname = '" + name + "'")) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read pg_stat_activity: " + e.getMessage(), e);
    }
  }

  /** Opens the holder session, or a new one when it was lost. */
  private void holdOn() {
    try {
      if (holder != null && holder.isValid(5)) {
        return;
      }
      Properties p = new Properties();
      p.setProperty("user", server.user);
      if (server.password != null) {
        p.setProperty("password", server.password);
      }
      p.setProperty("ApplicationName", HOLDER + name);
      holder = DriverManager.getConnection(server.urlFor(server.adminDb), p);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot open the template's holder session: " + e.getMessage(), e);
    }
  }

  /** Drops the templates of this kind whose JVM is gone (no holder session names them). */
  private void dropStale() {
    List<String> stale = new ArrayList<>();
    try (Connection c = server.connect(server.urlFor(server.adminDb));
        var ps = c.prepareStatement("SELECT d.datname FROM pg_database d WHERE d.datname LIKE ? "
            + "AND shobj_description(d.oid, 'pg_database') = ? AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a "
            + "WHERE a.application_name = ? || d.datname)")) {
      ps.setString(1, PREFIX.replace("_", "\\_") + "%");
      ps.setString(2, MARKER);
      ps.setString(3, HOLDER);
      try (var rs = ps.executeQuery()) {
        while (rs.next()) {
          stale.add(rs.getString(1));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot list stale test templates: " + e.getMessage(), e);
    }
    for (String db : stale) {
      try {
        server.execAdmin("DROP DATABASE IF EXISTS " + db);
        System.out.println("pgtask tests: dropped template database " + db + " left by a test JVM that is gone");
      } catch (IllegalStateException e) {
        // another role's, or another JVM dropping it too: not ours to insist on
        System.out.println("pgtask tests: left stale template database " + db + ": " + e.getMessage());
      }
    }
  }

  /**
   * At JVM exit: drops the template, then closes the holder session. An embedded server the suite
   * started is stopped and deleted at the same exit, template and all.
   */
  private synchronized void drop() {
    if (server.embedded != null) {
      return;
    }
    try {
      server.execAdmin("DROP DATABASE IF EXISTS " + name);
    } catch (RuntimeException e) {
      // e.g. an embedded server stopping at the same exit: its files go with it
      System.out.println("pgtask tests: could not drop template database " + name + ": " + e.getMessage());
    }
    try {
      if (holder != null) {
        holder.close();
      }
    } catch (SQLException e) {
      // the server may be gone already
    }
  }
}
