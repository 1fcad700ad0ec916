package dev.pgtask.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.cli.DemoHandlers;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;

/**
 * One JVM of {@link ManyWorkers}: {@code n} {@link PgTaskWorker}s with the demo handlers, each with
 * its own HikariCP pool on {@code poolUrl} (PgBouncer in transaction mode, {@code prepareThreshold=0})
 * and its own LISTEN connection on {@code listenUrl} (direct to PostgreSQL). Prints {@code ready}
 * when all have started; stops them (gracefully) at SIGTERM.
 *
 * <p>Arguments: poolUrl listenUrl user hostIndex workers concurrency poolSize
 */
public final class WorkerHost {

  private WorkerHost() {}

  public static void main(String[] args) throws Exception {
    String poolUrl = args[0];
    String listenUrl = args[1];
    String user = args[2];
    int host = Integer.parseInt(args[3]);
    int n = Integer.parseInt(args[4]);
    int concurrency = Integer.parseInt(args[5]);
    int poolSize = Integer.parseInt(args[6]);
    List<PgTaskWorker> workers = new ArrayList<>();
    List<HikariDataSource> pools = new ArrayList<>();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      workers.forEach(PgTaskWorker::close);
      pools.forEach(HikariDataSource::close);
    }));
    for (int i = 0; i < n; i++) {
      HikariConfig c = new HikariConfig();
      c.setJdbcUrl(poolUrl);
      c.setUsername(user);
      c.setMaximumPoolSize(poolSize);
      c.setMinimumIdle(0);
      c.setPoolName("h" + host + "-w" + i);
      HikariDataSource pool = new HikariDataSource(c);
      pools.add(pool);
      PgTaskWorker.Builder b = PgTaskWorker.builder(pool)
          .workerId("h" + host + "-w" + i)
          .concurrency(concurrency)
          .listenConnection(() -> DriverManager.getConnection(listenUrl, user, ""));
      workers.add(DemoHandlers.register(b).build().start());
    }
    System.out.println("ready");
    Thread.currentThread().join(); // until SIGTERM: the shutdown hook stops the workers
  }
}
