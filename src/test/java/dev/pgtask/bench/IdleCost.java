package dev.pgtask.bench;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.awaitility.Awaitility;

/**
 * The cost of idle workers to the server: transactions per second in their database
 * ({@code pg_stat_database.xact_commit + xact_rollback}), with {@code n} idle worker processes and
 * no tasks. Used by
 * {@code IdleCostIT} (the bound of 0.4 per worker) and by {@code main} (the figures in docs/benchmarks.md).
 *
 * <pre>
 * mvn -q test-compile dependency:build-classpath -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
 * java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) dev.pgtask.bench.IdleCost 1 16 60
 * </pre>
 * Arguments: worker counts (any number of them), then the measuring window in seconds.
 * {@code -Dpgtask.bench.logStatements=true} makes the server log every statement of the throwaway
 * database ({@code ALTER DATABASE ... SET log_min_duration_statement = 0}), to see where the
 * transactions go.
 */
public final class IdleCost {

  private IdleCost() {}

  /** Transactions per second committed in the database while {@code n} workers idle. */
  public record Result(int workers, double seconds, long transactions) {
    public double perSecond() {
      return transactions / seconds;
    }

    public double perWorkerPerSecond() {
      return perSecond() / workers;
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%d idle worker(s): %d transactions in %.1f s = %.2f/s, %.3f/s per worker",
          workers, transactions, seconds, perSecond(), perWorkerPerSecond());
    }
  }

  /**
   * Starts {@code n} workers (default settings, demo handlers) on a fresh database, lets them settle
   * for {@code settle}, then counts the transactions ended in that database over {@code window}.
   * The count includes this method's own two reads of the statistics (subtracted).
   */
  public static Result measure(int n, Duration settle, Duration window, String... extraArgs) throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    try (TestDatabase db = TestDatabase.create("idle_cost_" + n)) {
      Db sql = new Db(db);
      if (Boolean.getBoolean("pgtask.bench.logStatements")) {
        // this throwaway database only: the server logs every statement of its sessions
        sql.exec("ALTER DATABASE " + db.name() + " SET log_min_duration_statement = 0");
      }
      try {
        for (int i = 0; i < n; i++) {
          List<String> args = new ArrayList<>(List.of("--worker-id", "idle-" + i));
          args.addAll(List.of(extraArgs));
          workers.add(WorkerProcess.start(db, "idle-" + i, args.toArray(String[]::new)));
        }
        Awaitility.await("all " + n + " workers listening").atMost(Duration.ofSeconds(120L + 30L * n))
            .pollInterval(Duration.ofMillis(500)).ignoreExceptions()
            .until(() -> sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                + "AND application_name LIKE 'pgtask listen idle-%'") == n);
        // the pool's sessions end here: the reads below go through one session of their own, opened
        // before the window, whose every transaction is known (the pool's sessions are not logged,
        // having started before the ALTER DATABASE, and its keepalive checks would count too)
        ((com.zaxxer.hikari.HikariDataSource) db.dataSource()).getHikariPoolMXBean().softEvictConnections();
        try (java.sql.Connection reader = db.connect(); java.sql.Statement st = reader.createStatement()) {
          reader.setAutoCommit(true);
          Thread.sleep(settle.toMillis()); // a benchmark's settling time, not a wait for a condition
          long before = xacts(st); // transaction 1 (its own commit comes after its snapshot)
          long autoBefore = autovacuums(st); // transaction 2
          long start = System.nanoTime();
          java.time.Instant from = java.time.Instant.now();
          Thread.sleep(window.toMillis()); // the measured window, not a wait for a condition
          // a new snapshot: the statistics of other backends are flushed at most once a second (idle ones within 10 s)
          long after = xacts(st); // transaction 3, not in its own snapshot
          double seconds = (System.nanoTime() - start) / 1e9;
          // a session's start-up is a transaction of its own, which no statement log shows
          long opened = value(st, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
              + " AND backend_start > '" + from + "'::timestamptz");
          // autovacuum's passes over this database's tables (each a transaction of its own) are not the workers'
          long autovacuumed = autovacuums(st) - autoBefore;
          System.out.printf("idle cost: %d worker(s), window %s to %s, sessions opened in it and still open: %d,"
              + " autovacuum and autoanalyze runs in it: %d%n", n, from, java.time.Instant.now(), opened, autovacuumed);
          // our own transactions in the count: the first two reads
          return new Result(n, seconds, after - before - 2);
        }
      } finally {
        for (WorkerProcess w : workers) {
          w.close();
        }
      }
    }
  }

  /** Autovacuum and autoanalyze runs on this database's tables, catalogs included. */
  private static long autovacuums(java.sql.Statement st) throws Exception {
    return value(st, "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_all_tables");
  }

  /** Transactions ended in this database: committed and rolled back. */
  private static long xacts(java.sql.Statement st) throws Exception {
    return value(st, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()");
  }

  private static long value(java.sql.Statement st, String sql) throws Exception {
    try (java.sql.ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  public static void main(String[] args) throws Exception {
    int seconds = Integer.parseInt(args[args.length - 1]);
    for (int i = 0; i < args.length - 1; i++) {
      System.out.println(measure(Integer.parseInt(args[i]), Duration.ofSeconds(15), Duration.ofSeconds(seconds)));
    }
  }
}
