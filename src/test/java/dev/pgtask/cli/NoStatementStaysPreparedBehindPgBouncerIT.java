package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskException;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.PgBouncer;
import dev.pgtask.testsupport.PgBouncer.Mode;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * No pgtask statement stays prepared on a server connection of a transaction pooler: pgjdbc names
 * a statement ({@code S_1}, ...) on whichever server session ran it, and the next pgjdbc client
 * served by that session that names its own {@code S_1} fails. A real PgBouncer in transaction mode
 * with a pool of 2 server connections (8 for the demo), LISTEN direct (the documented split); after each scenario
 * every server connection of the pool is visited and must have nothing prepared.
 */
class NoStatementStaysPreparedBehindPgBouncerIT {

  private static final int SERVERS = 2;

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pgbouncer_prepared");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  private static void assertNothingPrepared(PgBouncer b, int servers, String after) throws Exception {
    Map<Integer, List<String>> prepared = b.preparedStatementsOnEveryServer(servers);
    assertThat(prepared).as("statements prepared on PgBouncer's server connections (pid: name: statement) after %s",
        after).hasSize(servers).allSatisfy((pid, statements) -> assertThat(statements).as("server pid %d", pid).isEmpty());
  }

  private static String state(Db sql, long id) throws Exception {
    return sql.text("SELECT state FROM pgtask.task WHERE id = " + id);
  }

  @Test
  void aWorkerProcessItsCompletedFailedAndCancelledTasksAndTheOperatorCommandsLeaveNoStatementPreparedOnAServer()
      throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, SERVERS)) {
      CliRun migrate = CliRun.of("migrate", "--url", b.fullUrl());
      assertThat(migrate.exitCode()).as("migrate; stderr:%n%s", migrate.err()).isZero();
      // checked after each step: a server session whose name meets another client's is closed by
      // PgBouncer (that client's transaction fails), which would hide the step that left it
      assertNothingPrepared(b, SERVERS, "pgtask migrate");
      PgTask pgtask = PgTask.create(db.dataSource());
      Db sql = new Db(db);
      try (WorkerProcess w = WorkerProcess.startWithUrl(db, b.fullUrl(), "prepared", "--queue", "prepared",
          "--concurrency", "2", "--poll-interval", "500ms", "--listen-url", db.fullUrl())) {
        await().atMost(Duration.ofSeconds(60)).until(() -> w.log().contains("started"));
        assertNothingPrepared(b, SERVERS, "a worker's start");
        long[] done = new long[12];
        for (int i = 0; i < done.length; i++) {
          done[i] = pgtask.enqueue(NewTask.of(DemoHandlers.NOOP, Map.of("i", i), TaskOptions.defaults()
              .withQueue("prepared").withTenant(i % 3 == 0 ? "t" + i % 2 : null)));
        }
        long[] failed = new long[6];
        for (int i = 0; i < failed.length; i++) {
          failed[i] = pgtask.enqueue(NewTask.of(DemoHandlers.FAIL, Map.of("i", i),
              TaskOptions.defaults().withQueue("prepared").withMaxAttempts(1)));
        }
        long running = pgtask.enqueue(NewTask.of(DemoHandlers.SLEEP, Map.of("ms", 120_000),
            TaskOptions.defaults().withQueue("prepared")));
        await().atMost(Duration.ofSeconds(30)).until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE queue ="
            + " 'prepared' AND state IN ('completed', 'discarded')") == done.length + failed.length
            && sql.text("SELECT backend_pid FROM pgtask.running WHERE task_id = " + running) != null);
        CliRun cancel = CliRun.of("cancel", "--url", b.fullUrl(), Long.toString(running));
        assertThat(cancel.exitCode()).as("pgtask cancel; stderr:%n%s", cancel.err()).isZero();
        await().atMost(Duration.ofSeconds(10)).until(() -> "cancelled".equals(state(sql, running)));
        assertNothingPrepared(b, SERVERS, "completed, failed and cancelled tasks");
        for (String command : List.of("status", "tasks", "workers", "locks")) {
          CliRun read = CliRun.of(command, "--url", b.fullUrl());
          assertThat(read.exitCode()).as("pgtask %s; stderr:%n%s", command, read.err()).isZero();
          assertNothingPrepared(b, SERVERS, "pgtask " + command);
        }
        assertThat(w.terminate(Duration.ofSeconds(40))).isZero();
        assertThat(w.log()).doesNotContain("prepared statement \"S_");
      }
      assertNothingPrepared(b, SERVERS, "migrate, a worker run, a cancel and the read commands");
    }
  }

  @Test
  void theDemoThroughPgBouncerLeavesNoStatementPreparedOnAServer() throws Exception {
    // the demo's handler opens a second connection inside its task's transaction: one server each
    int servers = 8;
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, servers)) {
      CliRun run = CliRun.of("demo", "--url", b.fullUrl(), "--listen-url", db.fullUrl(),
          "--tasks", "60", "--tenants", "6", "--workers", "2", "--concurrency", "2");
      assertThat(run.exitCode()).as("demo; stdout:%n%s%nstderr:%n%s", run.out(), run.err()).isZero();
      assertNothingPrepared(b, servers, "the demo");
    }
  }

  @Test
  void aWorkerRefusedForNamedStatementsBehindAPoolerLeavesNoStatementPreparedOnAServer() throws Exception {
    HikariConfig config = new HikariConfig();
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, SERVERS)) {
      config.setJdbcUrl(b.fullUrl());
      config.setMaximumPoolSize(3);
      config.setMinimumIdle(0);
      try (HikariDataSource pool = new HikariDataSource(config)) {
        PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(2).listenUrl(db.fullUrl())
            .handler("prepared.noop", (ctx, p) -> { }).build();
        assertThatThrownBy(worker::start).isInstanceOf(PgTaskException.class).hasMessageContaining("prepareThreshold=0");
        worker.close();
      }
      assertNothingPrepared(b, SERVERS, "a worker's start refused");
    }
  }
}
