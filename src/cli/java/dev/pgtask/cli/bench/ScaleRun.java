package dev.pgtask.cli.bench;

import dev.pgtask.cli.DemoHandlers;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * One configuration of {@code bench --scale}: its worker processes drain the same tasks while
 * {@link ServerLoad} and {@link NotificationCount} count what that costs (and the processes say how
 * many of their workers' sessions LISTEN, at the start and at the end of the drain), then the executions are
 * checked (every task once, no two of one tenant at once).
 *
 * <p>The order: empty the tables; start the processes and wait until every worker listens; wait
 * {@value #SETTLE_MILLIS} ms so that the transactions of their start are in
 * {@code pg_stat_database} (an idle backend reports its counts up to 10 s late); read the
 * counters; enqueue the tasks in one transaction on the benchmark's session; sample every
 * {@value #SAMPLE_MILLIS} ms until every task is completed; read the CPU times; wait
 * {@value #SETTLE_MILLIS} ms again and read the transactions. The transactions thus include
 * {@value #SETTLE_MILLIS} ms of the idle workers after the drain (about 0.25 a second per worker),
 * and leave out the benchmark's own statements and its listener's wake-ups.
 */
final class ScaleRun {

  /** PostgreSQL's PGSTAT_IDLE_INTERVAL (10 s) and a margin. */
  static final long SETTLE_MILLIS = 11_000;
  static final long SAMPLE_MILLIS = 250;
  static final long DRAIN_TIMEOUT_MILLIS = TimeUnit.MINUTES.toMillis(15);
  static final long START_TIMEOUT_MILLIS = TimeUnit.MINUTES.toMillis(10);

  /** Where the workers connect: their pools' URL, their LISTEN sessions' URL, the login. */
  record Target(String poolUrl, String listenUrl, String user, String password, long bouncerPid) {}

  /** What one configuration measured; {@code skipped} non-null when it did not run, saying why. */
  record Result(ScaleBench.Config config, int tasks, double seconds, double serverMillis, double bouncerMillis,
      double workersMillis, long transactions, long notifications, double listeners, double listenSessions,
      long claimed, long claims, Check check, String skipped) {

    static Result skipped(ScaleBench.Config config, String why) {
      return new Result(config, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, 0, Double.NaN, Double.NaN, 0, 0,
          null, why);
    }

    double perTask(double total) {
      return skipped != null ? Double.NaN : total / tasks;
    }

    double serverMicrosPerTask() {
      return perTask(serverMillis * 1000);
    }

    double transactionsPerTask() {
      return perTask(transactions);
    }

    /** Notifications times the LISTENing sessions (each signalled for each), per task. */
    double deliveriesPerTask() {
      return perTask(notifications * listeners);
    }

    double tasksPerClaim() {
      return claims == 0 ? Double.NaN : (double) claimed / claims;
    }
  }

  /** The executions' check: every task once, no tenant overlap, no rescue from a live worker. */
  record Check(long executions, long notOnce, long overlaps, long workersSeen, long lost) {
    boolean ok(int tasks) {
      return executions == tasks && notOnce == 0 && overlaps == 0 && lost == 0;
    }
  }

  private final Connection own;
  private final Callable<Connection> direct;
  private final PrintStream out;
  // statements this class sent on the benchmark's session (each a transaction: autocommit)
  private long statements;

  ScaleRun(Connection own, Callable<Connection> direct, PrintStream out) {
    this.own = own;
    this.direct = direct;
    this.out = out;
  }

  Result run(ScaleBench.Config config, int tasks, int tenants, Target target) throws Exception {
    reset();
    int workers = config.processes() * config.perProcess();
    out.printf(Locale.ROOT, "%s: starting %d process(es) of %d worker(s)...%n", config.label(), config.processes(),
        config.perProcess());
    out.flush();
    try (ScaleHosts hosts = ScaleHosts.start(config.processes(), config.perProcess(), ScaleBench.CONCURRENCY,
        ScaleBench.POOL_SIZE, target.poolUrl(), target.listenUrl(), target.user(), target.password(),
        "scale-" + config.key())) {
      hosts.awaitReady(START_TIMEOUT_MILLIS);
      awaitListeners(workers);
      Thread.sleep(SETTLE_MILLIS); // pg_stat_database lags an idle backend's transactions by up to 10 s
      try (NotificationCount notes = new NotificationCount(direct)) {
        ServerLoad load = new ServerLoad(own, target.bouncerPid(), hosts.pids());
        long[] statsBefore = hosts.stats();
        long xactsBefore = load.transactions();
        long ownBefore = load.ownStatements() + statements;
        long notesBefore = notes.received();
        enqueue(tasks, tenants);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_TIMEOUT_MILLIS);
        while (completed() < tasks) {
          if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException(config.label() + ": tasks not done after " + DRAIN_TIMEOUT_MILLIS / 1000 + " s");
          }
          Thread.sleep(SAMPLE_MILLIS); // the sampling interval of the backends' CPU times
          load.sample();
        }
        load.sample();
        double serverMillis = load.serverMillis();
        double bouncerMillis = load.bouncerMillis();
        double workersMillis = load.workersMillis();
        long[] statsAfter = hosts.stats();
        long notifications = notes.received() - notesBefore;
        Thread.sleep(SETTLE_MILLIS);
        long ownStatements = load.ownStatements() + statements - ownBefore;
        long xacts = load.transactions() - xactsBefore - ownStatements - (notes.received() - notesBefore);
        Check check = check();
        return new Result(config, tasks, seconds(), serverMillis, bouncerMillis, workersMillis, xacts, notifications,
            (statsBefore[2] + statsAfter[2]) / 2.0, load.listenSessionsMean(), statsAfter[0] - statsBefore[0],
            statsAfter[1] - statsBefore[1], check, null);
      }
    }
  }

  private void reset() throws SQLException {
    try (Statement st = own.createStatement()) {
      // the attempt history and the dependencies reference the tasks: TRUNCATE names all three
      st.execute("TRUNCATE pgtask.task, pgtask.task_attempt, pgtask.task_dependency, " + DemoHandlers.SCHEMA + ".execution");
      st.execute("DELETE FROM pgtask.worker");
      st.execute("VACUUM ANALYZE pgtask.task");
    }
  }

  private void awaitListeners(int workers) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND application_name LIKE 'pgtask listen %'") < workers) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the workers' LISTEN sessions did not all connect within 60 s");
      }
      Thread.sleep(100); // polling the server for a state no one signals
    }
  }

  // every 10th task without a tenant, the others over the tenants (the setup of "Sixty-four workers")
  private void enqueue(int tasks, int tenants) throws SQLException {
    statements++;
    try (Statement st = own.createStatement()) {
      st.execute("SELECT count(pgtask.enqueue('" + DemoHandlers.RECORD + "', '{}', tenant => CASE WHEN i % 10 = 0 THEN NULL "
          + "ELSE 'tenant-' || (i % " + tenants + ") END)) FROM generate_series(1, " + tasks + ") i");
    }
  }

  private long completed() throws SQLException {
    return count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'");
  }

  private double seconds() throws SQLException {
    try (Statement st = own.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT extract(epoch FROM max(finished_at) - min(started_at)) AS seconds FROM " + DemoHandlers.SCHEMA + ".execution")) {
      rs.next();
      return rs.getDouble("seconds");
    }
  }

  private Check check() throws SQLException {
    String execution = DemoHandlers.SCHEMA + ".execution";
    return new Check(
        count("SELECT count(*) FROM " + execution),
        count("SELECT (SELECT count(*) FROM pgtask.task t WHERE NOT EXISTS (SELECT 1 FROM " + execution + " e "
            + "WHERE e.task_id = t.id)) + (SELECT count(*) FROM (SELECT task_id FROM " + execution
            + " GROUP BY task_id HAVING count(*) > 1) d)"),
        count("SELECT count(*) FROM " + execution + " a JOIN " + execution + " b ON a.tenant = b.tenant "
            + "AND a.task_id < b.task_id AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)"),
        count("SELECT count(DISTINCT worker) FROM " + execution),
        count("SELECT count(*) FROM pgtask.task_attempt WHERE outcome = 'worker_lost'"));
  }

  private long count(String sql) throws SQLException {
    statements++;
    try (Statement st = own.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
