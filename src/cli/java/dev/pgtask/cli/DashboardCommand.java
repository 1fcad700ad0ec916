package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.dashboard.Dashboard;
import dev.pgtask.dashboard.DashboardAccess;
import dev.pgtask.dashboard.DashboardServer;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask dashboard}: serves the operator dashboard ({@link Dashboard}) with the JDK's HTTP
 * server until the process is stopped; read-only unless {@code --read-write}, on 127.0.0.1 unless
 * {@code --bind} says otherwise.
 */
@Command(name = "dashboard", mixinStandardHelpOptions = true,
    description = {"Serve the operator dashboard (HTML pages: overview, tasks, running, errors, tenants, schedules,",
        "workers, limits) until stopped with Ctrl-C. Read-only unless --read-write; every action is a POST",
        "with a CSRF token. Binds to 127.0.0.1 unless --bind says otherwise: anyone who reaches the port can",
        "read it (and with --read-write act), so put it behind authentication before binding it elsewhere."})
final class DashboardCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "8080",
      description = "The port to listen on (0: any free one). Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = Dashboard.DEFAULT_BIND,
      description = "The address to listen on (0.0.0.0: every interface). Default: ${DEFAULT-VALUE}.")
  String bind;

  @Option(names = "--read-write",
      description = "Allow the actions: retry, cancel, delete, pause and resume queues and schedules, bulk by filter.")
  boolean readWrite;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    ConnectionSettings settings = connection.settings();
    settings.checkReachable("pgtask dashboard");
    HikariDataSource pool = settings.openPool("pgtask-dashboard", 4, "pgtask dashboard");
    DashboardServer server;
    try {
      server = Dashboard.builder(pool).bind(bind).port(port)
          .access(readWrite ? DashboardAccess.READ_WRITE : DashboardAccess.READ_ONLY).start();
    } catch (RuntimeException e) {
      pool.close();
      throw new CliException(ExitCodes.FAILURE, Main.oneLine(e.getMessage()), e);
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      pool.close();
      stopped.countDown();
    }, "pgtask-dashboard-stop"));
    PrintWriter out = spec.commandLine().getOut();
    out.println("pgtask dashboard at " + server.url() + " on " + settings.describe()
        + (readWrite ? " (read-write: actions enabled)" : " (read-only)") + "; Ctrl-C stops it");
    out.flush();
    stopped.await();
    return ExitCodes.OK;
  }
}
