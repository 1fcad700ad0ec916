package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.CancelResult;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.PgBouncer;
import dev.pgtask.testsupport.PgBouncer.Mode;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Real worker processes and the demo behind a real PgBouncer in transaction mode: with the pool's
 * URL only (the CLI connects with prepareThreshold=0; the LISTEN, through the pooler too, receives
 * nothing: the worker says so and works by polling, cancellation included), and split (pool through
 * PgBouncer, {@code --listen-url} direct: wake-ups and cancellation as direct).
 */
class PgBouncerIT {

  private static TestDatabase db;
  private static PgBouncer bouncer;

  @BeforeAll
  static void start() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pgbouncer_it");
    bouncer = PgBouncer.start(db, Mode.TRANSACTION, 8);
  }

  @AfterAll
  static void stop() {
    if (bouncer != null) {
      bouncer.close();
    }
    if (db != null) {
      db.close();
    }
  }

  private static String state(Db sql, long id) throws Exception {
    return sql.text("SELECT state FROM pgtask.task WHERE id = " + id);
  }

  /**
   * Its worker's task transaction holds it: the statement that takes the row lock also names the
   * task in application_name, which is where pgtask.running finds its backend. "running" alone is
   * also true between claim and start, when cancel ends the task at once (CANCELLED).
   */
  private static boolean heldByItsTransaction(Db sql, long id) throws Exception {
    return sql.text("SELECT backend_pid FROM pgtask.running WHERE task_id = " + id) != null;
  }

  @Test
  void aWorkerWhoseListenGoesThroughATransactionPoolerSaysSoWorksByPollingAndStillCancels() throws Exception {
    PgTask pgtask = PgTask.create(db.dataSource());
    Db sql = new Db(db);
    try (WorkerProcess w = WorkerProcess.startWithUrl(db, bouncer.fullUrl(), "deaf", "--queue", "deaf",
        "--poll-interval", "1s", "--concurrency", "2", "--lease-duration", "90s")) {
      await().atMost(Duration.ofSeconds(60)).until(() -> w.log().contains("receives no notifications"));
      assertThat(w.log()).as("the worker's log").contains("connecting with prepareThreshold=0")
          .contains("--listen-url").doesNotContain("prepared statement \"S_");
      long done = pgtask.enqueue(NewTask.of(DemoHandlers.NOOP, Map.of(), TaskOptions.defaults().withQueue("deaf")));
      await().atMost(Duration.ofSeconds(20)).until(() -> "completed".equals(state(sql, done)));

      long running = pgtask.enqueue(NewTask.of(DemoHandlers.SLEEP, Map.of("ms", 120_000),
          TaskOptions.defaults().withQueue("deaf")));
      await().atMost(Duration.ofSeconds(20)).until(() -> heldByItsTransaction(sql, running));
      assertThat(pgtask.cancel(running)).isEqualTo(CancelResult.CANCEL_REQUESTED);
      // no notification reaches it: read at its next poll (1 s), well before a lease renewal (every 30 s)
      await().atMost(Duration.ofSeconds(7)).until(() -> "cancelled".equals(state(sql, running)));
      assertThat(w.log()).as("one warning").containsOnlyOnce("receives no notifications");
      assertThat(w.terminate(Duration.ofSeconds(40))).isZero();
    }
  }

  @Test
  void theSplitWakesAndCancelsThroughTheDirectListenUrl() throws Exception {
    PgTask pgtask = PgTask.create(db.dataSource());
    Db sql = new Db(db);
    try (WorkerProcess w = WorkerProcess.startWithUrl(db, bouncer.fullUrl(), "split", "--queue", "split",
        "--poll-interval", "5m", "--listen-url", db.fullUrl())) {
      await().atMost(Duration.ofSeconds(60)).until(() -> sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgtask listen %' AND state = 'idle'") >= 1
          && w.log().contains("started"));
      // polls only every 5 minutes: a task that starts at once was woken by its notification
      long done = pgtask.enqueue(NewTask.of(DemoHandlers.NOOP, Map.of(), TaskOptions.defaults().withQueue("split")));
      await().atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(state(sql, done)));

      long running = pgtask.enqueue(NewTask.of(DemoHandlers.SLEEP, Map.of("ms", 120_000),
          TaskOptions.defaults().withQueue("split")));
      await().atMost(Duration.ofSeconds(10)).until(() -> heldByItsTransaction(sql, running));
      assertThat(pgtask.cancel(running)).isEqualTo(CancelResult.CANCEL_REQUESTED);
      await().atMost(Duration.ofSeconds(5)).until(() -> "cancelled".equals(state(sql, running)));
      assertThat(w.log()).doesNotContain("receives no notifications").doesNotContain("prepared statement \"S_");
      assertThat(w.terminate(Duration.ofSeconds(40))).isZero();
    }
  }

  @Test
  void theDemoPassesWithThePoolThroughPgBouncerAndListenDirect() {
    CliRun run = CliRun.of("demo", "--url", bouncer.fullUrl(), "--listen-url", db.fullUrl(),
        "--tasks", "300", "--tenants", "15", "--workers", "2");
    assertThat(run.exitCode()).as("demo exit code; stdout:%n%s%nstderr:%n%s", run.out(), run.err()).isEqualTo(ExitCodes.OK);
    assertThat(run.out())
        .contains("tasks completed:        300 of 300")
        .contains("executed exactly once:  yes (300 executions of 300 tasks; 0 duplicated, 0 missing)")
        .contains("tenant overlaps:        0 ")
        .containsPattern("worker killed:\\s+\\S+ \\(SIGKILL\\), [1-9]\\d* of its tasks rescued")
        .contains("result:                 OK, every invariant held");
  }

  @Test
  void migrateThroughATransactionPoolerAppliesTheSchemaAndExitsZero() throws Exception {
    try (TestDatabase fresh = TestDatabase.create("pgbouncer_migrate", false);
        PgBouncer b = PgBouncer.start(fresh, Mode.TRANSACTION, 2)) {
      CliRun run = CliRun.of("migrate", "--url", b.fullUrl());
      assertThat(run.exitCode()).as("migrate exit code; stderr:%n%s", run.err()).isEqualTo(ExitCodes.OK);
      assertThat(run.out()).contains("pgtask schema at version");
      CliRun again = CliRun.of("migrate", "--url", b.fullUrl());
      assertThat(again.exitCode()).as("a second migrate; stderr:%n%s", again.err()).isEqualTo(ExitCodes.OK);
      assertThat(again.out()).contains("(0 migrations applied)");
      CliRun explicit = CliRun.of("migrate", "--url", b.fullUrl("prepareThreshold=5"));
      assertThat(explicit.exitCode()).as("a URL asking for named statements").isEqualTo(ExitCodes.USAGE);
      assertThat(explicit.err()).contains("transaction pooler").contains("set prepareThreshold=0");
    }
  }

  @Test
  void aWorkerProcessBehindAFullSessionPoolerWarnsAndStopsWithinItsShutdownTimeout() throws Exception {
    PgTask pgtask = PgTask.create(db.dataSource());
    try (PgBouncer session = PgBouncer.start(db, Mode.SESSION, 2);
        WorkerProcess w = WorkerProcess.startWithUrl(db, session.fullUrl(), "full", "--queue", "full",
            "--concurrency", "3", "--shutdown-timeout", "3s", "--listen-url", db.fullUrl())) {
      await().atMost(Duration.ofSeconds(60)).until(() -> w.log().contains("gave only"));
      assertThat(w.log()).contains("of the 4 connections it needs at once (concurrency 3 + 1");
      for (int i = 0; i < 3; i++) {
        pgtask.enqueue(NewTask.of(DemoHandlers.SLEEP, Map.of("ms", 120_000), TaskOptions.defaults().withQueue("full")));
      }
      // whatever waits for a session now (a claim, a task's connection, the registry), SIGTERM ends it in time
      long started = System.nanoTime();
      assertThat(w.terminate(Duration.ofSeconds(90))).as("exit code").isZero();
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      System.out.println("worker behind a full session pooler exited " + took.toMillis() + " ms after SIGTERM");
      // 3 s for running tasks, then at most the 5-s stop allowance (interrupt, abort the connections that
      // still wait for a session, put back, deregister), and 3 s for the JVM to exit
      assertThat(took).as("SIGTERM to exit, with --shutdown-timeout 3s").isLessThan(Duration.ofSeconds(3 + 5 + 3));
    }
  }
}
