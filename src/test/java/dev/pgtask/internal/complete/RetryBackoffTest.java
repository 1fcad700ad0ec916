package dev.pgtask.internal.complete;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A retry's backoff counts from the moment the failure is written, on the database clock: not from
 * the start of the task's transaction, which may be long before (a handler that ran 1.5 s and then
 * failed with a 1 s backoff was due again before it had even failed).
 */
class RetryBackoffTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("retry_backoff", 4);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @Test
  void aRetrysBackoffCountsFromTheFailureNotFromTheTransactionsStart() throws Exception {
    try (PgTaskWorker worker = workers.builder().concurrency(1)
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1))
        .handler("backoff.slow-failure", JsonNode.class, (ctx, p) -> {
          try (var st = ctx.connection().createStatement()) {
            st.execute("SELECT pg_sleep(1.5)"); // inside the task's transaction: now() stays at its start
          }
          throw new IllegalStateException("fails after 1.5 s");
        }).build().start()) {
      long id = queue.pgtask().enqueue(NewTask.of("backoff.slow-failure", Map.of()));
      await("the first failure recorded").atMost(Duration.ofSeconds(30))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND errors IS NOT NULL") == 1);
      // the backoff is 1 s with ±10% jitter: run_at at least 0.9 s after the failure was written
      double dueAfterFailure = queue.sql().doubles("SELECT extract(epoch FROM run_at - (errors -> -1 ->> 'at')::timestamptz) "
          + "FROM pgtask.task WHERE id = " + id).get(0);
      assertThat(dueAfterFailure).as("seconds from the failure's write to the retry's run_at").isGreaterThan(0.85);
    }
  }
}
