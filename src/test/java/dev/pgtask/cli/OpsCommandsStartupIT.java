package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The read-only operator commands start fast because they do not load the heavy subsystems: run in
 * a child JVM (as {@code bin/pgtask} runs them) with class loading logged, {@code status},
 * {@code locks}, {@code workers} and {@code tasks}, as tables and as JSON, with a live worker
 * holding a task and its tenant lock, load no class of Flyway, HikariCP, jOOQ or Jackson's data
 * binding, and (their options being plain) build no picocli command model. (Their wall time is
 * measured in docs/benchmarks.md, not asserted: a bound that means something would be flaky on a
 * shared machine.)
 */
class OpsCommandsStartupIT {

  private static final List<String> HEAVY = List.of("org.flywaydb.", "com.zaxxer.hikari.", "org.jooq.",
      "com.fasterxml.jackson.databind.");

  private static TestDatabase db;

  @TempDir
  Path dir;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("ops_startup");
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void readOnlyOpsCommandsLoadNoFlywayHikariJooqOrJacksonDatabind() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker worker = PgTaskWorker.builder(db.dataSource()).concurrency(1).workerId("startup-worker")
        .handler("test.hold", (ctx, p) -> {
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
        }).build().start();
    try {
      try (var c = db.connect(); var st = c.createStatement()) {
        // a limit that is full, with a task waiting: status reads and shows pgtask.limits too
        st.execute("SELECT pgtask.set_limit('tenant', 'acme', max_running => 1)");
        st.execute("SELECT pgtask.enqueue('test.hold', '{}', 'default', 'acme')");
        st.execute("SELECT pgtask.enqueue('test.hold', '{}', 'default', 'acme')");
      }
      assertThat(started.await(30, TimeUnit.SECONDS)).as("the task started").isTrue();

      String url = db.fullUrl();
      List<List<String>> commands = List.of(
          List.of("status", "--url", url), List.of("status", "--json", "--url", url),
          List.of("locks", "--url", url), List.of("locks", "--json", "--url", url),
          List.of("workers", "--url", url), List.of("workers", "--json", "--url", url),
          List.of("tasks", "--url", url), List.of("tasks", "--json", "--state", "running", "--url", url),
          // the first task of this fresh database, running: its detail, and its explanation's reads
          List.of("show", "1", "--url", url), List.of("show", "1", "--json", "--url", url));
      Path classLog = dir.resolve("classes.log");
      List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xlog:class+load=info:file=" + classLog, "-cp", System.getProperty("java.class.path"),
          OpsCommandsProbe.class.getName()));
      for (int i = 0; i < commands.size(); i++) {
        cmd.addAll(commands.get(i));
        if (i < commands.size() - 1) {
          cmd.add(";");
        }
      }
      Path out = dir.resolve("out");
      Path err = dir.resolve("err");
      Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the commands finished").isTrue();
      String stdout = Files.readString(out);
      String stderr = Files.readString(err);
      assertThat(stderr.lines().toList()).as("exit codes of %s; stdout: %s", commands, stdout)
          .containsExactlyElementsOf(commands.stream().map(c -> "exit 0").toList());
      // what they showed: the running task, its tenant lock, the worker
      assertThat(stdout).contains("startup-worker").contains("acme").contains("\"holds_tenant_lock\" : true")
          .contains("\"waiting_pids\" : [")
          .contains("limits that are full or have waiting tasks").contains("\"limits\" : [ {");

      List<String> loaded = new ArrayList<>();
      Matcher m = Pattern.compile("\\] (\\S+) source: ").matcher(Files.readString(classLog, StandardCharsets.UTF_8));
      while (m.find()) {
        loaded.add(m.group(1));
      }
      assertThat(loaded).as("classes loaded").contains(StatusCommand.class.getName(), "org.postgresql.Driver");
      assertThat(loaded).as("classes of Flyway, HikariCP, jOOQ or Jackson databind loaded by the read commands")
          .filteredOn(c -> HEAVY.stream().anyMatch(c::startsWith))
          .isEmpty();
      // plain options: parsed without picocli, which would build its model of the command by reflection
      assertThat(loaded).as("picocli's command model built by the read commands")
          .doesNotContain("picocli.CommandLine$Model$CommandSpec");
    } finally {
      release.countDown();
      worker.close();
    }
  }
}
