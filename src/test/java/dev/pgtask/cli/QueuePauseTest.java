package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.InvalidTaskException;
import dev.pgtask.NewTask;
import dev.pgtask.PausedQueue;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.util.PGobject;

/**
 * Pausing a queue, as docs/operations.md promises it: pgtask.pause_queue / resume_queue (and the Java
 * API and CLI on them) are idempotent and reject bad names with nothing stored; the claim itself, on
 * both of its paths, takes nothing from a paused queue; enqueueing into a paused queue works;
 * pgtask.queue_summary, pgtask.paused_queues, pgtask.unrunnable and pgtask.health say it is paused;
 * a running task finishes; an in-JVM worker resumes at once on resume. (Worker processes:
 * QueuePauseIT.)
 */
class QueuePauseTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("pause", 8);

  private String url() {
    return queue.database().fullUrl();
  }

  @Test
  void pauseAndResumeAreIdempotentAndRejectBadNamesWithNothingStored() throws Exception {
    assertThat(queue.sql().text("SELECT pgtask.pause_queue('idem')")).as("first pause").isEqualTo("paused");
    String pausedAt = queue.sql().text("SELECT paused_at FROM pgtask.paused_queue WHERE queue = 'idem'");
    assertThat(queue.sql().text("SELECT pgtask.pause_queue('idem')")).as("second pause").isEqualTo("already_paused");
    assertThat(queue.sql().text("SELECT paused_at FROM pgtask.paused_queue WHERE queue = 'idem'"))
        .as("a second pause keeps the first one's time").isEqualTo(pausedAt);
    assertThat(queue.sql().text("SELECT paused_by = current_user FROM pgtask.paused_queue WHERE queue = 'idem'"))
        .as("paused_by is the role").isEqualTo("t");

    // Java
    assertThat(queue.pgtask().pauseQueue("idem")).as("Java pause of a paused queue").isFalse();
    assertThat(queue.pgtask().pausedQueues()).extracting(PausedQueue::queue).as("paused queues").contains("idem");
    assertThat(queue.pgtask().resumeQueue("idem")).as("Java resume of a paused queue").isTrue();
    assertThat(queue.pgtask().resumeQueue("idem")).as("Java resume of a queue not paused").isFalse();
    assertThat(queue.pgtask().pauseQueue("idem")).as("Java pause of a queue not paused").isTrue();
    assertThat(queue.sql().text("SELECT pgtask.resume_queue('idem') || ' ' || pgtask.resume_queue('idem')"))
        .as("SQL resume, twice").isEqualTo("resumed not_paused");

    // CLI
    CliRun pause = CliRun.of("pause", "cliq", "--url", url());
    assertThat(pause.exitCode()).as("stderr: %s", pause.err()).isEqualTo(ExitCodes.OK);
    assertThat(pause.out()).contains("queue cliq paused");
    JsonNode again = JSON.readTree(CliRun.of("pause", "cliq", "--json", "--url", url()).out());
    assertThat(again.get("result").asText()).as("CLI pause --json of a paused queue").isEqualTo("already_paused");
    assertThat(CliRun.of("resume", "cliq", "--url", url()).out()).contains("queue cliq resumed");
    assertThat(JSON.readTree(CliRun.of("resume", "cliq", "--json", "--url", url()).out()).get("result").asText())
        .isEqualTo("not_paused");

    // bad names: a clear error everywhere, nothing stored
    long before = queue.sql().count("SELECT count(*) FROM pgtask.paused_queue");
    assertThatThrownBy(() -> queue.sql().exec("SELECT pgtask.pause_queue('no spaces')"))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("pgtask: cannot pause queue: queue may contain only letters, digits and _ . : -")
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23514"));
    assertThatThrownBy(() -> queue.sql().exec("SELECT pgtask.resume_queue(NULL)"))
        .hasMessageContaining("pgtask: cannot resume queue: queue must not be empty");
    assertThatThrownBy(() -> queue.pgtask().pauseQueue("x".repeat(129)))
        .isInstanceOf(InvalidTaskException.class)
        .hasMessage("pgtask: cannot pause queue: queue must be at most 128 characters")
        .satisfies(e -> assertThat(((InvalidTaskException) e).constraint()).isEqualTo("task_queue_format"));
    CliRun bad = CliRun.of("pause", "bad/queue", "--url", url());
    assertThat(bad.exitCode()).as("CLI exit code for a bad name").isEqualTo(ExitCodes.USAGE);
    assertThat(bad.err()).contains("cannot pause queue: queue may contain only letters");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.paused_queue")).as("paused queues after bad names")
        .isEqualTo(before);
  }

  @Test
  void theClaimTakesNothingFromAPausedQueueOnBothOfItsPaths() throws Exception {
    long paused = queue.pgtask().enqueue(NewTask.of("claim.kind", null, TaskOptions.defaults().withQueue("cp")));
    long open = queue.pgtask().enqueue(NewTask.of("claim.kind", null, TaskOptions.defaults().withQueue("co")));
    queue.pgtask().pauseQueue("cp");
    List<String> kinds = List.of("claim.kind");
    Duration lease = Duration.ofMinutes(1);

    assertThat(ClaimQueries.claimAvailable(queue.pool(), List.of("cp"), kinds, 10, "w-claim", lease).tasks())
        .as("the plain claim of the paused queue alone").isEmpty();
    ClaimQueries.StartedClaim started = claimAndStart(List.of("cp"));
    assertThat(started.claim().tasks()).as("the claim-and-start of the paused queue alone").isEmpty();
    assertThat(started.transaction()).isNull();
    assertThat(ClaimQueries.claimAvailable(queue.pool(), List.of("cp", "co"), kinds, 10, "w-claim", lease).tasks())
        .as("a claim of a paused and an open queue").extracting(ClaimQueries.Claimed::id).containsExactly(open);
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + paused))
        .as("the paused queue's task").isEqualTo("available");

    queue.pgtask().resumeQueue("cp");
    started = claimAndStart(List.of("co", "cp"));
    try {
      assertThat(started.claim().tasks()).as("the claim-and-start after resume").extracting(ClaimQueries.Claimed::id)
          .containsExactly(paused);
    } finally {
      if (started.transaction() != null) {
        started.transaction().rollback();
        started.transaction().close();
      }
    }
  }

  private ClaimQueries.StartedClaim claimAndStart(List<String> queues) throws SQLException {
    PGobject timeouts = new PGobject();
    timeouts.setType("jsonb");
    timeouts.setValue("{\"claim.kind\": \"60000\"}");
    int ns = (int) queue.sql().count("SELECT lock_namespace FROM pgtask.settings");
    return ClaimQueries.claimAndStart(queue.pool(), queues, List.of("claim.kind"), List.of(), 10, "w-start",
        Duration.ofMinutes(1), timeouts, ns, false);
  }

  @Test
  void enqueueIntoAPausedQueueWorksAndTheViewsSayItIsPaused() throws Exception {
    queue.pgtask().pauseQueue("views");
    queue.pgtask().pauseQueue("empty");
    TaskOptions acme = TaskOptions.defaults().withQueue("views").withTenant("acme");
    long head = queue.pgtask().enqueue(NewTask.of("view.kind", null, acme));
    queue.pgtask().enqueue(NewTask.of("view.kind", null, acme));
    queue.sql().exec("SELECT pgtask.enqueue('view.kind', '{}', 'views')");
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + head)).as("enqueued into a paused queue")
        .isEqualTo("available");

    assertThat(queue.sql().rows("SELECT queue, paused, available, waiting_for_tenant FROM pgtask.queue_summary"
        + " WHERE queue = 'views'")).as("queue_summary").containsExactly("views\tt\t2\t1");
    assertThat(queue.sql().rows("SELECT queue, paused_by = current_user, due, queued FROM pgtask.paused_queues"
        + " WHERE queue IN ('views', 'empty') ORDER BY queue"))
        .as("paused_queues, with and without tasks").containsExactly("empty\tt\t0\t0", "views\tt\t2\t3");
    // no worker serves 'views', but the views say it is paused, not unserved
    assertThat(queue.sql().rows("SELECT reason, tasks, waiting_behind FROM pgtask.unrunnable WHERE queue = 'views'"))
        .as("unrunnable").containsExactly("paused_queue\t2\t1");
    assertThat(queue.sql().text("SELECT unserved_tasks = 0 AND tenants_stuck = 0 AND paused_tasks >= 2 FROM pgtask.health"))
        .as("health: paused tasks are counted apart from unserved ones").isEqualTo("t");
    CliRun status = CliRun.of("status", "--url", url());
    assertThat(status.out()).as("pgtask status").contains("paused queues: no worker claims their tasks")
        .containsPattern("views +\\S+ +\\S+ +2 +3");
    JsonNode json = JSON.readTree(CliRun.of("status", "--json", "--url", url()).out());
    assertThat(json.get("paused_queues").findValuesAsText("queue")).contains("views", "empty");
    queue.pgtask().resumeQueue("empty");
  }

  @Test
  void aRunningTaskFinishesAfterThePauseAndAWorkerResumesAtOnce() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("pauser").queues("run").concurrency(2)
        .pollInterval(Duration.ofMinutes(10)) // only a wake-up can make it claim promptly
        .handler("run.hold", (ctx, p) -> {
          started.countDown();
          release.await(30, TimeUnit.SECONDS);
        })
        .handler("run.quick", (ctx, p) -> { })
        .build().start()) {
      long running = queue.pgtask().enqueue(NewTask.of("run.hold", null, TaskOptions.defaults().withQueue("run")));
      assertThat(started.await(20, TimeUnit.SECONDS)).as("the long task started").isTrue();
      queue.pgtask().pauseQueue("run");
      long quick = queue.pgtask().enqueue(NewTask.of("run.quick", null, TaskOptions.defaults().withQueue("run")));
      release.countDown();
      await("the task running at the pause completes").atMost(Duration.ofSeconds(20))
          .until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + running)));
      // its completion frees a slot and the enqueue woke the worker: still nothing is claimed
      await("the queued task stays unclaimed while paused").during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5))
          .until(() -> "available".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + quick)));

      // in this JVM, resume wakes the worker directly as well as through its NOTIFY
      String resumedAt = queue.sql().text("SELECT clock_timestamp()");
      queue.pgtask().resumeQueue("run");
      await("the task completes after resume").atMost(Duration.ofSeconds(5))
          .until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + quick)));
      assertThat(queue.sql().text("SELECT attempted_at - '" + resumedAt + "'::timestamptz < interval '1 second'"
          + " FROM pgtask.task WHERE id = " + quick))
          .as("claimed within 1 s of the resume (database clock), poll interval 10 min").isEqualTo("t");
    }
  }
}
