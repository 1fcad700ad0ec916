package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tasks a live worker claimed ahead of a free executor (prefetched: state running, no backend yet)
 * are told apart from the tasks of a dead worker (also no backend): {@code pgtask.running},
 * {@code pgtask.queue_summary}, {@code status} and {@code locks}.
 */
class ClaimedAheadTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("claimed_ahead", 8);

  @Test
  void tasksClaimedAheadOfAFreeExecutorShowAsClaimedAheadNotAsRunningAndADeadWorkersTaskDoesNot() throws Exception {
    PgTask pgtask = PgTask.create(queue.pool());
    for (int i = 1; i <= 4; i++) {
      pgtask.enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withTenant("tenant-" + i)));
    }
    // a task whose worker is gone: running, lease held, no live worker, no backend
    long orphan = pgtask.enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withQueue("orphans")
        .withTenant("tenant-orphan")));
    queue.sql().exec("UPDATE pgtask.task SET state = 'running', owner = 'gone-worker', attempt = 1, "
        + "attempted_at = now(), lease_until = now() + interval '10 minutes' WHERE id = " + orphan);

    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(1).prefetch(3).workerId("ahead-1")
        .handler("test.hold", (ctx, p) -> {
          started.countDown();
          release.await(30, TimeUnit.SECONDS);
        }).build().start();
    try {
      assertThat(started.await(10, TimeUnit.SECONDS)).as("the first task started").isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() ->
          queue.sql().count("SELECT count(*) FROM pgtask.running WHERE worker = 'ahead-1'") == 4);

      assertThat(queue.sql().rows("SELECT (backend_pid IS NOT NULL) || ' ' || claimed_ahead FROM pgtask.running "
          + "WHERE worker = 'ahead-1' ORDER BY 1"))
          .as("one task executes on a backend, three wait in their live worker for an executor")
          .containsExactly("false true", "false true", "false true", "true false");
      assertThat(queue.sql().text("SELECT (backend_pid IS NULL) || ' ' || claimed_ahead FROM pgtask.running "
          + "WHERE task_id = " + orphan))
          .as("a dead worker's task has no backend and is not claimed ahead").isEqualTo("true false");
      assertThat(queue.sql().rows("SELECT queue || ' ' || running || ' ' || claimed_ahead FROM pgtask.queue_summary "
          + "ORDER BY queue")).containsExactly("default 4 3", "orphans 1 0");

      CliRun status = CliRun.of("status", "--url", queue.database().fullUrl());
      assertThat(status.exitCode()).as("stderr: %s", status.err()).isEqualTo(ExitCodes.OK);
      assertThat(status.out().lines().toList().get(0)).containsPattern("RUNNING\\s+CLAIMED_AHEAD");
      assertThat(status.out()).as("status: RUNNING counts what executes, CLAIMED_AHEAD what waits in a worker")
          .containsPattern("(?m)^default\\s+0\\s+0\\s+1\\s+3\\s")
          .containsPattern("(?m)^orphans\\s+0\\s+0\\s+1\\s+0\\s");
      JsonNode json = JSON.readTree(CliRun.of("status", "--json", "--url", queue.database().fullUrl()).out());
      assertThat(json.get("queues").get(0).get("claimed_ahead").asLong()).isEqualTo(3);

      CliRun locks = CliRun.of("locks", "--url", queue.database().fullUrl());
      assertThat(locks.exitCode()).as("stderr: %s", locks.err()).isEqualTo(ExitCodes.OK);
      assertThat(locks.out()).contains("CLAIMED_AHEAD")
          .containsPattern("(?m)^\\s*" + orphan + "\\s+test.hold\\s+orphans\\s+tenant-orphan\\s+gone-worker\\s+\\S+\\s+no\\s+no\\s*$");
      assertThat(locks.out().lines().filter(l -> l.matches(".*ahead-1\\s+\\S+\\s+no\\s+yes\\s*")).count())
          .as("locks: three tasks of the live worker without a backend, claimed ahead:\n%s", locks.out()).isEqualTo(3);
    } finally {
      release.countDown();
      worker.close();
    }
  }
}
