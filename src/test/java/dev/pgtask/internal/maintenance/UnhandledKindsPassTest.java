package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.sql.MaintenanceQueries.Unhandled;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The unhandled-kinds pass warns about due tasks whose kind no live worker of their queue handles,
 * once per queue and kind within its warn interval (5 minutes), not at every check.
 */
class UnhandledKindsPassTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("unhandled_kinds_pass", 6);

  @Test
  void aQueueAndKindNoLiveWorkerHandlesIsWarnedAboutOnceWithinTheWarnInterval() throws Exception {
    try (PgTaskWorker live = PgTaskWorker.builder(queue.pool()).workerId("uk-live").queues("default").concurrency(1)
        .handler("known", (ctx, p) -> { }).build().start()) {
      await().atMost(Duration.ofSeconds(10))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.workers WHERE id = 'uk-live'") == 1);
      queue.pgtask().enqueue(NewTask.of("unknown", null));
      queue.pgtask().enqueue(NewTask.of("unknown", null));
      Maintenance m = Maintenance.standalone(WorkerAccess.config(live));

      assertThat(m.runNow(UnhandledKindsPass.class)).as("warned at the first check")
          .containsExactly(new Unhandled("default", "unknown", 2));
      assertThat(m.runNow(UnhandledKindsPass.class)).as("warned at the next check, within the warn interval").isEmpty();
    }
  }
}
