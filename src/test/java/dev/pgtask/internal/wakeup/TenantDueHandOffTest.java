package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The hand-off of a tenant's head on a real worker: when the running head finishes, the tenant's
 * next head is a task that is due, ahead of a task of better priority that is not due yet, and it
 * starts at once, not at the leader's repair pass (set to ten minutes here, so only the hand-off
 * can start it).
 */
class TenantDueHandOffTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("tenant_due_handoff", 6);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @Test
  void whenTheRunningHeadFinishesTheDueTaskStartsAtOnceAheadOfABetterPriorityTaskNotDueYet() throws Exception {
    CountDownLatch aRunning = new CountDownLatch(1);
    CountDownLatch releaseA = new CountDownLatch(1);
    Map<String, Long> startedNanos = new ConcurrentHashMap<>();
    workers.start(workers.builder().concurrency(2)
        .pollInterval(Duration.ofMinutes(10)).rescueInterval(Duration.ofMinutes(10))
        .handler("test.tenant_step", (ctx, payload) -> {
          String name = payload.get("name").asText();
          startedNanos.putIfAbsent(name, System.nanoTime());
          if (name.equals("A")) {
            aRunning.countDown();
            releaseA.await(30, TimeUnit.SECONDS);
          }
        }));
    long a = queue.pgtask().enqueue(NewTask.of("test.tenant_step", Map.of("name", "A"),
        TaskOptions.defaults().withTenant("t")));
    assertThat(aRunning.await(20, TimeUnit.SECONDS)).as("A started").isTrue();
    long b = queue.pgtask().enqueue(NewTask.of("test.tenant_step", Map.of("name", "B"),
        TaskOptions.defaults().withTenant("t").withPriority(3)));
    long c = queue.pgtask().enqueue(NewTask.of("test.tenant_step", Map.of("name", "C"),
        TaskOptions.defaults().withTenant("t").withPriority(0).withDelay(Duration.ofHours(1))));
    assertThat(queue.sql().rows("SELECT state FROM pgtask.tasks WHERE id IN (" + b + ", " + c + ") ORDER BY id"))
        .as("B and C while A runs").containsExactly("waiting", "waiting");

    // the poll and the repair pass run every 10 minutes: only the hand-off can start B this soon
    releaseA.countDown();
    await().atMost(Duration.ofSeconds(5)).until(() -> startedNanos.containsKey("B"));
    await().atMost(Duration.ofSeconds(5)).until(() -> "completed".equals(
        queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + b)));
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + a)).as("A").isEqualTo("completed");
    assertThat(startedNanos).as("tasks started (C is due in an hour)").doesNotContainKey("C");
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + c))
        .as("C after B completed: the tenant's head, scheduled in an hour").isEqualTo("scheduled");
  }
}
