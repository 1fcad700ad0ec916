package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskExplanation;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * pgtask.explain_task, PgTask.explain and {@code pgtask explain} name the reason a task is or is not
 * running, one test per branch as docs/operations.md lists them, with real workers where the state
 * needs one. Each test uses its own queues.
 */
class ExplainTaskTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("explain", 12);

  private static TaskExplanation explain(long id) throws Exception {
    TaskExplanation e = queue.pgtask().explain(id);
    // the same sentence, but for a running task's age, which moves between the two calls
    assertThat(ages(queue.sql().text("SELECT pgtask.explain_task(" + id + ")"))).as("SQL and Java sentences of task %s", id)
        .isEqualTo(ages(e.sentence()));
    return e;
  }

  private static String ages(String sentence) {
    return sentence.replaceAll(" for [0-9.]+ s ", " for D ");
  }

  private static long enqueue(String kind, TaskOptions options) {
    return queue.pgtask().enqueue(NewTask.of(kind, null, options));
  }

  private static String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  @Test
  void aMissingTaskIsNotFoundAndTheCliExitsFour() throws Exception {
    TaskExplanation e = explain(987654321);
    assertThat(e.reason()).isEqualTo("not_found");
    assertThat(e.notFound()).isTrue();
    assertThat(e.sentence()).startsWith("task 987654321 does not exist");
    CliRun run = CliRun.of("explain", "987654321", "--url", queue.database().fullUrl());
    assertThat(run.exitCode()).as("exit code for a missing task").isEqualTo(ExitCodes.NOT_FOUND);
    assertThat(run.out().strip()).isEqualTo(e.sentence());
  }

  @Test
  void aDelayedTaskIsScheduledUntilItsRunAtAndTheCliPrintsTheSentenceAndJson() throws Exception {
    long id = enqueue("ex.kind", TaskOptions.defaults().withQueue("ex-sched").withDelay(Duration.ofHours(1)));
    String runAt = queue.sql().text("SELECT pgtask.explain_time(run_at) FROM pgtask.task WHERE id = " + id);
    TaskExplanation e = explain(id);
    assertThat(e.reason()).isEqualTo("scheduled");
    assertThat(e.sentence()).isEqualTo("task " + id + " is scheduled until " + runAt);
    assertThat(e.details().get("state").asText()).isEqualTo("scheduled");

    CliRun text = CliRun.of("explain", Long.toString(id), "--url", queue.database().fullUrl());
    assertThat(text.exitCode()).as("stderr: %s", text.err()).isEqualTo(ExitCodes.OK);
    assertThat(text.out().strip()).isEqualTo(e.sentence());
    JsonNode json = JSON.readTree(CliRun.of("explain", Long.toString(id), "--json", "--url", queue.database().fullUrl()).out());
    assertThat(json.get("reason").asText()).isEqualTo("scheduled");
    assertThat(json.get("sentence").asText()).isEqualTo(e.sentence());
    assertThat(json.get("task_id").asLong()).isEqualTo(id);
    assertThat(json.get("queue").asText()).isEqualTo("ex-sched");
  }

  @Test
  void aDueTaskOfAPausedQueueSaysPausedSinceWhenAndByWhom() throws Exception {
    queue.pgtask().pauseQueue("ex-paused");
    long id = enqueue("ex.kind", TaskOptions.defaults().withQueue("ex-paused"));
    String since = queue.sql().text("SELECT pgtask.explain_time(paused_at) || ', by ' || paused_by FROM pgtask.paused_queue"
        + " WHERE queue = 'ex-paused'");
    TaskExplanation e = explain(id);
    assertThat(e.reason()).isEqualTo("queue_paused");
    assertThat(e.sentence()).startsWith("task " + id + " is due since ")
        .endsWith("but its queue ex-paused is paused (since " + since + "): pgtask.resume_queue('ex-paused') resumes it");
    queue.pgtask().resumeQueue("ex-paused");
    assertThat(explain(id).reason()).as("after the resume, with no worker for the queue").isEqualTo("unserved_queue");
  }

  @Test
  void aDueTaskInAQueueNoLiveWorkerServesIsUnserved() throws Exception {
    long id = enqueue("ex.kind", TaskOptions.defaults().withQueue("ex-nobody"));
    TaskExplanation e = explain(id);
    assertThat(e.reason()).isEqualTo("unserved_queue");
    assertThat(e.sentence()).startsWith("task " + id + " is due since ")
        .endsWith("but no live worker serves its queue ex-nobody (live: seen in the last minute)");
  }

  @Test
  void runningReadyUnhandledAndWaitingBehindItsTenantNameTheWorkerBackendAndHead() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("ex-w1").queues("ex-work").concurrency(1)
        .handler("ex.hold", (ctx, p) -> {
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
        })
        .build().start()) {
      TaskOptions work = TaskOptions.defaults().withQueue("ex-work");
      long running = enqueue("ex.hold", work.withTenant("acme"));
      assertThat(started.await(20, TimeUnit.SECONDS)).as("the held task started").isTrue();
      long behind = enqueue("ex.hold", work.withTenant("acme"));
      long ready = enqueue("ex.hold", work);
      long unhandled = enqueue("ex.unknown", work);
      long elsewhere = enqueue("ex.hold", TaskOptions.defaults().withQueue("ex-elsewhere").withTenant("acme"));
      await("the backend of the running task is visible").atMost(Duration.ofSeconds(10))
          .until(() -> queue.sql().text("SELECT backend_pid FROM pgtask.running WHERE task_id = " + running) != null);
      long pid = queue.sql().count("SELECT backend_pid FROM pgtask.running WHERE task_id = " + running);

      TaskExplanation r = explain(running);
      assertThat(r.reason()).isEqualTo("running");
      assertThat(r.sentence()).matches("task " + running + " is running on worker ex-w1 \\(backend pid " + pid
          + "\\) for [0-9.]+ s \\(attempt 1 of 25\\)");
      assertThat(r.details().get("backend_pid").asLong()).isEqualTo(pid);
      assertThat(r.details().get("worker").asText()).isEqualTo("ex-w1");

      TaskExplanation b = explain(behind);
      assertThat(state(behind)).isEqualTo("waiting");
      assertThat(b.reason()).isEqualTo("waiting_for_tenant");
      assertThat(b.sentence()).startsWith("task " + behind + " is waiting behind task " + running + " of its tenant acme, "
          + "which is running on worker ex-w1 (backend pid " + pid + ") for ");
      assertThat(b.details().get("head_task_id").asLong()).isEqualTo(running);
      assertThat(b.details().get("head_state").asText()).isEqualTo("running");
      assertThat(b.details().get("head_worker").asText()).isEqualTo("ex-w1");

      TaskExplanation o = explain(elsewhere);
      assertThat(state(elsewhere)).as("a head in another queue").isEqualTo("available");
      assertThat(o.reason()).isEqualTo("waiting_for_tenant");
      assertThat(o.sentence()).startsWith("task " + elsewhere + " is waiting behind task " + running
          + " of its tenant acme (in queue ex-work), which is running on worker ex-w1 (backend pid " + pid + ")");

      TaskExplanation d = explain(ready);
      assertThat(d.reason()).isEqualTo("ready");
      assertThat(d.sentence()).startsWith("task " + ready + " is due since ")
          .endsWith("and claimable: 1 live worker of its queue ex-work handles its kind and takes it at the next claim "
              + "(if it stays here, they are busy: see pgtask.running)");

      TaskExplanation u = explain(unhandled);
      assertThat(u.reason()).isEqualTo("unhandled_kind");
      assertThat(u.sentence()).endsWith("but no live worker of its queue ex-work handles its kind ex.unknown");
      release.countDown();
      await().atMost(Duration.ofSeconds(20)).until(() -> "completed".equals(state(ready)));
      queue.sql().exec("DELETE FROM pgtask.task WHERE queue IN ('ex-work', 'ex-elsewhere') AND state <> 'completed'");
    }
  }

  @Test
  void aPlainModeTaskRunsWithoutABackend() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("ex-plain").queues("ex-plain").concurrency(1)
        .handler("ex.plain", JsonNode.class, (ctx, p) -> {
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
        }, HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN))
        .build().start()) {
      long id = enqueue("ex.plain", TaskOptions.defaults().withQueue("ex-plain"));
      assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
      TaskExplanation e = explain(id);
      assertThat(e.reason()).isEqualTo("running");
      assertThat(e.sentence()).matches("task " + id + " is running on worker ex-plain \\(no open transaction: a plain-mode "
          + "task, or claimed and about to start\\) for [0-9.]+ s \\(attempt 1 of 25\\)");
      assertThat(e.details().get("backend_pid").isNull()).isTrue();
      release.countDown();
      await().atMost(Duration.ofSeconds(20)).until(() -> "completed".equals(state(id)));
    }
  }

  @Test
  void failedTasksAreRetryingAtTheirRunAtAfterTheirErrorAndFinishedTasksSayHowAndWhen() throws Exception {
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("ex-w2").queues("ex-retry").concurrency(2)
        .retryBackoff(Duration.ofHours(1), Duration.ofHours(1))
        .handler("ex.fail", (ctx, p) -> {
          throw new IllegalStateException("the payment service said no");
        })
        .handler("ex.quick", (ctx, p) -> { })
        .build().start()) {
      TaskOptions retry = TaskOptions.defaults().withQueue("ex-retry");
      long retrying = enqueue("ex.fail", retry.withMaxAttempts(3));
      long discarded = enqueue("ex.fail", retry.withMaxAttempts(1));
      long completed = enqueue("ex.quick", retry);
      await().atMost(Duration.ofSeconds(20)).until(() -> "retryable".equals(state(retrying))
          && "discarded".equals(state(discarded)) && "completed".equals(state(completed)));

      String runAt = queue.sql().text("SELECT pgtask.explain_time(run_at) FROM pgtask.task WHERE id = " + retrying);
      TaskExplanation r = explain(retrying);
      assertThat(r.reason()).isEqualTo("retrying");
      assertThat(r.sentence()).startsWith("task " + retrying + " is retrying at " + runAt + " after error: ")
          .contains("the payment service said no").endsWith("(attempt 1 of 3)");
      assertThat(r.details().get("last_error").asText()).contains("the payment service said no");

      String finishedAt = queue.sql().text("SELECT pgtask.explain_time(finished_at) FROM pgtask.task WHERE id = " + completed);
      TaskExplanation c = explain(completed);
      assertThat(c.reason()).isEqualTo("finished");
      assertThat(c.sentence()).isEqualTo("task " + completed + " finished as completed at " + finishedAt + " (attempt 1 of 25)");
      TaskExplanation x = explain(discarded);
      assertThat(x.reason()).isEqualTo("finished");
      assertThat(x.sentence()).startsWith("task " + discarded + " finished as discarded at ")
          .contains("(attempt 1 of 1) after error: ").contains("the payment service said no");
    }
  }

  @Test
  void aTaskMarkedRunningByAWorkerThatIsNotLiveWaitsForTheRescuePass() throws Exception {
    // the state a crashed worker leaves: running, owned by a worker no longer registered
    long id = queue.sql().count("INSERT INTO pgtask.task (kind, queue, state, owner, attempt, attempted_at, lease_until)"
        + " VALUES ('ex.kind', 'ex-ghost', 'running', 'ghost-worker', 1, now(), now() + interval '1 minute') RETURNING id");
    String lease = queue.sql().text("SELECT pgtask.explain_time(lease_until) FROM pgtask.task WHERE id = " + id);
    TaskExplanation e = explain(id);
    assertThat(e.reason()).isEqualTo("worker_lost");
    assertThat(e.sentence()).startsWith("task " + id + " was claimed by worker ghost-worker at ")
        .endsWith("which is not live (no longer registered); the rescue pass takes it back once its lease ends at " + lease);
    queue.sql().exec("DELETE FROM pgtask.task WHERE id = " + id);
  }

  @Test
  void aTaskWhoseTenantLockAnotherBackendHoldsNamesThatBackendDueAndDeferred() throws Exception {
    long tenantId = queue.sql().count("SELECT pgtask.tenant_id('locked')");
    long ns = queue.sql().count("SELECT lock_namespace FROM pgtask.settings");
    try (Connection holder = queue.database().connect(); Statement st = holder.createStatement()) {
      holder.setAutoCommit(false);
      st.execute("SET application_name = 'billing-batch'");
      long pid;
      try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid(), pg_advisory_xact_lock(" + ns + ", " + tenantId + ")")) {
        rs.next();
        pid = rs.getLong(1);
      }
      long due = enqueue("ex.lock", TaskOptions.defaults().withQueue("ex-lock").withTenant("locked"));
      TaskExplanation e = explain(due);
      assertThat(e.reason()).as("due, no worker yet").isEqualTo("tenant_lock_held");
      assertThat(e.sentence()).startsWith("task " + due + " is due since ")
          .contains("but its tenant locked's lock is held by backend pid " + pid + " (billing-batch) since ")
          .endsWith("a worker that claims it while the lock is held defers it without spending an attempt");
      assertThat(e.details().get("holder_pid").asLong()).isEqualTo(pid);

      // a worker claims it, finds the lock busy and defers it
      try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("ex-w3").queues("ex-lock").concurrency(1)
          .tenantDeferDelay(Duration.ofMinutes(10))
          .handler("ex.lock", (ctx, p) -> { })
          .build().start()) {
        await("the worker defers the task").atMost(Duration.ofSeconds(20)).until(() -> "scheduled".equals(state(due)));
        TaskExplanation d = explain(due);
        assertThat(d.reason()).isEqualTo("scheduled");
        assertThat(d.sentence()).startsWith("task " + due + " is scheduled until ")
            .endsWith("; its tenant locked's lock is held by backend pid " + pid + " (billing-batch) since "
                + d.sentence().replaceAll(".* since ([^(]*) \\(a claim.*", "$1")
                + " (a claim while it is held defers the task again)");
        assertThat(d.details().get("holder_pid").asLong()).isEqualTo(pid);
        assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + due)).as("attempts spent").isZero();
      }
      holder.rollback();
    }
  }
}
