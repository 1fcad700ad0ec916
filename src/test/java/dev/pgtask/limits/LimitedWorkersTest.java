package dev.pgtask.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.Limit;
import dev.pgtask.LimitScope;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Limits hold with real workers in one JVM (the process-level proofs with faults are the
 * scenario ITs): at most N run at once, N is reached, composed limits all hold, nothing spends an
 * attempt waiting for a slot, and the claim passes over a full key instead of spinning on it.
 */
class LimitedWorkersTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("limited_workers", 16);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  private final AtomicInteger running = new AtomicInteger();
  private final AtomicInteger maxRunning = new AtomicInteger();

  @AfterEach
  void clearLimits() throws Exception {
    workers.closeAll();
    queue.sql().exec("DELETE FROM pgtask.flow_limit");
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  /** A handler that counts how many of its tasks run at once, each for {@code millis}. */
  private dev.pgtask.TaskHandler<com.fasterxml.jackson.databind.JsonNode> counting(long millis) {
    return (ctx, payload) -> {
      int now = running.incrementAndGet();
      maxRunning.accumulateAndGet(now, Math::max);
      try {
        Thread.sleep(millis); // the task's simulated work
      } finally {
        running.decrementAndGet();
      }
    };
  }

  private List<Long> enqueue(int n, String kind, TaskOptions options) {
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      tasks.add(NewTask.of(kind, null, options));
    }
    return queue.pgtask().enqueueAll(tasks);
  }

  @Test
  void aTenantLimitedToThreeRunsThreeAtOnceNeverFourAcrossWorkers() throws Exception {
    queue.pgtask().limits().set(LimitScope.TENANT, "acme", Limit.maxRunning(3));
    enqueue(24, "lim.tenant", TaskOptions.defaults().withTenant("acme"));
    for (int w = 0; w < 2; w++) {
      workers.start(workers.builder().workerId("tenant-" + w).concurrency(4).handler("lim.tenant", counting(150)));
    }
    workers.awaitTasks("completed", 24, Duration.ofSeconds(30));
    assertThat(maxRunning.get()).as("most of the tenant's tasks running at once, limit 3").isEqualTo(3);
    assertThat(queue.sql().count("SELECT max(attempt) FROM pgtask.task WHERE kind = 'lim.tenant'"))
        .as("attempts spent: waiting for a slot spends none").isEqualTo(1);
  }

  @Test
  void aKindCapOfTwoHoldsAcrossWorkersForPlainModeKindsToo() throws Exception {
    queue.pgtask().limits().set(LimitScope.KIND, "lim.kind", Limit.maxRunning(2));
    enqueue(20, "lim.kind", TaskOptions.defaults());
    for (int w = 0; w < 3; w++) {
      workers.start(workers.builder().workerId("kind-" + w).concurrency(4)
          .handler("lim.kind", com.fasterxml.jackson.databind.JsonNode.class, counting(100),
              HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)));
    }
    workers.awaitTasks("completed", 20, Duration.ofSeconds(30));
    assertThat(maxRunning.get()).as("most of the kind's tasks running at once, cap 2").isEqualTo(2);
  }

  @Test
  void aKindCapSetWhileAWorkerClaimsWithoutFlowControlHoldsFromItsNextClaim() throws Exception {
    // without any limit set, the worker sends the claim without flow control (ClaimQueries.LimitInput)
    workers.start(workers.builder().workerId("late-cap").concurrency(4)
        .handler("lim.late", com.fasterxml.jackson.databind.JsonNode.class, counting(100),
            HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN)));
    enqueue(8, "lim.late", TaskOptions.defaults());
    workers.awaitTasks("completed", 8, Duration.ofSeconds(30));
    assertThat(maxRunning.get()).as("tasks running at once before the cap").isGreaterThan(1);
    maxRunning.set(0);
    // the cap comes while the worker's last claim saw none: its next claim must honour it, and so
    // run this plain-mode kind in a transaction that holds the cap's slot
    queue.pgtask().limits().set(LimitScope.KIND, "lim.late", Limit.maxRunning(1));
    enqueue(12, "lim.late", TaskOptions.defaults());
    workers.awaitTasks("completed", 20, Duration.ofSeconds(30));
    assertThat(maxRunning.get()).as("most of the kind's tasks running at once after the cap of 1").isEqualTo(1);
  }

  @Test
  void aQueueCapAndTenantLimitsComposeEveryLimitThatAppliesHolds() throws Exception {
    queue.pgtask().limits().set(LimitScope.QUEUE, "capped", Limit.maxRunning(3));
    queue.pgtask().limits().set(LimitScope.TENANT, "big", Limit.maxRunning(2));
    AtomicInteger bigRunning = new AtomicInteger();
    AtomicInteger bigMax = new AtomicInteger();
    enqueue(12, "lim.q", TaskOptions.defaults().withQueue("capped").withTenant("big"));
    enqueue(12, "lim.q", TaskOptions.defaults().withQueue("capped"));
    for (int w = 0; w < 2; w++) {
      workers.start(workers.builder().workerId("queue-" + w).queues("capped").concurrency(4)
          .handler("lim.q", (ctx, p) -> {
            boolean big = "big".equals(ctx.tenant());
            int now = running.incrementAndGet();
            maxRunning.accumulateAndGet(now, Math::max);
            if (big) {
              bigMax.accumulateAndGet(bigRunning.incrementAndGet(), Math::max);
            }
            try {
              Thread.sleep(100); // the task's simulated work
            } finally {
              running.decrementAndGet();
              if (big) {
                bigRunning.decrementAndGet();
              }
            }
          }));
    }
    workers.awaitTasks("completed", 24, Duration.ofSeconds(30));
    assertThat(maxRunning.get()).as("tasks of the capped queue running at once, cap 3").isEqualTo(3);
    assertThat(bigMax.get()).as("tasks of tenant big running at once, limit 2").isEqualTo(2);
  }

  @Test
  void aFullKindIsPassedOverSoOtherTasksRunAndNoClaimSpins() throws Exception {
    queue.pgtask().limits().set(LimitScope.KIND, "lim.slow", Limit.maxRunning(1));
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    PgTaskWorker worker = workers.start(workers.builder().workerId("pass-over").concurrency(4)
        .handler("lim.slow", (ctx, p) -> {
          started.countDown();
          release.await(30, TimeUnit.SECONDS);
        })
        .handler("lim.quick", (ctx, p) -> { }));
    enqueue(200, "lim.slow", TaskOptions.defaults().withPriority(-1));
    assertThat(started.await(10, TimeUnit.SECONDS)).as("the capped kind's first task started").isTrue();
    long claimsBefore = worker.stats().claimQueries();
    enqueue(30, "lim.quick", TaskOptions.defaults());
    workers.awaitTasks("completed", 30, Duration.ofSeconds(10));
    long claims = worker.stats().claimQueries() - claimsBefore;
    assertThat(claims).as("claims to run 30 tasks behind 199 of a full kind (no spinning)").isLessThan(40);
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE kind = 'lim.slow' AND state = 'running'"))
        .as("the capped kind's tasks marked running (none claimed ahead of its cap)").isEqualTo(1);
    release.countDown();
  }
}
