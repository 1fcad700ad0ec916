package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The operator commands run in-process against a real database: what they print, what they store,
 * and the exit code of every failure a script must tell apart.
 */
class OpsCommandsTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  private static TestDatabase db;
  private static Db sql;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("ops_commands");
    sql = new Db(db);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @BeforeEach
  void noTasks() throws Exception {
    sql.exec("DELETE FROM pgtask.task");
  }

  private static CliRun cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--url");
    all.add(db.fullUrl());
    return CliRun.of(all.toArray(String[]::new));
  }

  private static long enqueue(String... args) {
    List<String> all = new ArrayList<>(List.of("enqueue"));
    all.addAll(List.of(args));
    CliRun run = cli(all.toArray(String[]::new));
    assertThat(run.exitCode()).as("enqueue exit code; stderr: %s", run.err()).isEqualTo(ExitCodes.OK);
    return Long.parseLong(run.out().strip());
  }

  @Test
  void enqueueWithEveryOptionPrintsOnlyTheIdAndStoresTheTaskWithThoseFields() throws Exception {
    CliRun run = cli("enqueue", "--kind", "invoice.send", "--payload", "{\"invoice\": 42}", "--queue", "mail",
        "--tenant", "acme", "--run-at", "2030-01-31T10:00:00+01:00", "--priority", "3", "--max-attempts", "4",
        "--dedupe-key", "invoice-42");

    assertThat(run.exitCode()).as("stderr: %s", run.err()).isEqualTo(ExitCodes.OK);
    assertThat(run.out()).matches("\\d+\\n");
    assertThat(run.err()).isEmpty();
    long id = Long.parseLong(run.out().strip());
    assertThat(sql.text("SELECT kind || ' ' || queue || ' ' || tenant || ' ' || state || ' ' || priority || ' '"
        + " || max_attempts || ' ' || (run_at = '2030-01-31T09:00:00Z') FROM pgtask.tasks WHERE id = " + id))
        .isEqualTo("invoice.send mail acme scheduled 3 4 true");
    assertThat(sql.text("SELECT payload::text || ' ' || dedupe_key FROM pgtask.task WHERE id = " + id))
        .isEqualTo("{\"invoice\": 42} invoice-42");

    // the dedupe key held by that unfinished task: the same id again
    assertThat(enqueue("--kind", "invoice.send", "--dedupe-key", "invoice-42")).isEqualTo(id);
    CliRun json = cli("enqueue", "--kind", "noop", "--json");
    assertThat(JSON.readTree(json.out()).get("id").asLong()).isGreaterThan(id);
  }

  @Test
  void badInputIsOneLineExitTwoAndStoresNothing() throws Exception {
    String[][] bad = {
        {"enqueue", "--kind", "k", "--payload", "{\"a\": "},
        {"enqueue", "--kind", "k", "--payload", "[1, 2]"},
        {"enqueue", "--kind", "k", "--payload", ""},
        {"enqueue", "--kind", "k", "--run-at", "tomorrow"},
        {"enqueue", "--kind", "k", "--run-at", "2030-01-31T09:00:00"},
        {"enqueue", "--kind", "k", "--queue", "no spaces allowed"},
        {"enqueue", "--kind", "k", "--max-attempts", "0"},
        {"enqueue", "--kind", "k", "--priority", "high"},
        {"enqueue", "--payload", "{}"},
        {"tasks", "--state", "done"},
        {"tasks", "--limit", "0"},
        {"cancel", "not-a-number"},
    };
    for (String[] args : bad) {
      CliRun run = cli(args);
      assertThat(run.exitCode()).as("exit code of %s; stderr: %s", String.join(" ", args), run.err())
          .isEqualTo(ExitCodes.USAGE);
      assertThat(run.errLines()).as("stderr of %s", String.join(" ", args)).hasSize(1);
      assertThat(run.out()).as("stdout of %s", String.join(" ", args)).isEmpty();
    }
    assertThat(sql.count("SELECT count(*) FROM pgtask.task")).as("tasks stored by bad input").isZero();

    assertThat(cli("enqueue", "--kind", "k", "--payload", "{\"a\": ").errLines()[0])
        .isEqualTo("pgtask enqueue: --payload is not valid JSON (line 1, column 7): give a JSON object,"
            + " e.g. --payload '{\"invoice\": 42}'");
    assertThat(cli("tasks", "--state", "done").errLines()[0])
        .contains("'done' is not a task state; use one of pending, scheduled, waiting, available, running, retryable, completed,"
            + " cancelled, discarded");
    assertThat(cli("enqueue", "--kind", "k", "--queue", "no spaces allowed").errLines()[0])
        .isEqualTo("pgtask enqueue: invalid task: queue may contain only letters, digits and _ . : -");
  }

  @Test
  void tasksFiltersByStateQueueAndKindNewestFirstWithALimit() throws Exception {
    long a = enqueue("--kind", "report.build", "--queue", "reports");
    long b = enqueue("--kind", "mail.send", "--queue", "mail");
    long c = enqueue("--kind", "mail.send", "--queue", "mail", "--run-at", "2099-01-01T00:00:00Z");
    long d = enqueue("--kind", "mail.bounce", "--queue", "mail");

    assertThat(ids(cli("tasks", "--json"))).containsExactly(d, c, b, a);
    assertThat(ids(cli("tasks", "--queue", "mail", "--json"))).containsExactly(d, c, b);
    assertThat(ids(cli("tasks", "--kind", "mail.send", "--json"))).containsExactly(c, b);
    assertThat(ids(cli("tasks", "--state", "scheduled", "--json"))).containsExactly(c);
    assertThat(ids(cli("tasks", "--state", "AVAILABLE", "--queue", "mail", "--json"))).containsExactly(d, b);
    assertThat(ids(cli("tasks", "--limit", "2", "--json"))).containsExactly(d, c);

    JsonNode row = JSON.readTree(cli("tasks", "--kind", "report.build", "--json").out()).get(0);
    assertThat(row.get("queue").asText()).isEqualTo("reports");
    assertThat(row.get("state").asText()).isEqualTo("available");
    assertThat(row.get("max_attempts").asInt()).isEqualTo(25);
    assertThat(row.get("run_at").asText()).endsWith("Z");

    CliRun table = cli("tasks", "--queue", "mail");
    assertThat(table.exitCode()).isEqualTo(ExitCodes.OK);
    assertThat(table.out().lines().toList()).hasSize(4);
    assertThat(table.out()).startsWith("ID  KIND").contains("scheduled").contains("0/25");
    assertThat(cli("tasks", "--queue", "nothing-here").out()).isEqualTo("no tasks match\n");
  }

  @Test
  void cancelRetryAndDeleteDoWhatTheySay() throws Exception {
    long id = enqueue("--kind", "k");

    CliRun cancel = cli("cancel", String.valueOf(id));
    assertThat(cancel.exitCode()).as("stderr: %s", cancel.err()).isEqualTo(ExitCodes.OK);
    assertThat(cancel.out()).isEqualTo("task " + id + " cancelled\n");
    assertThat(state(id)).isEqualTo("cancelled");

    CliRun retry = cli("retry", String.valueOf(id), "--json");
    assertThat(retry.exitCode()).as("stderr: %s", retry.err()).isEqualTo(ExitCodes.OK);
    JsonNode r = JSON.readTree(retry.out());
    assertThat(r.get("id").asLong()).isEqualTo(id);
    assertThat(r.get("result").asText()).isEqualTo("retried");
    assertThat(state(id)).isEqualTo("available");

    CliRun delete = cli("delete", String.valueOf(id));
    assertThat(delete.exitCode()).as("stderr: %s", delete.err()).isEqualTo(ExitCodes.OK);
    assertThat(delete.out()).isEqualTo("task " + id + " deleted\n");
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE id = " + id)).isZero();
  }

  @Test
  void statusListsTheLimitsThatAreFullOrHaveWaitingTasksAndItsJsonHasThem() throws Exception {
    sql.exec("SELECT pgtask.set_limit('kind', 'capped.kind', max_running => 1)");  // full: 1 of 1 running
    sql.exec("SELECT pgtask.set_limit('queue', 'capq', max_running => 5)");        // 1 task waiting
    sql.exec("SELECT pgtask.set_limit('kind', 'idle.kind', max_running => 3)");    // neither: not shown
    try {
      long running = enqueue("--kind", "capped.kind", "--queue", "elsewhere");
      sql.exec("UPDATE pgtask.task SET state = 'running', owner = 'gone-worker', attempt = 1, attempted_at = now(),"
          + " lease_until = now() + interval '10 minutes' WHERE id = " + running);
      enqueue("--kind", "k", "--queue", "capq");

      CliRun status = cli("status");
      assertThat(status.exitCode()).as("stderr: %s", status.err()).isEqualTo(ExitCodes.OK);
      assertThat(status.out()).contains("limits that are full or have waiting tasks (pgtask.limits; all of them: pgtask limits)")
          .containsPattern("SCOPE +KEY +MAX_RUNNING +RUNNING +SLOTS_HELD +WAITING +OLDEST_WAITING_SINCE +STUCK")
          .containsPattern("\\Rkind +capped\\.kind +1 +1 +0 +0 +0\\R")
          .containsPattern("\\Rqueue +capq +5 +0 +0 +1 +\\S+ +0\\R")
          .doesNotContain("idle.kind")
          .as("no health line for limits while none is over or stuck").doesNotContain("  limits    ");
      JsonNode limits = JSON.readTree(cli("status", "--json").out()).get("limits");
      assertThat(limits).as("status --json limits").hasSize(2);
      assertThat(limits.get(0).get("scope").asText() + " " + limits.get(0).get("key").asText() + " "
          + limits.get(0).get("running").asInt() + "/" + limits.get(0).get("max_running").asInt())
          .isEqualTo("kind capped.kind 1/1");
      assertThat(limits.get(1).get("key").asText() + " waiting " + limits.get(1).get("waiting").asInt())
          .isEqualTo("capq waiting 1");

      // the running task's worker is gone: its lease runs out, and health says so
      sql.exec("UPDATE pgtask.task SET lease_until = now() - interval '1 minute' WHERE id = " + running);
      assertThat(cli("status").out()).contains("  limits              0 over max_running (slots held above it: see "
          + "pgtask.limits), 1 with running tasks past their lease (a dead worker's, until the rescue pass)");
      assertThat(JSON.readTree(cli("status", "--json").out()).get("health").get("limits_stuck").asInt()).isEqualTo(1);
    } finally {
      for (String l : List.of("'kind', 'capped.kind'", "'queue', 'capq'", "'kind', 'idle.kind'")) {
        sql.exec("SELECT pgtask.clear_limit(" + l + ")");
      }
    }
    assertThat(cli("status").out()).as("without limits, no limits block").doesNotContain("limits that are full");
  }

  @Test
  void limitSetListsAndClearsALimitAndARefusedLimitExitsTwoStoringNothing() throws Exception {
    try {
      CliRun set = cli("limit", "set", "--scope", "kind", "--key", "report.render", "--max-running", "2");
      assertThat(set.exitCode()).as("stderr: %s", set.err()).isEqualTo(ExitCodes.OK);
      assertThat(set.out()).isEqualTo("kind report.render: at most 2 running at once\n");
      assertThat(JSON.readTree(cli("limit", "set", "--scope", "kind", "--key", "report.render", "--max-running", "3",
          "--json").out()).get("result").asText()).isEqualTo("changed");

      CliRun refused = cli("limit", "set", "--scope", "kind", "--key", "report.render", "--max-running", "0");
      assertThat(refused.exitCode()).as("a refused limit").isEqualTo(ExitCodes.USAGE);
      assertThat(refused.errLines()).singleElement().asString()
          .isEqualTo("pgtask limit set: invalid limit: max_running must be between 1 and 1024, not 0");
      assertThat(sql.count("SELECT max_running FROM pgtask.flow_limit WHERE key = 'report.render'"))
          .as("the refused limit stored nothing: the previous one stands").isEqualTo(3);

      CliRun limits = cli("limits");
      assertThat(limits.exitCode()).as("stderr: %s", limits.err()).isEqualTo(ExitCodes.OK);
      assertThat(limits.out()).containsPattern("SCOPE +KEY +MAX_RUNNING +RUNNING +SLOTS_HELD +PER_SECOND +BURST +TOKENS +WEIGHT +WAITING")
          .containsPattern("\\Rkind +report\\.render +3 +0 +0 +0 +0\\R");
      assertThat(JSON.readTree(cli("limits", "--json").out()).get(0).get("max_running").asInt()).isEqualTo(3);

      assertThat(cli("limit", "clear", "--scope", "kind", "--key", "report.render").out())
          .isEqualTo("kind report.render: limit removed\n");
      assertThat(cli("limit", "clear", "--scope", "kind", "--key", "report.render").out())
          .isEqualTo("kind report.render had no limit\n");
      assertThat(cli("limits").out()).startsWith("no limits");
    } finally {
      sql.exec("SELECT pgtask.clear_limit('kind', 'report.render')");
    }
  }

  @Test
  void aMissingTaskExitsFour() {
    for (String op : List.of("cancel", "retry", "delete")) {
      CliRun run = cli(op, "987654321");
      assertThat(run.exitCode()).as("%s of a missing task; stderr: %s", op, run.err()).isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run.errLines()).singleElement().asString().startsWith("pgtask " + op + ": ").contains("987654321")
          .doesNotContain("pgtask: ").doesNotContain("Exception");
    }
  }

  @Test
  void aTaskInTheWrongStateExitsSix() throws Exception {
    long available = enqueue("--kind", "k");
    CliRun retry = cli("retry", String.valueOf(available));
    assertThat(retry.exitCode()).as("retry of an available task; stderr: %s", retry.err()).isEqualTo(ExitCodes.WRONG_STATE);
    assertThat(retry.errLines()).singleElement().asString().contains("it is available");

    long done = enqueue("--kind", "k");
    sql.exec("UPDATE pgtask.task SET state = 'completed', finished_at = now(), attempt = 1 WHERE id = " + done);
    CliRun cancel = cli("cancel", String.valueOf(done));
    assertThat(cancel.exitCode()).as("cancel of a completed task; stderr: %s", cancel.err()).isEqualTo(ExitCodes.WRONG_STATE);
    assertThat(cancel.errLines()).hasSize(1);
  }

  @Test
  void aTaskHeldByAnotherTransactionExitsFiveAtOnce() throws Exception {
    long id = enqueue("--kind", "k");
    try (Connection holder = db.connect(); Statement st = holder.createStatement()) {
      holder.setAutoCommit(false);
      st.execute("SELECT id FROM pgtask.task WHERE id = " + id + " FOR UPDATE");
      for (String op : List.of("cancel", "retry", "delete")) {
        long t0 = System.nanoTime();
        CliRun run = cli(op, String.valueOf(id));
        assertThat(run.exitCode()).as("%s of a locked task; stderr: %s", op, run.err()).isEqualTo(ExitCodes.BUSY);
        assertThat(run.errLines()).hasSize(1);
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).as("seconds %s waited", op).isLessThan(5);
      }
      holder.rollback();
    }
    assertThat(state(id)).isEqualTo("available");
  }

  @Test
  void statusLocksAndWorkersShowARunningWorkerItsTaskAndItsTenantLock() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker worker = PgTaskWorker.builder(db.dataSource()).concurrency(2).workerId("ops-test-worker")
        .handler("test.hold", (ctx, p) -> {
          started.countDown();
          release.await(30, TimeUnit.SECONDS);
        }).build().start();
    try {
      long running = enqueue("--kind", "test.hold", "--tenant", "acme");
      enqueue("--kind", "test.hold", "--tenant", "acme");
      assertThat(started.await(20, TimeUnit.SECONDS)).as("the task started").isTrue();

      // the worker takes the maintenance lease at its first tick, at start
      org.awaitility.Awaitility.await("ops-test-worker leads maintenance").atMost(java.time.Duration.ofSeconds(30))
          .until(() -> cli("status").out().contains("maintenance leader  ops-test-worker (term "));
      CliRun status = cli("status");
      assertThat(status.exitCode()).as("stderr: %s", status.err()).isEqualTo(ExitCodes.OK);
      assertThat(status.out().lines().toList().get(0))
          .isEqualTo("QUEUE    SCHEDULED  AVAILABLE  RUNNING  CLAIMED_AHEAD  RETRYABLE  COMPLETED  CANCELLED  DISCARDED"
              + "  WAITING_FOR_TENANT  PENDING  LAG");
      assertThat(status.out().lines().toList().get(1))
          .matches("default\\s+0\\s+0\\s+1\\s+0\\s+0\\s+0\\s+0\\s+0\\s+1\\s+0\\s+\\S+");
      assertThat(status.out()).contains("health").contains("oldest transaction  pid ").contains("notification queue");
      JsonNode statusJson = JSON.readTree(cli("status", "--json").out());
      assertThat(statusJson.get("queues").get(0).get("running").asInt()).isEqualTo(1);
      assertThat(statusJson.get("queues").get(0).get("lag").isNumber()).isTrue();
      assertThat(statusJson.get("health").get("task_table_bytes").asLong()).isPositive();
      assertThat(statusJson.get("maintenance_leader").get("worker").asText()).isEqualTo("ops-test-worker");

      CliRun locks = cli("locks");
      assertThat(locks.exitCode()).as("stderr: %s", locks.err()).isEqualTo(ExitCodes.OK);
      assertThat(locks.out()).contains("tenant locks\nTENANT  HOLDER_PID  APPLICATION_NAME")
          .containsPattern("acme\\s+\\d+\\s+pgtask task " + running + " ops-test-worker")
          .containsPattern(running + "\\s+test.hold\\s+default\\s+acme\\s+ops-test-worker\\s+\\d+\\s+\\S+\\s+yes\\s+no");
      JsonNode locksJson = JSON.readTree(cli("locks", "--json").out());
      assertThat(locksJson.get("tenant_locks").get(0).get("tenant").asText()).isEqualTo("acme");
      assertThat(locksJson.get("tenant_locks").get(0).get("waiting_pids").isArray()).isTrue();
      assertThat(locksJson.get("running").get(0).get("task_id").asLong()).isEqualTo(running);
      assertThat(locksJson.get("running").get(0).get("holds_tenant_lock").asBoolean()).isTrue();

      CliRun workers = cli("workers");
      assertThat(workers.exitCode()).as("stderr: %s", workers.err()).isEqualTo(ExitCodes.OK);
      assertThat(workers.out()).startsWith("ID  ").containsPattern("ops-test-worker\\s+\\S+\\s+\\d+\\s+\\S+\\s+default\\s+test.hold\\s+2\\s");
      JsonNode workersJson = JSON.readTree(cli("workers", "--json").out());
      assertThat(workersJson.get(0).get("id").asText()).isEqualTo("ops-test-worker");
      assertThat(workersJson.get(0).get("queues").get(0).asText()).isEqualTo("default");

      // a running task: retry and delete refuse at once with "busy"
      CliRun delete = cli("delete", String.valueOf(running));
      assertThat(delete.exitCode()).as("stderr: %s", delete.err()).isEqualTo(ExitCodes.BUSY);
      assertThat(delete.errLines()).singleElement().asString()
          .startsWith("pgtask delete: ").contains("running on worker ops-test-worker");
      assertThat(cli("retry", String.valueOf(running)).exitCode()).isEqualTo(ExitCodes.BUSY);
    } finally {
      release.countDown();
      worker.close();
    }
    assertThat(cli("locks").out()).contains("tenant locks\n  (none held)\n");
    assertThat(cli("workers").out()).isEqualTo("no live workers (none with a heartbeat in the last minute)\n");
  }

  @Test
  void aDatabaseWithoutTheSchemaSaysToMigrate() {
    try (TestDatabase bare = TestDatabase.create("ops_unmigrated", false)) {
      CliRun run = CliRun.of("status", "--url", bare.fullUrl());
      assertThat(run.exitCode()).isEqualTo(ExitCodes.FAILURE);
      assertThat(run.errLines()).singleElement().asString().startsWith("pgtask status: no pgtask schema")
          .contains("run 'pgtask migrate' first");
    }
  }

  @Test
  void anUnreachableServerExitsThree() {
    for (String cmd : List.of("status", "locks", "workers", "tasks")) {
      CliRun run = CliRun.of(cmd, "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x");
      assertThat(run.exitCode()).as(cmd).isEqualTo(ExitCodes.CANNOT_CONNECT);
      assertThat(run.errLines()).singleElement().asString().contains("cannot connect");
    }
    CliRun enqueue = CliRun.of("enqueue", "--kind", "k", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x");
    assertThat(enqueue.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
  }

  @Test
  void theUsageNamesEveryCommandAndTheExitCodes() {
    CliRun help = CliRun.of("--help");
    assertThat(help.out()).contains("demo", "status", "locks", "workers", "tasks", "enqueue", "cancel", "retry",
        "delete", "bench", "4  no such task", "5  the task is running", "6  the task's state");
  }

  private static List<Long> ids(CliRun run) throws Exception {
    assertThat(run.exitCode()).as("stderr: %s", run.err()).isEqualTo(ExitCodes.OK);
    List<Long> ids = new ArrayList<>();
    JSON.readTree(run.out()).forEach(n -> ids.add(n.get("id").asLong()));
    return ids;
  }

  private static String state(long id) throws Exception {
    return sql.text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }
}
