package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.cli.DemoHandlers;
import dev.pgtask.migrate.Migrations;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.postgresql.Driver;
import org.postgresql.PGProperty;

/**
 * {@code bin/pgtask bench --scale}: what the server pays per task as the workers multiply (issue 31).
 * The same tasks ({@code demo.record}: one row per execution, in the task's transaction; every 10th
 * without a tenant, the others over a tenth as many tenants) are drained by 1 process of 4 workers,
 * 1 process of 64, 8 processes of 8 and 64 processes of 1, each worker with concurrency
 * {@value #CONCURRENCY} and a pool of {@value #POOL_SIZE} through PgBouncer in transaction mode
 * (its own, or {@code --pgbouncer}), its LISTEN session direct. For each: the CPU time of the
 * database's backends, of PgBouncer and of the worker processes per task, the database's
 * transactions per task, the listening sessions, the notifications and their deliveries per task,
 * the tasks per claim, and the check that every task ran once with no overlap within a tenant. It
 * ends with one line, {@code pgtask bench scale: ...} (docs/benchmarks.md, "Scale").
 *
 * <p>It empties {@code pgtask.task} and {@code pgtask_demo.execution}: run it on a scratch database.
 * A configuration the server has no room for ({@code max_connections}) is skipped, saying so.
 */
public final class ScaleBench {

  /** Concurrency of every worker. */
  static final int CONCURRENCY = 4;
  /** Each worker's pool: concurrency + 2, as {@code pgtask worker} opens it. */
  static final int POOL_SIZE = CONCURRENCY + 2;
  /** Connections kept free for others on a shared server. */
  static final int SPARE_CONNECTIONS = 5;

  /** One configuration: {@code processes} worker processes of {@code perProcess} workers. */
  record Config(String key, int processes, int perProcess) {
    String label() {
      return processes + " process" + (processes == 1 ? "" : "es") + " x " + perProcess + " worker"
          + (perProcess == 1 ? "" : "s");
    }
  }

  /** The configurations, by the keys of the summary line: 4 = 1 x 4, 64 = 1 x 64, 8x8, 64x1. */
  static final List<Config> CONFIGS = List.of(new Config("4", 1, 4), new Config("64", 1, 64), new Config("8x8", 8, 8),
      new Config("64x1", 64, 1));

  private final String url;
  private final Properties props;
  private final boolean quick;
  private final String pgbouncer;
  private final java.util.Set<String> only;
  private final PrintStream out;

  /**
   * {@code pgbouncer}: {@code host:port} of a PgBouncer in transaction mode to use, or null (start
   * one); {@code only}: the configurations to run, by key (empty: all).
   */
  public ScaleBench(String url, Properties props, boolean quick, String pgbouncer, java.util.Set<String> only,
      PrintStream out) {
    if (pgbouncer != null && !pgbouncer.matches("[^:/?]+:\\d{1,5}")) {
      throw new IllegalArgumentException("--pgbouncer takes HOST:PORT, not '" + pgbouncer + "'");
    }
    for (String key : only) {
      if (CONFIGS.stream().noneMatch(c -> c.key().equals(key))) {
        throw new IllegalArgumentException("unknown configuration '" + key + "' in --only; with --scale: "
            + String.join(", ", CONFIGS.stream().map(Config::key).toList()));
      }
    }
    this.only = only;
    this.url = url;
    this.props = props;
    this.quick = quick;
    this.pgbouncer = pgbouncer;
    this.out = out;
  }

  /** Tasks per configuration: 5,000 (the workload), 2,000 with {@code --quick}. */
  int tasks() {
    return quick ? 2_000 : 5_000;
  }

  public void run() throws Exception {
    Properties parsed = Driver.parseURL(url, props);
    if (parsed == null) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL: " + url);
    }
    String host = parsed.getProperty(PGProperty.PG_HOST.getName(), "localhost");
    String port = parsed.getProperty(PGProperty.PG_PORT.getName(), "5432");
    if (host.contains(",")) {
      throw new IllegalArgumentException("bench --scale needs one server, not several hosts: " + host);
    }
    Callable<Connection> direct = () -> {
      Properties p = new Properties();
      p.putAll(props);
      p.setProperty("ApplicationName", ServerLoad.OWN_NAME);
      return DriverManager.getConnection(url, p);
    };
    try (Connection own = direct.call()) {
      own.setAutoCommit(true);
      String database = text(own, "SELECT current_database()");
      String user = text(own, "SELECT current_user");
      String password = parsed.getProperty(PGProperty.PASSWORD.getName());
      prepare();
      printMachine(own);
      PrivatePgBouncer ownBouncer = null;
      String bouncer = pgbouncer;
      try {
        Path binary = PrivatePgBouncer.binary();
        if (bouncer == null && binary != null) {
          ownBouncer = PrivatePgBouncer.start(binary, host, Integer.parseInt(port), database, user, password);
          bouncer = ownBouncer.address();
          out.println("pools through " + ownBouncer + "; LISTEN sessions direct");
        } else if (bouncer != null) {
          out.println("pools through the PgBouncer at " + bouncer + " (--pgbouncer; its CPU is not measured); LISTEN "
              + "sessions direct");
        } else {
          out.println("no pgbouncer installed and no --pgbouncer given: pools connect directly (configurations whose "
              + "pools do not fit max_connections are skipped)");
        }
        ScaleRun.Target target = bouncer == null
            ? new ScaleRun.Target(url, url, user, password, 0)
            : new ScaleRun.Target("jdbc:postgresql://" + bouncer + "/" + database + "?prepareThreshold=0", url, user,
                password, ownBouncer == null ? 0 : ownBouncer.pid());
        ScaleRun runner = new ScaleRun(own, direct, out);
        List<ScaleRun.Result> results = new ArrayList<>();
        int tasks = tasks();
        for (Config c : CONFIGS) {
          String noRoom = !only.isEmpty() && !only.contains(c.key()) ? "not selected (--only)" : noRoom(own, c, bouncer != null);
          ScaleRun.Result r = noRoom != null ? ScaleRun.Result.skipped(c, noRoom) : runner.run(c, tasks, tasks / 10, target);
          results.add(r);
          out.println(ScaleReport.progress(r));
          out.flush();
        }
        ScaleReport.print(out, results);
      } finally {
        if (ownBouncer != null) {
          ownBouncer.close();
        }
      }
    }
  }

  /** The schema, the demo's table, and an empty queue. */
  private void prepare() {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(url);
    hc.setDataSourceProperties(props);
    hc.setMaximumPoolSize(2); // Flyway takes two
    hc.setPoolName("pgtask-bench-scale");
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      Migrations.apply(ds);
      DemoHandlers.ensureSchema(ds);
    }
  }

  /**
   * Why configuration {@code c} does not fit the server's free connections now, or null when it
   * does: its LISTEN sessions, and PgBouncer's server connections (or, direct, every pool), plus
   * {@value #SPARE_CONNECTIONS} for others. The sessions of this database (a PgBouncer's from the
   * last configuration) do not count as taken.
   */
  private static String noRoom(Connection own, Config c, boolean throughBouncer) throws SQLException {
    int workers = c.processes() * c.perProcess();
    int needed = workers + (throughBouncer ? PrivatePgBouncer.POOL_SIZE : workers * POOL_SIZE) + SPARE_CONNECTIONS;
    try (Statement st = own.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int "
            + "- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            + "AND datname IS DISTINCT FROM current_database()) AS free")) {
      rs.next();
      long free = rs.getLong("free");
      return free >= needed ? null : String.format(Locale.ROOT, "skipped: needs %d connections (%d LISTEN sessions, %s, "
          + "%d spare), the server has %d free", needed, workers,
          throughBouncer ? PrivatePgBouncer.POOL_SIZE + " of PgBouncer" : workers * POOL_SIZE + " of the pools",
          SPARE_CONNECTIONS, free);
    }
  }

  private void printMachine(Connection own) throws SQLException {
    out.printf(Locale.ROOT, "machine: %d cores, Java %s; %s; max_connections=%s; %d tasks per configuration "
            + "(every 10th without a tenant, %d tenants), concurrency %d per worker, worker JVMs %s%n",
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
        text(own, "SELECT version()").replaceAll(" on .*", ""), text(own, "SHOW max_connections"), tasks(), tasks() / 10,
        CONCURRENCY, String.join(" ", ScaleHosts.JVM_OPTIONS));
  }

  private static String text(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
