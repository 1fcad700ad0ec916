package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.TestDatabase;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
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

  private TestDatabase db;
  private Process worker;
  private final List<String> output = new CopyOnWriteArrayList<>();

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
        .until(() -> output.stream().anyMatch(l -> l.contains("worker it-worker started")) || !worker.isAlive());
    assertThat(worker.isAlive()).as("worker alive after start; output:%n%s", String.join("\n", output)).isTrue();

    Set<String> applicationNames = ConcurrentHashMap.newKeySet();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> sampleApplicationNames(applicationNames, sampling), "sampler");
    sampler.start();

    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("SELECT pgtask.enqueue('demo.record', jsonb_build_object('ms', 20), tenant => 'tenant-' || (g % 7))"
          + " FROM generate_series(1, 50) g");
    }

    await("50 demo.record tasks completed").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .until(() -> count("SELECT count(*) FROM pgtask.tasks WHERE kind = 'demo.record' AND state = 'completed'") == 50);

    assertThat(count("SELECT count(*) FROM pgtask_demo.execution")).as("executions recorded").isEqualTo(50);
    assertThat(count("SELECT count(DISTINCT task_id) FROM pgtask_demo.execution")).as("distinct tasks executed")
        .isEqualTo(50);
    assertThat(count("SELECT count(*) FROM pgtask_demo.execution WHERE finished_at IS NULL OR finished_at < started_at"
        + " OR worker <> 'it-worker' OR attempt <> 1 OR tenant IS NULL")).as("malformed execution rows").isZero();

    sampling.set(false);
    sampler.join();
    assertThat(applicationNames).as("application_name of the worker's sessions").isNotEmpty()
        .allSatisfy(name -> assertThat(name).startsWith("pgtask"))
        .anySatisfy(name -> assertThat(name).contains("listen"));

    worker.destroy(); // SIGTERM
    assertThat(worker.waitFor(30, TimeUnit.SECONDS)).as("exited within 30 s of SIGTERM").isTrue();
    assertThat(worker.exitValue()).as("exit code after SIGTERM; output:%n%s", String.join("\n", output)).isZero();
    assertThat(output).anyMatch(l -> l.contains("worker it-worker stopped"));
    await("the worker's sessions gone").atMost(Duration.ofSeconds(5))
        .until(() -> count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            + " AND application_name LIKE 'pgtask%'") == 0);
  }

  /** Every application_name of the other sessions on the test database, except the test's own. */
  private void sampleApplicationNames(Set<String> names, AtomicBoolean sampling) {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      while (sampling.get()) {
        try (ResultSet rs = st.executeQuery("SELECT application_name FROM pg_stat_activity"
            + " WHERE datname = current_database() AND backend_type = 'client backend'"
            + " AND pid <> pg_backend_pid() AND application_name <> 'PostgreSQL JDBC Driver'")) {
          while (rs.next()) {
            names.add(rs.getString(1));
          }
        }
        Thread.sleep(50);
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private long count(String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
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
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          output.add(line);
          System.out.println("[worker] " + line);
        }
      } catch (Exception ignored) {
        // the process ended
      }
    }, "worker-output");
    reader.setDaemon(true);
    reader.start();
    return p;
  }
}
