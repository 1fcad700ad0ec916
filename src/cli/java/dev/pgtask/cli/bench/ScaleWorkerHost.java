package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.WorkerStatistics;
import dev.pgtask.cli.DemoHandlers;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerRuntime;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * One worker process of {@code bench --scale} ({@link ScaleBench}), started by the benchmark from its
 * own class path: {@code n} {@link PgTaskWorker}s with the demo handlers, each with its own HikariCP
 * pool (as an application would have it: the pool keeps its connections) on {@code poolUrl} and its
 * LISTEN connection on {@code listenUrl} (PostgreSQL itself when the pool goes through PgBouncer).
 *
 * <p>Protocol on stdin and stdout (its log goes to stderr): it prints {@code ready} once every worker
 * has started; to the line {@code stats} it answers {@code stats <claimed> <claim statements>
 * <listening sessions>}, the sum over its workers (a worker's LISTEN session counts when it LISTENs:
 * the workers of a process share one); {@code stop} or the end of stdin closes the workers and ends the process.
 *
 * <p>Arguments: poolUrl listenUrl workerIdPrefix workers concurrency poolSize. The user and password
 * come from the environment ({@value #USER_ENV}, {@value #PASSWORD_ENV}), not from the command line,
 * which other users of the machine can read.
 */
public final class ScaleWorkerHost {

  static final String USER_ENV = "PGTASK_SCALE_USER";
  static final String PASSWORD_ENV = "PGTASK_SCALE_PASSWORD";

  private ScaleWorkerHost() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: ScaleWorkerHost poolUrl listenUrl workerIdPrefix workers concurrency poolSize");
      System.exit(2);
    }
    String poolUrl = args[0];
    String listenUrl = args[1];
    String prefix = args[2];
    int n = Integer.parseInt(args[3]);
    int concurrency = Integer.parseInt(args[4]);
    int poolSize = Integer.parseInt(args[5]);
    Properties login = new Properties();
    if (System.getenv(USER_ENV) != null) {
      login.setProperty("user", System.getenv(USER_ENV));
    }
    if (System.getenv(PASSWORD_ENV) != null) {
      login.setProperty("password", System.getenv(PASSWORD_ENV));
    }
    List<PgTaskWorker> workers = new ArrayList<>();
    List<HikariDataSource> pools = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        String id = prefix + "-w" + i;
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(poolUrl);
        c.setDataSourceProperties(login);
        c.setMaximumPoolSize(poolSize);
        c.setPoolName(id);
        c.addDataSourceProperty("ApplicationName", "pgtask " + id);
        HikariDataSource pool = new HikariDataSource(c);
        pools.add(pool);
        PgTaskWorker.Builder b = PgTaskWorker.builder(pool)
            .workerId(id)
            .concurrency(concurrency)
            .listenConnection(() -> DriverManager.getConnection(listenUrl, login));
        workers.add(DemoHandlers.register(b).build().start());
      }
      System.out.println("ready");
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null && !line.equals("stop"); line = in.readLine()) {
        if (line.equals("stats")) {
          long claimed = 0;
          long claims = 0;
          long listening = 0;
          for (PgTaskWorker w : workers) {
            WorkerStatistics s = w.stats();
            claimed += s.claimed();
            claims += s.claimQueries();
            WorkerRuntime runtime = WorkerAccess.runtime(w);
            if (runtime != null && runtime.listenSessionListens()) {
              listening++;
            }
          }
          System.out.println("stats " + claimed + " " + claims + " " + listening);
          System.out.flush();
        }
      }
    } finally {
      workers.forEach(PgTaskWorker::close);
      pools.forEach(HikariDataSource::close);
    }
    System.out.println("stopped");
    System.out.flush();
  }
}
