package dev.pgtask.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.Limit;
import dev.pgtask.LimitScope;
import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Weighted fair share between the tenants of a queue (docs/how-it-works.md, "Weights"), with a
 * real worker whose two executors are fewer than the tenants could use: the order of starts is the
 * claim's. Backlogged tenants with weights 3 and 1 start 3:1 whatever the order they were enqueued
 * in; a tenant that was idle comes back at its share, not with the credit of its idle time; tasks
 * without a tenant take the share of one more tenant of weight 1. The process-level proof is
 * {@code scenario.WeightedFairnessIT}.
 */
class WeightsTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("weights", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  /** The tenant of each task as it started ("-" without one), in order of start. */
  private final List<String> starts = Collections.synchronizedList(new ArrayList<>());

  @AfterEach
  void clearLimits() throws Exception {
    workers.closeAll();
    queue.sql().exec("DELETE FROM pgtask.flow_limit");
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  private void enqueue(int n, String tenant) {
    List<NewTask> tasks = new ArrayList<>();
    TaskOptions options = tenant == null ? TaskOptions.defaults() : TaskOptions.defaults().withTenant(tenant);
    for (int i = 0; i < n; i++) {
      tasks.add(NewTask.of("fair.work", null, options));
    }
    queue.pgtask().enqueueAll(tasks);
  }

  private void startWorker() {
    workers.start(workers.builder().workerId("fair").concurrency(2).prefetch(0)
        .handler("fair.work", (ctx, payload) -> {
          starts.add(ctx.tenant() == null ? "-" : ctx.tenant());
          Thread.sleep(3); // the task's simulated work
        }));
  }

  private void awaitStarts(int n) {
    await().atMost(Duration.ofSeconds(60)).until(() -> starts.size() >= n);
  }

  /** The share of {@code tenant} among starts [from, to). */
  private double share(String tenant, int from, int to) {
    List<String> window;
    synchronized (starts) {
      window = new ArrayList<>(starts.subList(from, to));
    }
    return window.stream().filter(tenant::equals).count() / (double) window.size();
  }

  @Test
  void backloggedTenantsWithWeightsThreeAndOneStartThreeToOneWhateverTheirEnqueueOrder() {
    queue.pgtask().limits().set(LimitScope.TENANT, "heavy", Limit.maxRunning(4).withWeight(3));
    queue.pgtask().limits().set(LimitScope.TENANT, "light", Limit.maxRunning(4).withWeight(1));
    enqueue(250, "light"); // first: in (run_at, id) order every one of its tasks would start first
    enqueue(250, "heavy");
    startWorker();
    awaitStarts(240);
    assertThat(share("heavy", 0, 240)).as("heavy's share of the first 240 starts, weights 3:1")
        .isBetween(0.70, 0.80);
  }

  @Test
  void anIdleTenantComesBackAtItsShareWithoutCreditForItsIdleTime() {
    queue.pgtask().limits().set(LimitScope.TENANT, "busy", Limit.maxRunning(4).withWeight(3));
    queue.pgtask().limits().set(LimitScope.TENANT, "idle", Limit.maxRunning(4).withWeight(1));
    enqueue(400, "busy");
    startWorker();
    awaitStarts(150); // busy has run alone for 150 tasks: 50 "rounds" of a 3:1 share
    enqueue(100, "idle");
    int from = starts.size() + 2; // the starts the two executors had already claimed
    awaitStarts(from + 120);
    assertThat(share("idle", from, from + 120)).as("the returning tenant's share of the next 120 starts (weight 1 of 4)")
        .isBetween(0.15, 0.35);
  }

  @Test
  void tasksWithoutATenantShareAWeightedQueueAsOneMoreTenantOfWeightOne() {
    queue.pgtask().limits().set(LimitScope.TENANT, "heavy", Limit.maxRunning(4).withWeight(3));
    enqueue(250, null);
    enqueue(250, "heavy");
    startWorker();
    awaitStarts(240);
    assertThat(share("-", 0, 240)).as("the share of tasks without a tenant, weight 1 against 3")
        .isBetween(0.17, 0.33);
  }

  @Test
  void equalWeightsShareTheStartsEqually() {
    queue.pgtask().limits().set(LimitScope.TENANT, "one", Limit.maxRunning(4).withWeight(2));
    queue.pgtask().limits().set(LimitScope.TENANT, "two", Limit.maxRunning(4).withWeight(2));
    enqueue(250, "one");
    enqueue(250, "two");
    startWorker();
    awaitStarts(240);
    assertThat(share("two", 0, 240)).as("the second-enqueued tenant's share, equal weights").isBetween(0.45, 0.55);
  }
}
