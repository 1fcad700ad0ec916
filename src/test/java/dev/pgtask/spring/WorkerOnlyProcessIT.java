package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.PgTask;
import dev.pgtask.spring.workeronly.WorkerOnlyApplication;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A worker-only Spring Boot application in its own JVM: it stays alive after its main returns and
 * runs tasks; on SIGTERM (what Kubernetes sends) it stops within pgtask.worker.shutdown-timeout plus
 * Spring's own shutdown, releasing the task that was still running.
 */
class WorkerOnlyProcessIT {

  @Test
  void aWorkerOnlyApplicationStaysAliveAndStopsPromptlyOnSigterm() throws Exception {
    try (TestDatabase db = TestDatabase.create("spring_workeronly")) {
      Db sql = new Db(db);
      sql.exec("CREATE TABLE written (label text)");
      List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
          WorkerOnlyApplication.class.getName()));
      for (String p : SpringApps.datasource(db)) {
        cmd.add("--" + p);
      }
      cmd.add("--pgtask.worker.shutdown-timeout=3s");
      cmd.add("--spring.main.banner-mode=off");
      Path dir = Path.of("target", "worker-logs");
      Files.createDirectories(dir);
      Path log = dir.resolve(db.name() + "-spring-" + System.nanoTime() + ".log");
      Process process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      try {
        await().atMost(Duration.ofSeconds(240)).until(() -> Files.readString(log).contains("main returned"));
        await().atMost(Duration.ofSeconds(30)).until(() -> sql.count("SELECT count(*) FROM pgtask.workers") == 1);
        PgTask pgTask = PgTask.create(db.dataSource());
        pgTask.enqueue(new WorkerOnlyApplication.Write("after main returned"));
        await().atMost(Duration.ofSeconds(30)).until(() ->
            sql.count("SELECT count(*) FROM written WHERE label = 'after main returned'") == 1);
        assertThat(process.isAlive()).isTrue();

        long slow = pgTask.enqueue(new WorkerOnlyApplication.Slow(1));
        await().atMost(Duration.ofSeconds(60)).until(() -> Files.readString(log).contains("slow handler started"));
        long started = System.nanoTime();
        process.destroy(); // SIGTERM
        assertThat(process.waitFor(25, TimeUnit.SECONDS)).as("exited within 25 s of SIGTERM (3 s for the task, then release and Spring's own shutdown)").isTrue();
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        System.out.println("worker-only application stopped " + tookMillis + " ms after SIGTERM");
        assertThat(tookMillis).as("the running task got its 3 s to finish").isGreaterThanOrEqualTo(2_900);
        assertThat(sql.text("SELECT state::text FROM pgtask.task WHERE id = " + slow)).isEqualTo("available");
        assertThat(sql.count("SELECT count(*) FROM pgtask.workers")).isZero();
      } catch (AssertionError | RuntimeException e) {
        System.out.println(Files.readString(log));
        throw e;
      } finally {
        process.destroyForcibly();
      }
    }
  }
}
