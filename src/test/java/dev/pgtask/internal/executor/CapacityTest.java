package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link Capacity} is what the producer waits on before it claims: never more claimed tasks than
 * threads plus prefetch, a good-sized claim rather than one task per freed slot, and each task's
 * slot freed once. No database.
 */
class CapacityTest {

  @Test
  void theProducerMayClaimThreadsPlusPrefetchAndNoMore() throws Exception {
    Capacity c = new Capacity(UnitConfigs.config(4, 10, 6, Duration.ofSeconds(1), Duration.ofMinutes(1)));
    assertThat(c.awaitCapacity(100)).isEqualTo(10);
    assertThat(c.awaitCapacity(3)).as("never more than asked").isEqualTo(3);
    for (int i = 0; i < 7; i++) {
      c.taken();
    }
    assertThat(c.awaitCapacity(100)).isEqualTo(3);
    assertThat(c.isIdle()).isFalse();
  }

  @Test
  void aFullWorkerWaitsUntilRoomForAGoodSizedClaimIsFree() throws Exception {
    // 2 threads + prefetch 8: a claim waits for (8 + 1) / 2 = 4 free slots, not one
    Capacity c = new Capacity(UnitConfigs.config(2, 10, 8, Duration.ofSeconds(1), Duration.ofMinutes(1)));
    List<LocalTask> held = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      c.taken();
      held.add(UnitConfigs.task(i, 1));
    }
    CompletableFuture<Integer> claim = CompletableFuture.supplyAsync(() -> {
      try {
        return c.awaitCapacity(100);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    for (int i = 0; i < 3; i++) {
      c.freeSlot(held.get(i));
    }
    // an absence: with three slots free the claim must still wait; bounded, since nothing would wake it later
    assertThat(claimWithin(claim, 300)).as("a claim of 3 when 4 is the good size").isNull();
    c.freeSlot(held.get(3));
    await().atMost(Duration.ofSeconds(10)).until(claim::isDone);
    assertThat(claim.get()).isEqualTo(4);
  }

  @Test
  void withoutPrefetchOneFreeSlotIsEnough() throws Exception {
    Capacity c = new Capacity(UnitConfigs.config(2, 10, 0, Duration.ofSeconds(1), Duration.ofMinutes(1)));
    LocalTask a = UnitConfigs.task(1, 1);
    c.taken();
    c.taken();
    CompletableFuture<Integer> claim = CompletableFuture.supplyAsync(() -> {
      try {
        return c.awaitCapacity(10);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    c.freeSlot(a);
    await().atMost(Duration.ofSeconds(10)).until(claim::isDone);
    assertThat(claim.get()).isEqualTo(1);
  }

  @Test
  void aTasksSlotIsFreedOnceHoweverManyThreadsLetItGo() throws Exception {
    Capacity c = new Capacity(UnitConfigs.config(1, 10, 0, Duration.ofSeconds(1), Duration.ofMinutes(1)));
    LocalTask t = UnitConfigs.task(1, 1);
    c.taken();
    c.taken();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread th = new Thread(() -> c.freeSlot(t));
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    assertThat(c.isIdle()).as("the second task still occupies its slot").isFalse();
    c.freeSlot(UnitConfigs.task(2, 1));
    assertThat(c.isIdle()).isTrue();
    assertThat(c.awaitCapacity(10)).isEqualTo(1);
  }

  private static Integer claimWithin(CompletableFuture<Integer> claim, long millis) throws Exception {
    try {
      return claim.get(millis, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      return null;
    }
  }
}
