package dev.pgtask.bench;

import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.cli.DemoHandlers;
import dev.pgtask.migrate.Migrations;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Many workers on one PostgreSQL through PgBouncer (docs/benchmarks.md, "Sixty-four workers"): a
 * fresh database on the server, {@code tasks} {@code demo.record} tasks (every 10th without a
 * tenant, the others spread over {@code tenants}), {@code jvms} worker JVMs ({@link WorkerHost})
 * of {@code perJvm} workers each, pools through PgBouncer, LISTEN direct. Reports the throughput
 * (first start to last finish of the committed executions), the most connections the server had
 * at once (pg_stat_activity, all databases, sampled every 100 ms while the tasks ran) and checks
 * every task ran once, with no overlap within a tenant.
 *
 * <pre>
 * mvn -q test-compile dependency:build-classpath -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
 * java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) dev.pgtask.bench.ManyWorkers \
 *   HOST:PORT(direct) HOST:PORT(pgbouncer) USER JVMS PER_JVM TASKS TENANTS [CONCURRENCY [POOL_SIZE]]
 * </pre>
 */
public final class ManyWorkers {

  private ManyWorkers() {}

  public static void main(String[] args) throws Exception {
    String direct = args[0];
    String bouncer = args[1];
    String user = args[2];
    int jvms = Integer.parseInt(args[3]);
    int perJvm = Integer.parseInt(args[4]);
    int tasks = Integer.parseInt(args[5]);
    int tenants = Integer.parseInt(args[6]);
    int concurrency = args.length > 7 ? Integer.parseInt(args[7]) : 4;
    int poolSize = args.length > 8 ? Integer.parseInt(args[8]) : concurrency + 1;
    String db = "pgtask_bench_many_" + System.nanoTime() % 1_000_000;
    String admin = "jdbc:postgresql://" + direct + "/postgres";
    try (Connection c = DriverManager.getConnection(admin, user, ""); Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + db);
    }
    String directUrl = "jdbc:postgresql://" + direct + "/" + db;
    String poolUrl = "jdbc:postgresql://" + bouncer + "/" + db + "?prepareThreshold=0";
    List<Process> hosts = new ArrayList<>();
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(directUrl);
    hc.setUsername(user);
    hc.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      Migrations.apply(ds);
      DemoHandlers.ensureSchema(ds);
      Path logs = Files.createDirectories(Path.of("target", "bench-logs"));
      for (int h = 0; h < jvms; h++) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
            WorkerHost.class.getName(), poolUrl, directUrl, user, Integer.toString(h), Integer.toString(perJvm),
            Integer.toString(concurrency), Integer.toString(poolSize)));
        Path log = logs.resolve(db + "-host" + h + ".log");
        hosts.add(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start());
      }
      for (int h = 0; h < jvms; h++) {
        Path log = logs.resolve(db + "-host" + h + ".log");
        Process host = hosts.get(h);
        try {
          await("worker host " + h + " ready").atMost(Duration.ofMinutes(10)).pollInterval(Duration.ofMillis(200))
              .until(() -> {
                if (!host.isAlive()) {
                  throw new IllegalStateException("process ended");
                }
                return Files.readString(log).contains("ready");
              });
        } catch (ConditionTimeoutException | IllegalStateException e) {
          throw new IllegalStateException("worker host " + h + " did not start:\n" + Files.readString(log), e);
        }
      }
      long idleConnections = count(ds, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'");
      AtomicLong maxConnections = new AtomicLong();
      Thread sampler = new Thread(() -> {
        try (Connection c = DriverManager.getConnection(directUrl, user, ""); Statement st = c.createStatement()) {
          while (!Thread.currentThread().isInterrupted()) {
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")) {
              rs.next();
              maxConnections.accumulateAndGet(rs.getLong(1), Math::max);
            }
            Thread.sleep(100); // the sampling interval of pg_stat_activity, not a wait for a condition
          }
        } catch (InterruptedException e) {
          // done
        } catch (Exception e) {
          e.printStackTrace();
        }
      });
      sampler.start();
      exec(ds, "SELECT pgtask.enqueue('demo.record', '{}', tenant => CASE WHEN i % 10 = 0 THEN NULL "
          + "ELSE 'tenant-' || (i % " + tenants + ") END) FROM generate_series(1, " + tasks + ") i");
      try {
        await("all tasks completed").atMost(Duration.ofMinutes(30)).pollInterval(Duration.ofMillis(250))
            .until(() -> count(ds, "SELECT count(*) FROM pgtask.task WHERE state <> 'completed'") == 0);
      } catch (ConditionTimeoutException e) {
        throw new IllegalStateException("tasks not done after 30 minutes", e);
      }
      sampler.interrupt();
      sampler.join();
      double seconds = Double.parseDouble(text(ds,
          "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM pgtask_demo.execution"));
      long executions = count(ds, "SELECT count(*) FROM pgtask_demo.execution");
      long duplicated = count(ds, "SELECT count(*) FROM (SELECT task_id FROM pgtask_demo.execution "
          + "GROUP BY task_id HAVING count(*) <> 1) d");
      long overlaps = count(ds, "SELECT count(*) FROM pgtask_demo.execution a JOIN pgtask_demo.execution b "
          + "ON a.tenant = b.tenant AND a.task_id < b.task_id "
          + "AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)");
      long workersSeen = count(ds, "SELECT count(DISTINCT worker) FROM pgtask_demo.execution");
      long lost = count(ds, "SELECT count(*) FROM pgtask.task t, jsonb_array_elements(t.errors) e "
          + "WHERE e ->> 'error' LIKE 'worker lost%'");
      String leader = text(ds, "SELECT worker || ' (term ' || term || ')' FROM pgtask.maintenance_leader");
      System.out.printf(Locale.ROOT, "%d JVM(s) x %d worker(s), concurrency %d, pool %d via PgBouncer, LISTEN direct: "
              + "%d tasks in %.1f s = %.0f tasks/s; executions %d (tasks run more or less than once: %d), "
              + "tenant overlaps %d, workers that ran tasks %d, 'worker lost' rescues %d; server connections: "
              + "%d with the workers idle, at most %d while the tasks ran; maintenance leader %s%n",
          jvms, perJvm, concurrency, poolSize, tasks, seconds, tasks / seconds, executions, duplicated, overlaps,
          workersSeen, lost, idleConnections, maxConnections.get(), leader);
    } finally {
      for (Process p : hosts) {
        p.destroy();
      }
      for (Process p : hosts) {
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
      try (Connection c = DriverManager.getConnection(admin, user, ""); Statement st = c.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
      }
    }
  }

  private static long count(javax.sql.DataSource ds, String sql) throws Exception {
    return Long.parseLong(text(ds, sql));
  }

  private static String text(javax.sql.DataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  private static void exec(javax.sql.DataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }
}
