package dev.pgtask.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tenant-aware claiming: a deep backlog of one tenant at the head of the queue neither starves
 * other tenants nor makes workers spin.
 */
class TenantFairnessTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("fairness", 16);

  @Test
  void aTenantsBacklogDoesNotStarveOtherTenantsNorMakeWorkersSpin() throws Exception {
    PgTask pgtask = PgTask.create(queue.pool());
    List<NewTask> backlog = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      backlog.add(NewTask.of("test.sleep10", null, TaskOptions.defaults().withTenant("A")));
    }
    pgtask.enqueueAll(backlog);

    List<PgTaskWorker> workers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      workers.add(PgTaskWorker.builder(queue.pool()).workerId("fair-" + i).concurrency(5).pollInterval(Duration.ofSeconds(5))
          .handler("test.sleep10", (ctx, p) -> Thread.sleep(10)) // the task's work
          .build().start());
    }
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE state = 'completed'") >= 20);

      // while only A has work, how often do the workers claim?
      long claimsBefore = claimQueries(workers);
      long t0 = System.nanoTime();
      // the window the claim rate is measured over, not a wait for a condition
      await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> true);
      double seconds = (System.nanoTime() - t0) / 1e9;
      double claimRate = (claimQueries(workers) - claimsBefore) / seconds;
      long aDoneBefore = queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'A' AND state = 'completed'");

      List<NewTask> other = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        other.add(NewTask.of("test.sleep10", null, TaskOptions.defaults().withTenant("B")));
      }
      long start = System.nanoTime();
      pgtask.enqueueAll(other);
      await().atMost(Duration.ofSeconds(10))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'B' AND state = 'completed'") == 100);
      double bSeconds = (System.nanoTime() - start) / 1e9;
      long aDoneAfter = queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'A' AND state = 'completed'");

      long deferred = workers.stream().mapToLong(w -> w.stats().deferred()).sum();
      long completed = workers.stream().mapToLong(w -> w.stats().completed()).sum();
      System.out.printf("fairness: B's 100 tasks done in %.2f s while A completed %d more; claim rate with only A's"
          + " backlog %.1f claims/s (2 workers); tenant-lock bounces %d of %d executed (%.2f%%)%n",
          bSeconds, aDoneAfter - aDoneBefore, claimRate, deferred, completed, 100.0 * deferred / Math.max(1, completed));
      assertThat(aDoneAfter).as("A keeps progressing while B drains").isGreaterThan(aDoneBefore);
      assertThat(deferred).as("tasks bounced on a busy tenant lock").isLessThanOrEqualTo(Math.max(5, completed / 20));
      assertThat(claimRate).as("claims per second while one tenant is blocked (no spinning)").isLessThan(200);
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'A' AND state = 'running'"))
          .as("A's tasks running at once").isLessThanOrEqualTo(1);
    } finally {
      for (PgTaskWorker w : workers) {
        w.close();
      }
    }
    Leaks.assertNoAdvisoryLocks(queue.database());
  }

  private static long claimQueries(List<PgTaskWorker> workers) {
    return workers.stream().mapToLong(w -> w.stats().claimQueries()).sum();
  }
}
