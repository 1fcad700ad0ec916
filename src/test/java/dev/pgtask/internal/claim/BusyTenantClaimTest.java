package dev.pgtask.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * No claim spins on a busy tenant: while a tenant has a task running, its other due heads (one in
 * another queue, a failed head whose retry came due) are passed over by the claim before its LIMIT.
 * The worker neither claims again and again nor stops reaching other tenants' due tasks behind
 * them, and the busy tenant's heads run once its task is done.
 */
class BusyTenantClaimTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("busy_tenant", 8);

  @Test
  void aBusyTenantsDueHeadsMakeNoClaimSpinAndOtherTenantsTasksStillRun() throws Exception {
    CountDownLatch longStarted = new CountDownLatch(1);
    CountDownLatch releaseLong = new CountDownLatch(1);
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("busy-1").queues("q1", "q2")
        .concurrency(2).pollInterval(Duration.ofSeconds(5))
        .handler("busy.long", (ctx, p) -> {
          longStarted.countDown();
          releaseLong.await(30, TimeUnit.SECONDS);
        })
        .handler("busy.quick", (ctx, p) -> { })
        .build().start()) {
      long running = queue.pgtask().enqueue(NewTask.of("busy.long", null,
          TaskOptions.defaults().withQueue("q1").withTenant("busy")));
      assertThat(longStarted.await(10, TimeUnit.SECONDS)).as("the busy tenant's long task started").isTrue();

      // the busy tenant's due heads, first in claim order: one in the other queue, and one in the
      // running task's queue that failed earlier and whose retry is due now
      long otherQueueHead = queue.pgtask().enqueue(NewTask.of("busy.quick", null,
          TaskOptions.defaults().withQueue("q2").withTenant("busy").withPriority(-10)));
      long retryDue = queue.pgtask().enqueue(NewTask.of("busy.quick", null,
          TaskOptions.defaults().withQueue("q1").withTenant("busy").withPriority(-10)));
      queue.sql().exec("UPDATE pgtask.task SET state = 'retryable', blocked = false, attempt = 1, "
          + "run_at = now() - interval '1 second' WHERE id = " + retryDue);

      long claimsBefore = worker.stats().claimQueries();
      long t0 = System.nanoTime();
      // the window the claims are counted over, not a wait for a condition
      await().pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> true);
      double seconds = (System.nanoTime() - t0) / 1e9;
      long claims = worker.stats().claimQueries() - claimsBefore;
      System.out.printf("busy tenant: %d claims in %.1f s with the tenant's due heads passed over%n", claims, seconds);
      assertThat(claims).as("claims in %.1f s while a busy tenant has due heads (no spinning)", seconds)
          .isLessThan(50);

      // other tenants' and tenant-less due tasks, behind the busy tenant's heads in claim order
      List<NewTask> others = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        others.add(NewTask.of("busy.quick", null, TaskOptions.defaults().withQueue(i % 2 == 0 ? "q1" : "q2")
            .withTenant("other-" + i)));
        others.add(NewTask.of("busy.quick", null, TaskOptions.defaults().withQueue(i % 2 == 0 ? "q2" : "q1")));
      }
      queue.pgtask().enqueueAll(others);
      long claimsAtEnqueue = worker.stats().claimQueries();
      await("other tenants' and tenant-less tasks complete while the busy tenant runs")
          .atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
              "SELECT count(*) FROM pgtask.task WHERE state = 'completed' AND kind = 'busy.quick' "
                  + "AND (tenant_id IS NULL OR tenant_id <> (SELECT id FROM pgtask.tenant WHERE name = 'busy'))") == 20);
      System.out.printf("busy tenant: %d claims to run 20 other tasks%n", worker.stats().claimQueries() - claimsAtEnqueue);
      assertThat(queue.sql().text("SELECT state FROM pgtask.task WHERE id = " + running))
          .as("the busy tenant's long task, meanwhile").isEqualTo("running");
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'running' AND id IN ("
          + otherQueueHead + ", " + retryDue + ")")).as("the busy tenant's other heads running meanwhile").isZero();

      // once the tenant's task ends, its heads run (woken, not left for the next poll)
      releaseLong.countDown();
      await("the busy tenant's heads complete after its long task").atMost(Duration.ofSeconds(4))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'completed' AND id IN ("
              + otherQueueHead + ", " + retryDue + ")") == 2);
    } finally {
      releaseLong.countDown();
    }
  }
}
