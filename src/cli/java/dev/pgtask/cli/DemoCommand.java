package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.internal.sql.OpsQueries;
import dev.pgtask.internal.sql.OpsQueries.Progress;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.ops.PgTaskOperations;
import dev.pgtask.ops.TenantLock;
import dev.pgtask.migrate.Migrations;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask demo}: pgtask's promise, shown live and checked. On the connected database it
 * migrates (creates or upgrades the {@code pgtask} schema), creates {@code pgtask_demo.execution},
 * clears what a previous demo run left (that table and the tasks of queue {@value #QUEUE}; no other
 * queue's tasks are touched), starts worker processes (separate JVMs
 * running {@code pgtask worker --demo-handlers}), enqueues {@code demo.record} tasks over many tenants
 * through the SQL function {@code pgtask.enqueue}, kills one worker with SIGKILL after a third is
 * done, and checks from the execution table that every task ran exactly once and that no two
 * executions of one tenant overlapped. Exits 0 only when every invariant held. At the end it deletes
 * its tasks and execution records ({@code --keep} leaves them to inspect) and says what stays.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Run the demo on the connected database: worker processes, thousands of tasks over many tenants,",
        "one worker killed with SIGKILL midway; then check exactly-once execution and tenant exclusion.",
        "Creates or upgrades the pgtask schema in that database, and the schema pgtask_demo; of the tasks, touches only",
        "queue '" + DemoCommand.QUEUE + "', whose tasks it deletes at the end (--keep leaves them).",
        "Exit 0 only if every invariant held."})
public final class DemoCommand implements Callable<Integer> {

  /** The demo's own queue: cleared at the start of each run. */
  public static final String QUEUE = "pgtask-demo";
  /** Tenants are named {@code demo-tenant-1}, {@code demo-tenant-2}, ... */
  public static final String TENANT_PREFIX = "demo-tenant-";
  /** The longest sleep of a demo task, in milliseconds (each sleeps a random 0..this). */
  static final int MAX_MS = 20;
  private static final long TICK_MS = 250;

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--tasks", paramLabel = "N", description = "Tasks to enqueue. Default: ${DEFAULT-VALUE}.")
  int tasks = 3000;

  @Option(names = "--tenants", paramLabel = "N", description = "Tenants the tasks are spread over. Default: ${DEFAULT-VALUE}.")
  int tenants = 50;

  @Option(names = "--workers", paramLabel = "N", description = "Worker processes (at least 2). Default: ${DEFAULT-VALUE}.")
  int workers = 3;

  @Option(names = "--concurrency", paramLabel = "N", description = "Tasks each worker runs at once. Default: ${DEFAULT-VALUE}.")
  int concurrency = 4;

  @Option(names = "--timeout", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Give up (exit 1) when the tasks are not all done after this. Default: 3m.")
  Duration timeout = Duration.ofMinutes(3);

  @Option(names = "--embedded", description = "Run on an embedded PostgreSQL started for the demo (in a scratch"
      + " directory, stopped at the end), whatever server is configured. Without it the demo starts one only when"
      + " no server is configured (--url, PGTASK_URL, PG* variables) and none answers on localhost:5432.")
  boolean embedded;

  @Option(names = "--keep", description = "Leave the demo's tasks (queue " + QUEUE + ") and execution records in place"
      + " at the end, to inspect them; the next run deletes them first.")
  boolean keep;

  @Option(names = "--listen-url", paramLabel = "URL",
      description = "Where the workers' LISTEN connections go when --url goes through a transaction pooler"
          + " (PgBouncer pool_mode=transaction): PostgreSQL itself, same forms as --url.")
  String listenUrl;

  @Spec
  CommandSpec spec;

  private final List<DemoWorker> started = new ArrayList<>();
  private PgTaskOperations operations; // the reads of the views, over the demo's pool (set in call)
  private String listenJdbcUrl; // the workers' PGTASK_LISTEN_URL, or null
  private boolean onEmbeddedServer; // the demo started its own server, deleted at the end

  @Override
  public Integer call() throws Exception {
    validate();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    dev.pgtask.internal.embedded.EmbeddedPostgres[] server = new dev.pgtask.internal.embedded.EmbeddedPostgres[1];
    ConnectionSettings settings = EmbeddedServer.choose(connection.settings(), System.getenv(), embedded, server, out);
    onEmbeddedServer = server[0] != null;
    try {
      settings = settings.forPooler("pgtask demo");
      if (listenUrl != null && !listenUrl.isBlank()) {
        ConnectionSettings listen = ConnectionSettings.resolve(listenUrl);
        listen.checkReachable("pgtask demo");
        listenJdbcUrl = listen.jdbcUrl();
      }
      return run(settings, out, err);
    } finally {
      if (server[0] != null) {
        stopWorkers();
        server[0].close();
      }
    }
  }

  private int run(ConnectionSettings settings, PrintWriter out, PrintWriter err) throws Exception {
    Thread hook = new Thread(this::stopWorkers, "pgtask-demo-cleanup");
    Runtime.getRuntime().addShutdownHook(hook);
    try (HikariDataSource pool = settings.openPool("pgtask-demo", 3, "pgtask demo")) {
      DSLContext dsl = Sql.using(pool);
      Migrations.apply(pool);
      DemoHandlers.ensureSchema(pool);
      dsl.deleteFrom(DemoHandlers.EXECUTION).execute();
      OpsQueries.deleteQueue(dsl, QUEUE);
      out.printf("pgtask demo on %s: %d tasks over %d tenants, %d worker processes x %d, one killed midway%n",
          settings.describe(), tasks, tenants, workers, concurrency);
      out.flush();
      operations = PgTaskOperations.create(pool);
      int code = run(dsl, settings, out, err);
      stopWorkers();
      cleanUp(dsl, settings, out, code == ExitCodes.OK);
      return code;
    } finally {
      stopWorkers();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // the JVM is shutting down: the hook runs (and finds nothing left to stop)
      }
    }
  }

  /**
   * After the workers stopped: removes the registry rows of the demo's workers (the killed one could
   * not remove its own: a later run in this process, whose workers have the same ids, would be
   * refused while it looks alive), deletes the demo's tasks and execution records (unless
   * {@code --keep}, or the run failed: they are the evidence), and says what stays in the database: what a run creates that it cannot take
   * back while other work may use it.
   */
  private void cleanUp(DSLContext dsl, ConnectionSettings settings, PrintWriter out, boolean passed) {
    for (DemoWorker w : started) {
      if (!w.process.isAlive()) {
        dev.pgtask.internal.sql.WorkerQueries.deregister(dsl, w.id);
      }
    }
    if (keep || !passed) {
      out.printf("kept for inspection (%s): the demo's tasks (queue %s) and pgtask_demo.execution; the next demo"
          + " run deletes them%n", keep ? "--keep" : "the run failed", QUEUE);
    } else {
      int tasksDeleted = OpsQueries.deleteQueue(dsl, QUEUE);
      dsl.deleteFrom(DemoHandlers.EXECUTION).execute();
      out.printf("deleted the demo's %d tasks (queue %s) and its execution records (--keep leaves them)%n",
          tasksDeleted, QUEUE);
    }
    if (onEmbeddedServer) {
      return; // the server and its data directory are deleted next
    }
    out.printf("left in %s: the pgtask schema the demo created or upgraded (tables, functions, views; DROP SCHEMA"
        + " pgtask CASCADE removes it if nothing else uses pgtask there), the schema pgtask_demo (its empty table"
        + " execution), and the tenant names %s<n> in pgtask.tenant%n", settings.describe(), TENANT_PREFIX);
  }

  private void validate() {
    List<String> problems = new ArrayList<>();
    if (tasks < 10 || tasks > 1_000_000) {
      problems.add("--tasks must be between 10 and 1000000");
    }
    if (tenants < 1 || tenants > tasks) {
      problems.add("--tenants must be between 1 and --tasks");
    }
    if (workers < 2 || workers > 32) {
      problems.add("--workers must be between 2 and 32 (one is killed, another must rescue its tasks)");
    }
    if (concurrency < 1 || concurrency > 64) {
      problems.add("--concurrency must be between 1 and 64");
    }
    if (timeout.isNegative() || timeout.isZero()) {
      problems.add("--timeout must be positive");
    }
    if (!problems.isEmpty()) {
      throw new CommandLine.ParameterException(spec.commandLine(), String.join("; ", problems));
    }
  }

  private int run(DSLContext dsl, ConnectionSettings settings, PrintWriter out, PrintWriter err)
      throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    String prefix = "demo-" + ProcessHandle.current().pid() + "-w";
    for (int i = 1; i <= workers; i++) {
      started.add(DemoWorker.start(prefix + i, settings, listenJdbcUrl, concurrency));
    }
    out.printf("started %d workers: %s (logs: %s)%n", workers,
        String.join(", ", started.stream().map(w -> w.id + " pid " + w.process.pid()).toList()),
        started.get(0).log.getParent().resolve("pgtask-demo-*.log"));
    out.flush();
    awaitWorkersUp(dsl, out, t0);

    long enqueueStart = System.nanoTime();
    OpsQueries.enqueueDemoTasks(dsl, DemoHandlers.RECORD, QUEUE, tasks, tenants, TENANT_PREFIX, MAX_MS);
    out.printf("enqueued %d %s tasks through pgtask.enqueue in %s%n", tasks, DemoHandlers.RECORD,
        Formats.duration(Duration.ofNanos(System.nanoTime() - enqueueStart)));
    out.flush();

    Progress progress = null;
    DemoWorker killed = null;
    Instant killedAt = null;
    int rescuedSeen = 0;
    boolean snapshotTaken = false;
    boolean console = System.console() != null;
    ArrayDeque<long[]> samples = new ArrayDeque<>(); // {nanos, completed}
    long lastLine = 0;
    long deadline = enqueueStart + timeout.toNanos();
    String failure = null;
    while (true) {
      progress = OpsQueries.selectProgress(dsl, QUEUE);
      long now = System.nanoTime();
      samples.addLast(new long[] {now, progress.completed()});
      // the rate over the last second or so: keep one sample at least a second old
      while (samples.size() > 2 && now - secondOldest(samples)[0] >= TimeUnit.SECONDS.toNanos(1)) {
        samples.removeFirst();
      }
      long[] first = samples.peekFirst();
      double rate = now == first[0] ? 0 : (progress.completed() - first[1]) * 1e9 / (now - first[0]);
      int rescued = killed == null ? 0 : OpsQueries.selectRescuedFrom(dsl, QUEUE, killed.id).size();
      String line = String.format(Locale.ROOT, "done %d/%d  running %d  retries %d  %.0f/s  %s", progress.completed(),
          progress.total(), progress.running(), progress.retried(), rate,
          Formats.duration(Duration.ofNanos(now - enqueueStart)));
      if (console) {
        err.print("\r" + line + "   ");
        err.flush();
      } else if (now - lastLine >= TimeUnit.SECONDS.toNanos(1)) {
        err.println(line);
        err.flush();
        lastLine = now;
      }
      if (progress.completed() >= progress.total()) {
        break;
      }
      if (now > deadline) {
        failure = "gave up after " + Formats.duration(timeout) + " (--timeout): " + progress.completed() + " of "
            + progress.total() + " tasks done";
        break;
      }
      if (started.stream().noneMatch(w -> w.process.isAlive())) {
        failure = "every worker process has exited; see " + started.get(0).log.getParent().resolve("pgtask-demo-*.log");
        break;
      }
      if (killed == null && progress.completed() * 3 >= progress.total()) {
        DemoWorker victim = pickVictim(dsl);
        int held = victim == null ? -1 : DemoWorker.killHolding(dsl, victim);
        if (held >= 0) {
          killed = victim;
          killedAt = OpsQueries.selectClock(dsl);
          say(out, err, console, String.format(Locale.ROOT,
              "SIGKILL worker %s (pid %d) while it holds %d task%s, at %d/%d done: its transactions roll back;"
                  + " the rescue pass takes its tasks back once their lease (%s) expires",
              killed.id, killed.process.pid(), held, held == 1 ? "" : "s", progress.completed(), progress.total(),
              Formats.duration(DemoWorker.LEASE)));
        }
      }
      if (killed != null && rescued > rescuedSeen) {
        say(out, err, console, String.format(Locale.ROOT, "rescued %d task%s of %s (worker lost), %s after the kill",
            rescued - rescuedSeen, rescued - rescuedSeen == 1 ? "" : "s", killed.id,
            Formats.duration(Duration.between(killedAt, OpsQueries.selectClock(dsl)))));
        rescuedSeen = rescued;
      }
      if (!snapshotTaken && progress.completed() * 4 >= progress.total() && progress.running() > 0) {
        List<TenantLock> locks = operations.tenantLocks();
        if (!locks.isEmpty()) {
          snapshotTaken = true;
          int shown = Math.min(8, locks.size());
          StringBuilder b = new StringBuilder("pgtask.tenant_locks right now (" + locks.size() + " held"
              + (shown < locks.size() ? ", first " + shown + " shown" : "") + "):\n");
          for (String l : LocksCommand.tenantLocks(locks.subList(0, shown)).render().split("\n")) {
            b.append("  ").append(l).append('\n');
          }
          say(out, err, console, b.toString().stripTrailing());
        }
      }
      Thread.sleep(TICK_MS);
    }
    long wallNanos = System.nanoTime() - enqueueStart;
    if (console) {
      err.println();
      err.flush();
    }
    stopWorkers();
    int code = DemoReport.report(dsl, out, tasks, progress, killed, killedAt, wallNanos, failure);
    if (code == ExitCodes.OK) {
      for (DemoWorker w : started) {
        Files.deleteIfExists(w.log);
      }
    } else {
      out.println("worker logs: " + String.join(" ", started.stream().map(w -> w.log.toString()).toList()));
      out.flush();
    }
    return code;
  }

  private static long[] secondOldest(ArrayDeque<long[]> samples) {
    var it = samples.iterator();
    it.next();
    return it.next();
  }

  /** Waits until every worker has registered (pgtask.workers), so the kill hits a working cluster. */
  private void awaitWorkersUp(DSLContext dsl, PrintWriter out, long t0) throws InterruptedException {
    Set<String> ids = new HashSet<>();
    started.forEach(w -> ids.add(w.id));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (true) {
      Set<String> up = new HashSet<>();
      operations.workers().forEach(w -> up.add(w.id()));
      if (up.containsAll(ids)) {
        out.printf("all %d workers registered in pgtask.workers after %s%n", ids.size(),
            Formats.duration(Duration.ofNanos(System.nanoTime() - t0)));
        out.flush();
        return;
      }
      for (DemoWorker w : started) {
        if (!w.process.isAlive()) {
          throw new CliException(ExitCodes.FAILURE, "worker " + w.id + " exited with code " + w.process.exitValue()
              + " at start: " + w.lastLogLine() + " (log: " + w.log + ")");
        }
      }
      if (System.nanoTime() > deadline) {
        throw new CliException(ExitCodes.FAILURE, "the workers did not register within 90s (logs: "
            + started.get(0).log.getParent().resolve("pgtask-demo-*.log") + ")");
      }
      Thread.sleep(100);
    }
  }

  /** The live worker with the most claimed tasks (at least one), or null to try again later. */
  private DemoWorker pickVictim(DSLContext dsl) {
    Map<String, Integer> running = OpsQueries.selectRunningByWorker(dsl, QUEUE);
    DemoWorker best = null;
    int most = 0;
    for (DemoWorker w : started) {
      int n = running.getOrDefault(w.id, 0);
      if (w.process.isAlive() && n > most) {
        best = w;
        most = n;
      }
    }
    return best;
  }

  /** Prints a narrative line, clearing the live progress line first on a terminal. */
  private static void say(PrintWriter out, PrintWriter err, boolean console, String text) {
    if (console) {
      err.print("\r\033[K");
      err.flush();
    }
    out.println(text);
    out.flush();
  }

  /** Stops every worker still running: SIGTERM, up to 10 s to finish, then SIGKILL. Idempotent. */
  private synchronized void stopWorkers() {
    for (DemoWorker w : started) {
      if (w.process.isAlive()) {
        w.process.destroy();
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (DemoWorker w : started) {
      try {
        long left = deadline - System.nanoTime();
        if (left <= 0 || !w.process.waitFor(left, TimeUnit.NANOSECONDS)) {
          w.process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        w.process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }

}
