package dev.pgtask.internal.complete;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.sql.AttemptQueries;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/**
 * The attempt history (pgtask.task_attempt, docs/operations.md "Attempt history"): every failed
 * attempt of a real worker keeps its error's first line and its full text (class, message, stack
 * trace, cause chain), bounded in size with a marker saying it was cut, and a task keeps at most
 * its last {@link AttemptQueries#KEPT_PER_TASK} attempts.
 */
class AttemptHistoryTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("attempt_history", 6);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  private PgTaskWorker worker(String kind, HandlerOptions.Mode mode, dev.pgtask.TaskHandler<JsonNode> handler) {
    return workers.start(workers.builder().concurrency(2)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
        .handler(kind, JsonNode.class, handler, HandlerOptions.defaults().withMode(mode)));
  }

  /** Thrown two levels down, so that the trace has frames of its own and a cause chain. */
  static void failDeep(int attempt) {
    try {
      throw new IOException("disk full on attempt " + attempt);
    } catch (IOException io) {
      throw new IllegalStateException("could not write the report", new UncheckedIOException("writing report", io));
    }
  }

  @ParameterizedTest(name = "{0} mode")
  @EnumSource(HandlerOptions.Mode.class)
  void eachFailedAttemptKeepsItsFullStackTraceWithTheCauseChain(HandlerOptions.Mode mode) throws Exception {
    PgTaskWorker w = worker("hist.fail", mode, (ctx, p) -> failDeep(ctx.attempt()));
    long id = queue.pgtask().enqueue(NewTask.of("hist.fail", Map.of(), TaskOptions.defaults().withMaxAttempts(3)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(20));

    assertThat(queue.sql().rows("SELECT attempt || ' ' || outcome || ' ' || worker FROM pgtask.task_attempt "
        + "WHERE task_id = " + id + " ORDER BY attempt"))
        .as("one history row per attempt, with its outcome and worker")
        .containsExactly("1 failed " + w.workerId(), "2 failed " + w.workerId(), "3 discarded " + w.workerId());
    assertThat(queue.sql().rows("SELECT error FROM pgtask.task_attempt WHERE task_id = " + id + " ORDER BY attempt"))
        .as("each attempt's first line").allSatisfy(e -> assertThat(e)
            .isEqualTo("java.lang.IllegalStateException: could not write the report").doesNotContain("\n"));
    for (int attempt = 1; attempt <= 3; attempt++) {
      String detail = queue.sql().text("SELECT error_detail FROM pgtask.task_attempt WHERE task_id = " + id
          + " AND attempt = " + attempt);
      assertThat(detail).as("attempt %d's full error text", attempt)
          .startsWith("java.lang.IllegalStateException: could not write the report")
          .contains("\tat " + AttemptHistoryTest.class.getName() + ".failDeep(")
          .contains("Caused by: java.io.UncheckedIOException: writing report")
          .contains("Caused by: java.io.IOException: disk full on attempt " + attempt);
    }
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task_attempt WHERE task_id = " + id
        + " AND started_at <= finished_at AND finished_at <= now()"))
        .as("attempts with their start and end on the database clock").isEqualTo(3);
  }

  @Test
  void anErrorTextPastTheBoundIsCutAndSaysSo() throws Exception {
    String huge = "x".repeat(100_000);
    worker("hist.huge", HandlerOptions.Mode.TRANSACTIONAL, (ctx, p) -> {
      throw new IllegalArgumentException(huge);
    });
    long id = queue.pgtask().enqueue(NewTask.of("hist.huge", Map.of(), TaskOptions.defaults().withMaxAttempts(1)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(20));
    String detail = queue.sql().text("SELECT error_detail FROM pgtask.task_attempt WHERE task_id = " + id);
    assertThat(detail.length()).as("stored characters of a 100,000-character error").isLessThanOrEqualTo(ErrorText.MAX_CHARS);
    assertThat(detail).as("the cut text").startsWith("java.lang.IllegalArgumentException: xxx")
        .containsPattern("\\n\\[pgtask: error text truncated: \\d+ of \\d+ characters shown]$");
  }

  @Test
  void aPlainTaskCancelledWhileItRunsHasItsAttemptRecordedAsCancelled() throws Exception {
    java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    PgTaskWorker w = worker("hist.plain", HandlerOptions.Mode.PLAIN, (ctx, p) -> {
      started.countDown();
      release.await(30, java.util.concurrent.TimeUnit.SECONDS);
    });
    try {
      long id = queue.pgtask().enqueue(NewTask.of("hist.plain", Map.of()));
      assertThat(started.await(10, java.util.concurrent.TimeUnit.SECONDS)).as("handler started").isTrue();
      // the worker renews a plain task's lease at once after it starts, in a short UPDATE that locks
      // the row for a moment; cancel_task never waits for a row lock (it leaves a request for the
      // worker then: a CI run met that renewal). After the first renewal the next is a third of the
      // lease away
      long leaseMillis = dev.pgtask.internal.WorkerAccess.config(w).leaseDuration().toMillis();
      org.awaitility.Awaitility.await("the first lease renewal").atMost(Duration.ofSeconds(30))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id
              + " AND lease_until > attempted_at + interval '" + leaseMillis + " milliseconds'") == 1);
      // a plain-mode handler holds no row lock: cancel_task cancels it at once and ends its attempt
      assertThat(queue.pgtask().cancel(id)).isEqualTo(dev.pgtask.CancelResult.CANCELLED);
      assertThat(queue.sql().rows("SELECT attempt || ' ' || outcome || ' ' || worker FROM pgtask.task_attempt WHERE task_id = " + id))
          .containsExactly("1 cancelled " + w.workerId());
    } finally {
      release.countDown();
    }
  }

  @Test
  void aTaskKeepsOnlyItsLast25Attempts() throws Exception {
    worker("hist.many", HandlerOptions.Mode.TRANSACTIONAL, (ctx, p) -> {
      throw new IllegalStateException("attempt " + ctx.attempt());
    });
    long id = queue.pgtask().enqueue(NewTask.of("hist.many", Map.of(), TaskOptions.defaults().withMaxAttempts(30)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(30));
    assertThat(queue.sql().text("SELECT count(*) || ' ' || min(attempt) || '-' || max(attempt) FROM pgtask.task_attempt "
        + "WHERE task_id = " + id)).as("attempts kept of 30, and their range")
        .isEqualTo(AttemptQueries.KEPT_PER_TASK + " 6-30");
  }
}
