package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code pgtask worker --demo-handlers} as a separate JVM (started from the test classpath, so no jar
 * is needed): it runs demo.record tasks, names its connections, and exits 0 after SIGTERM.
 */
class WorkerCommandIT {

  private static final String OBSERVER = "worker-command-it";

  private TestDatabase db;
  private Process worker;
  private Path log;

  @BeforeEach
  void database() {
    db = TestDatabase.create("worker_command");
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (worker != null && worker.isAlive()) {
      worker.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    db.close();
  }

  @Test
  void runsDemoRecordTasksNamesItsConnectionsAndExitsZeroOnSigterm() throws Exception {
    worker = startWorker("worker", "--url", db.fullUrl(), "--demo-handlers", "--concurrency", "4",
        "--poll-interval", "500ms", "--worker-id", "it-worker");
    await("the worker's startup line").atMost(Duration.ofSeconds(60))
        .until(() -> output().stream().anyMatch(l -> l.contains("worker it-worker started")) || !worker.isAlive());
    assertThat(worker.isAlive()).as("worker alive after start; output:%n%s", String.join("\n", output())).isTrue();

    Set<String> applicationNames = ConcurrentHashMap.newKeySet();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> sampleApplicationNames(applicationNames, sampling), "sampler");
    sampler.start();

    try (Connection c = observer(); Statement st = c.createStatement()) {
      st.execute("SELECT pgtask.enqueue('demo.record', jsonb_build_object('ms', 20), tenant => 'tenant-' || (g % 7))"
          + " FROM generate_series(1, 50) g");
    }

    await("50 demo.record tasks completed").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .until(() -> queryLong("SELECT count(*) FROM pgtask.tasks WHERE kind = 'demo.record' AND state = 'completed'") == 50);

    assertThat(queryLong("SELECT count(*) FROM pgtask_demo.execution")).as("executions recorded").isEqualTo(50);
    assertThat(queryLong("SELECT count(DISTINCT task_id) FROM pgtask_demo.execution")).as("distinct tasks executed")
        .isEqualTo(50);
    assertThat(queryLong("SELECT count(*) FROM pgtask_demo.execution WHERE finished_at IS NULL OR finished_at < started_at"
        + " OR worker <> 'it-worker' OR attempt <> 1 OR tenant IS NULL")).as("malformed execution rows").isZero();

    // the other demo kinds, and demo.record's fail_attempts: attempts 1 and 2 fail and leave no row
    long failTwice = queryLong("SELECT pgtask.enqueue('demo.record', '{\"fail_attempts\": 2}', max_attempts => 5)");
    long noop = queryLong("SELECT pgtask.enqueue('demo.noop')");
    long sleep = queryLong("SELECT pgtask.enqueue('demo.sleep', '{\"ms\": 50}')");
    long fail = queryLong("SELECT pgtask.enqueue('demo.fail', max_attempts => 1)");
    await("the other demo tasks finished").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .until(() -> queryLong("SELECT count(*) FROM pgtask.tasks WHERE id IN (" + failTwice + ", " + noop + ", " + sleep
            + ", " + fail + ") AND state IN ('completed', 'discarded')") == 4);
    assertThat(queryLong("SELECT attempt FROM pgtask.tasks WHERE id = " + failTwice + " AND state = 'completed'"))
        .as("attempt that completed the fail_attempts=2 task").isEqualTo(3);
    assertThat(queryLong("SELECT count(*) FROM pgtask_demo.execution WHERE task_id = " + failTwice + " AND attempt = 3"))
        .as("execution rows of its third attempt").isEqualTo(1);
    assertThat(queryLong("SELECT count(*) FROM pgtask_demo.execution WHERE task_id = " + failTwice))
        .as("execution rows of its failed attempts (rolled back) plus the third").isEqualTo(1);
    assertThat(queryLong("SELECT count(*) FROM pgtask.tasks WHERE id IN (" + noop + ", " + sleep + ") AND state = 'completed'"))
        .as("demo.noop and demo.sleep completed").isEqualTo(2);
    assertThat(queryLong("SELECT count(*) FROM pgtask.tasks WHERE id = " + fail + " AND state = 'discarded'"))
        .as("demo.fail discarded after its only attempt").isEqualTo(1);

    sampling.set(false);
    sampler.join();
    assertThat(applicationNames).as("application_name of the worker's sessions").isNotEmpty()
        .allSatisfy(name -> assertThat(name).startsWith("pgtask"))
        .anySatisfy(name -> assertThat(name).contains("listen"));

    worker.destroy(); // SIGTERM
    assertThat(worker.waitFor(30, TimeUnit.SECONDS)).as("exited within 30 s of SIGTERM").isTrue();
    assertThat(worker.exitValue()).as("exit code after SIGTERM; output:%n%s", String.join("\n", output())).isZero();
    await("the worker's last log line").atMost(Duration.ofSeconds(5))
        .until(() -> output().stream().anyMatch(l -> l.contains("worker it-worker stopped")));
    await("the worker's sessions gone").atMost(Duration.ofSeconds(5))
        .until(() -> queryLong("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            + " AND application_name LIKE 'pgtask%'") == 0);
  }

  @Test
  void demoHaltEndsTheWorkerJvmAtOnceLikeACrash() throws Exception {
    worker = startWorker("worker", "--url", db.fullUrl(), "--demo-handlers", "--poll-interval", "500ms");
    await("the worker's startup line").atMost(Duration.ofSeconds(60))
        .until(() -> output().stream().anyMatch(l -> l.contains("started")) || !worker.isAlive());
    long id = queryLong("SELECT pgtask.enqueue('demo.halt')");
    assertThat(worker.waitFor(30, TimeUnit.SECONDS)).as("worker halted after claiming task %s", id).isTrue();
    assertThat(worker.exitValue()).as("exit code of Runtime.halt(1)").isEqualTo(1);
    assertThat(output()).as("no graceful shutdown").noneMatch(l -> l.contains("stopping"));
  }

  /**
   * Every application_name of the sessions on the test database except the test's own (named
   * {@value #OBSERVER} from their first packet) and the test database's migration pool.
   */
  private void sampleApplicationNames(Set<String> names, AtomicBoolean sampling) {
    try (Connection c = observer(); Statement st = c.createStatement()) {
      while (sampling.get()) {
        try (ResultSet rs = st.executeQuery("SELECT application_name FROM pg_stat_activity"
            + " WHERE datname = current_database() AND backend_type = 'client backend'"
            + " AND application_name NOT IN ('" + OBSERVER + "', 'PostgreSQL JDBC Driver')")) {
          while (rs.next()) {
            names.add(rs.getString(1));
          }
        }
        Thread.sleep(50); // the sampling interval of pg_stat_activity, not a wait for a condition
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** A connection of the test itself, named {@value #OBSERVER} in its startup packet. */
  private Connection observer() throws Exception {
    Properties p = new Properties();
    p.setProperty("user", db.user());
    if (db.password() != null) {
      p.setProperty("password", db.password());
    }
    p.setProperty("ApplicationName", OBSERVER);
    p.setProperty("assumeMinServerVersion", "10"); // send application_name at startup, not with a later SET
    return DriverManager.getConnection(db.url(), p);
  }

  private long queryLong(String sql) throws Exception {
    try (Connection c = observer(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private Process startWorker(String... args) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(Main.class.getName());
    command.addAll(List.of(args));
    Path dir = Path.of("target", "worker-logs");
    Files.createDirectories(dir);
    log = dir.resolve(db.name() + ".log");
    return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  /** The worker's output so far. */
  private List<String> output() {
    try {
      return log == null || !Files.exists(log) ? List.of() : Files.readAllLines(log, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
