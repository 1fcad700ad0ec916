package dev.pgtask.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.WorkerIdInUseException;
import dev.pgtask.testsupport.QueueDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Worker ids (docs/configuration.md, "workerId"): the default is unique per process start, and
 * registration refuses an id that a live worker holds, so that a second process can never put back
 * or fence out the first one's tasks; an id whose holder is gone is taken over.
 */
class WorkerIdTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("worker_ids", 8);

  /**
   * A container restarted with the same host name runs its JVM as PID 1 again: {@code host:pid}
   * alone would be its dead predecessor's id. Two processes are started here as PID 1 of their own
   * PID namespace (util-linux unshare), on one host.
   */
  @Test
  void twoProcessesStartedWithDefaultIdsAsPid1OnOneHostGetDifferentIds() throws Exception {
    List<String> first = defaultIds(true);
    Assumptions.assumeTrue(first != null, "unshare --pid is not available here");
    List<String> second = defaultIds(true);
    assertThat(first.get(0)).as("pid of the first process").isEqualTo("1");
    assertThat(second.get(0)).as("pid of the second process").isEqualTo("1");
    assertThat(first.get(1)).as("the library's default id of the first process").isNotEqualTo(second.get(1))
        .matches("[^ ]+:1-[0-9a-z]{4}");
    assertThat(first.get(2)).as("the CLI's default id of the first process").isNotEqualTo(second.get(2))
        .isEqualTo(first.get(1));
    assertThat(("pgtask listen " + first.get(1)).length()).as("length of the LISTEN session's name")
        .isLessThanOrEqualTo(63);
  }

  @Test
  void twoProcessesStartedWithDefaultIdsGetDifferentIds() throws Exception {
    List<String> first = defaultIds(false);
    List<String> second = defaultIds(false);
    assertThat(first.get(1)).as("default id of the first process").isNotEqualTo(second.get(1));
  }

  @Test
  void registeringAnIdALiveWorkerHoldsFailsWithWorkerIdInUseAndLeavesItsTasksAlone() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker.Builder b = PgTaskWorker.builder(queue.pool()).workerId("shared-id").concurrency(2)
        .shutdownTimeout(Duration.ofSeconds(5))
        .handler("ids.plain", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
          running.countDown();
          release.await(30, TimeUnit.SECONDS);
        }, HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN));
    try (PgTaskWorker live = b.build().start()) {
      long id = queue.pgtask().enqueue(NewTask.of("ids.plain", null));
      assertThat(running.await(20, TimeUnit.SECONDS)).as("the live worker's plain task started").isTrue();
      String before = queue.sql().text("SELECT state || ' ' || owner || ' ' || attempt FROM pgtask.task WHERE id = " + id);
      String startedAt = queue.sql().text("SELECT started_at::text FROM pgtask.worker WHERE id = 'shared-id'");

      PgTaskWorker second = b.build();
      assertThatThrownBy(second::start).as("starting a second worker with the live worker's id")
          .isInstanceOf(WorkerIdInUseException.class)
          .hasMessageContaining("'shared-id'").hasMessageContaining("alive");
      second.close();

      assertThat(queue.sql().text("SELECT state || ' ' || owner || ' ' || attempt FROM pgtask.task WHERE id = " + id))
          .as("the live worker's task after the refused start and close of the second").isEqualTo(before)
          .isEqualTo("running shared-id 1");
      assertThat(queue.sql().text("SELECT started_at::text FROM pgtask.worker WHERE id = 'shared-id'"))
          .as("the live worker's registry row").isEqualTo(startedAt);
      release.countDown();
      await().atMost(Duration.ofSeconds(20)).until(() -> "completed 1".equals(
          queue.sql().text("SELECT state || ' ' || attempt FROM pgtask.task WHERE id = " + id)));
    } finally {
      release.countDown();
    }
  }

  @Test
  void anIdWhoseHolderIsGoneCanBeReused() throws Exception {
    // a worker killed two minutes ago: its row is left, its heartbeat stale, no session of its own
    queue.sql().exec("INSERT INTO pgtask.worker (id, host, pid, version, queues, kinds, concurrency, started_at, last_seen) "
        + "VALUES ('reused-id', 'gone-host', 1, 'dev', '{default}', '{ids.any}', 1, "
        + "now() - interval '1 hour', now() - interval '2 minutes')");
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("reused-id").concurrency(1)
        .handler("ids.any", (ctx, p) -> { }).build().start()) {
      assertThat(queue.sql().text("SELECT host || ' ' || pid || ' ' || (last_seen > now() - interval '10 seconds') "
          + "FROM pgtask.worker WHERE id = 'reused-id'"))
          .as("the registry row after the new worker started")
          .isEqualTo(dev.pgtask.internal.Hosts.shortHostName() + " " + ProcessHandle.current().pid() + " true");
    }
  }

  /** pid, library default id, CLI default id of a new JVM (as PID 1 of its own PID namespace), or null without unshare. */
  private static List<String> defaultIds(boolean asPid1) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    if (asPid1) {
      cmd.addAll(List.of("unshare", "--pid", "--fork"));
    }
    cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx64m",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), PrintDefaultWorkerId.class.getName()));
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
    } catch (IOException e) {
      if (asPid1) {
        return null;
      }
      throw e;
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the process exited").isTrue();
    if (asPid1 && p.exitValue() != 0 && !out.contains("\n")) {
      return null; // unshare refused (no privilege for a PID namespace)
    }
    assertThat(p.exitValue()).as("exit code (output: %s)", out).isZero();
    return List.of(out.strip().split("\n"));
  }
}
