package dev.pgtask.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Micrometer names and tags documented in docs/operations.md, recorded by a real worker. */
class MicrometerMetricsTest {

  @Test
  void aWorkerAndAClientRecordTheDocumentedMetersWithLowCardinalityTags() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    try (TestDatabase db = TestDatabase.create("micrometer")) {
      try (HikariDataSource pool = db.pool(6)) {
        PgTask pgtask = PgTask.builder(pool).metrics(metrics).build();
        List<NewTask> tasks = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          tasks.add(NewTask.of("m.ok", null, TaskOptions.defaults().withTenant("tenant-" + i)));
        }
        pgtask.enqueueAll(tasks);
        pgtask.enqueue(NewTask.of("m.fail", null, TaskOptions.defaults().withMaxAttempts(2)));
        PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(4).metrics(metrics)
            .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(20))
            .handler("m.ok", (ctx, p) -> { })
            .handler("m.fail", (ctx, p) -> {
              throw new IllegalStateException("no");
            })
            .build().start();
        Db sql = new Db(db);
        try {
          await().atMost(Duration.ofSeconds(20)).until(() ->
              sql.count("SELECT count(*) FROM pgtask.tasks WHERE state IN ('completed', 'discarded')") == 21);
          dev.pgtask.internal.WorkerAccess.runtime(worker).maintenance().runNow(dev.pgtask.internal.maintenance.QueueSamplePass.class);
        } finally {
          worker.close();
        }
      }
    }
    assertThat(registry.get("pgtask.tasks.enqueued").tag("queue", "default").counter().count()).isEqualTo(21);
    assertThat(registry.get("pgtask.tasks.claimed").tag("queue", "default").counter().count()).isEqualTo(22);
    assertThat(registry.get("pgtask.tasks.finished").tags("kind", "m.ok", "outcome", "completed").timer().count()).isEqualTo(20);
    assertThat(registry.get("pgtask.tasks.finished").tags("kind", "m.fail", "outcome", "retried").timer().count()).isEqualTo(1);
    assertThat(registry.get("pgtask.tasks.finished").tags("kind", "m.fail", "outcome", "discarded").timer().count()).isEqualTo(1);
    assertThat(registry.get("pgtask.tasks.start.latency").tag("kind", "m.ok").timer().count()).isEqualTo(20);
    assertThat(registry.get("pgtask.queue.available").tag("queue", "default").gauge().value()).isZero();
    assertThat(registry.get("pgtask.queue.lag.seconds").tag("queue", "default").gauge()).isNotNull();
    for (Meter m : registry.getMeters()) {
      assertThat(m.getId().getName()).as("meter names are lower-case and dotted").matches("[a-z.]+");
      assertThat(m.getId().getTags()).as("tags of " + m.getId().getName())
          .allSatisfy(t -> assertThat(t.getKey()).isIn("queue", "kind", "outcome"));
    }
  }
}
