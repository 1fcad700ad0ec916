package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code pgtask demo} in-process with small numbers: it starts real worker JVMs, kills one, and its
 * report proves exactly-once execution and tenant exclusion, from the execution table.
 */
class DemoCommandIT {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("demo_command");
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void theDemoKillsAWorkerAndReportsExactlyOnceNoTenantOverlapAndTheRescue() throws Exception {
    Db sql = new Db(db);
    // something of the user's in the same database, which the demo must not touch
    sql.exec("SELECT pgtask.enqueue('user.kind', queue => 'users-queue')");

    CliRun run = CliRun.of("demo", "--url", db.fullUrl(), "--tasks", "400", "--tenants", "20", "--workers", "2",
        "--keep");

    assertThat(run.exitCode()).as("demo exit code; stdout:%n%s%nstderr:%n%s", run.out(), run.err()).isEqualTo(ExitCodes.OK);
    String out = run.out();
    assertThat(out).contains("pgtask demo report")
        .contains("tasks completed:        400 of 400")
        .contains("executed exactly once:  yes (400 executions of 400 tasks; 0 duplicated, 0 missing)")
        .contains("tenant overlaps:        0 ")
        .contains("result:                 OK, every invariant held")
        .contains("pgtask.tenant_locks right now")
        .containsPattern("SIGKILL worker demo-\\d+-w\\d \\(pid \\d+\\) while it holds [1-9]\\d* tasks?,");
    Matcher rescued = Pattern.compile("worker killed:\\s+(\\S+) \\(SIGKILL\\), (\\d+) of its tasks rescued").matcher(out);
    assertThat(rescued.find()).as("the worker-killed line in:%n%s", out).isTrue();
    assertThat(Integer.parseInt(rescued.group(2))).as("tasks rescued from the killed worker").isPositive();
    assertThat(out).containsPattern("longest rescue time:\\s+\\d");
    assertThat(run.err()).as("progress lines on stderr").contains("done ").contains("/s");

    // with --keep the demo's rows are there to inspect; nothing of the user's was touched; no worker left behind
    assertThat(out).contains("kept for inspection (--keep): the demo's tasks (queue pgtask-demo)")
        .contains("left in jdbc:postgresql://").contains("the pgtask schema the demo created or upgraded");
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE queue = 'pgtask-demo' AND state = 'completed'")).isEqualTo(400);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE queue = 'users-queue'")).isEqualTo(1);
    // the stopped workers deregistered; the killed one could not, and the demo removed its row
    assertThat(sql.rows("SELECT id FROM pgtask.worker")).as("workers registered after the demo").isEmpty();
    List<ProcessHandle> leftovers = ProcessHandle.current().children()
        .filter(p -> p.isAlive() && p.info().commandLine().orElse("").contains("--demo-handlers")).toList();
    assertThat(leftovers).as("worker processes still alive").isEmpty();

    // a second run starts from a clean slate: only its own tasks and executions count
    CliRun again = CliRun.of("demo", "--url", db.fullUrl(), "--tasks", "60", "--tenants", "5", "--workers", "2");
    assertThat(again.exitCode()).as("second demo; stdout:%n%s%nstderr:%n%s", again.out(), again.err()).isEqualTo(ExitCodes.OK);
    assertThat(again.out()).contains("executed exactly once:  yes (60 executions of 60 tasks");
    // without --keep it deletes its tasks and executions at the end, and says so; the user's task stays
    assertThat(again.out()).contains("deleted the demo's 60 tasks (queue pgtask-demo) and its execution records");
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE queue = 'pgtask-demo'")).as("demo tasks left").isZero();
    assertThat(sql.count("SELECT count(*) FROM pgtask_demo.execution")).as("demo executions left").isZero();
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE queue = 'users-queue'")).isEqualTo(1);
  }

  @Test
  void theDemoStartsItsWorkersWithNoPasswordOnTheirCommandLines() throws Exception {
    // the server trusts local connections; a password is sent all the same, so one is made up
    String password = db.password() != null ? db.password() : "Demo-Secret-4711";
    String withPasswordInUrl = db.url() + (db.url().contains("?") ? "&" : "?") + "user=" + db.user()
        + "&password=" + password;
    ConnectionSettings inUrl = ConnectionSettings.resolve(withPasswordInUrl, Map.of(), db.user());
    ConnectionSettings apart = ConnectionSettings.resolve(db.url(), Map.of("PGPASSWORD", password), db.user());
    assertThat(apart.password()).isEqualTo(password);

    List<DemoWorker> workers = new ArrayList<>();
    try {
      workers.add(DemoWorker.start("secret-url-w", inUrl, 1));
      workers.add(DemoWorker.start("secret-env-w", apart, 1));
      for (DemoWorker w : workers) {
        String cmdline = Files.readString(Path.of("/proc", String.valueOf(w.process.pid()), "cmdline"))
            .replace('\0', ' ');
        assertThat(cmdline).as("/proc/<pid>/cmdline of worker %s", w.id).contains("--worker-id " + w.id)
            .doesNotContain(password).doesNotContain("--url");
        assertThat(String.join(" ", w.process.info().arguments().orElse(new String[0])))
            .as("arguments of worker %s", w.id).doesNotContain(password);
        // it is in the environment, readable by its own user only
        assertThat(Files.readString(Path.of("/proc", String.valueOf(w.process.pid()), "environ")))
            .as("environment of worker %s", w.id).contains("PGTASK_URL=" + db.url());
      }
      // and the workers found the database that way: they registered in it
      Db sql = new Db(db);
      await("both workers registered").atMost(Duration.ofSeconds(90))
          .until(() -> sql.rows("SELECT id FROM pgtask.workers").containsAll(List.of("secret-url-w", "secret-env-w"))
              || workers.stream().anyMatch(w -> !w.process.isAlive()));
      assertThat(workers).as("workers alive; last log lines: %s",
          workers.stream().map(DemoWorker::lastLogLine).toList())
          .allMatch(w -> w.process.isAlive());
      for (DemoWorker w : workers) {
        w.process.destroy();
        assertThat(w.process.waitFor(30, TimeUnit.SECONDS)).as("worker %s stopped on SIGTERM", w.id).isTrue();
        assertThat(Files.readString(w.log)).as("log of worker %s", w.id).doesNotContain(password);
      }
    } finally {
      for (DemoWorker w : workers) {
        w.process.destroyForcibly();
        Files.deleteIfExists(w.log);
      }
    }
  }

  @Test
  void onAnEmbeddedServerTheDemoPassesAndStopsTheServerAfterwards() throws Exception {
    CliRun run = CliRun.of("demo", "--embedded", "--tasks", "200", "--tenants", "10", "--workers", "2");
    assertThat(run.exitCode()).as("demo exit code; stdout:%n%s%nstderr:%n%s", run.out(), run.err()).isEqualTo(ExitCodes.OK);
    Matcher line = Pattern.compile("pgtask demo: --embedded: started embedded PostgreSQL \\S+ on 127\\.0\\.0\\.1:(\\d+) "
        + "\\(data in (\\S+?)[,)].*; stopped and deleted when the demo ends").matcher(run.out());
    assertThat(line.find()).as("the one line about the embedded server in:%n%s", run.out()).isTrue();
    assertThat(run.out()).contains("pgtask demo on jdbc:postgresql://127.0.0.1:" + line.group(1) + "/postgres")
        .contains("executed exactly once:  yes (200 executions of 200 tasks; 0 duplicated, 0 missing)")
        .contains("result:                 OK, every invariant held");
    assertThat(Files.exists(Path.of(line.group(2)))).as("scratch directory %s deleted", line.group(2)).isFalse();
    List<ProcessHandle> leftovers = ProcessHandle.allProcesses()
        .filter(p -> p.isAlive() && p.info().commandLine().orElse("").contains(line.group(2))).toList();
    assertThat(leftovers).as("server processes of the embedded data directory still alive").isEmpty();
  }

  @Test
  void withNoServerItSaysInOneLineHowToPointItAtOne() {
    CliRun run = CliRun.of("demo", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.errLines()).singleElement().asString()
        .startsWith("pgtask demo: cannot connect to jdbc:postgresql://127.0.0.1:1/nowhere")
        .contains("set --url, PGTASK_URL or PGHOST/PGPORT/PGUSER/PGDATABASE")
        .endsWith("or run the demo on an embedded PostgreSQL it starts and deletes: pgtask demo --embedded");
  }

  @Test
  void oneWorkerIsAUsageError() {
    CliRun run = CliRun.of("demo", "--url", db.fullUrl(), "--workers", "1");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("--workers must be between 2 and 32");
  }
}
