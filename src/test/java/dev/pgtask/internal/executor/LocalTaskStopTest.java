package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

/**
 * The stop races of one claimed task, without a database: cancellation, timeout, shutdown and
 * loss may be requested from any thread at any time, and the first one wins.
 */
class LocalTaskStopTest {

  @RepeatedTest(20)
  void ofStopRequestsRacingFromManyThreadsExactlyOneWins() throws Exception {
    LocalTask t = UnitConfigs.task(1, 1);
    LocalTask.Stop[] reasons = {LocalTask.Stop.CANCELLED, LocalTask.Stop.TIMED_OUT, LocalTask.Stop.SHUTDOWN, LocalTask.Stop.LOST};
    CyclicBarrier start = new CyclicBarrier(reasons.length * 2);
    AtomicInteger won = new AtomicInteger();
    List<LocalTask.Stop> winners = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < reasons.length * 2; i++) {
      LocalTask.Stop reason = reasons[i % reasons.length];
      Thread th = new Thread(() -> {
        try {
          start.await();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        if (t.requestStop(reason)) {
          won.incrementAndGet();
          winners.add(reason);
        }
      });
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    assertThat(won.get()).isEqualTo(1);
    assertThat(t.stopReason()).isEqualTo(winners.get(0));
  }

  @Test
  void aStopRequestedBeforeTheTaskRunsIsKeptForTheThreadThatTakesIt() {
    LocalTask t = UnitConfigs.task(1, 1);
    assertThat(t.requestStop(LocalTask.Stop.CANCELLED)).isTrue();
    assertThat(t.state()).isEqualTo(LocalTask.State.WAITING);
    t.locked();
    assertThat(t.stopReason()).isEqualTo(LocalTask.Stop.CANCELLED);
  }

  @Test
  void aStopInterruptsTheRunningHandlerAndOnlyIt() throws Exception {
    LocalTask t = UnitConfigs.task(1, 1);
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch interrupted = new CountDownLatch(1);
    Thread handler = new Thread(() -> {
      t.running(null, null, null, null, null);
      running.countDown();
      try {
        Thread.sleep(60_000); // the handler's work: only an interrupt ends it early
      } catch (InterruptedException e) {
        interrupted.countDown();
      }
    });
    handler.start();
    running.await();
    assertThat(t.requestStop(LocalTask.Stop.TIMED_OUT)).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> interrupted.getCount() == 0);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    handler.join();
  }

  @Test
  void aStopAfterTheHandlerReturnedInterruptsNothing() throws Exception {
    LocalTask t = UnitConfigs.task(1, 1);
    AtomicInteger interruptedAfterwards = new AtomicInteger();
    CountDownLatch finished = new CountDownLatch(1);
    CountDownLatch stopped = new CountDownLatch(1);
    Thread executor = new Thread(() -> {
      t.running(null, null, null, null, null);
      t.finishing();
      finished.countDown();
      try {
        stopped.await();
      } catch (InterruptedException e) {
        interruptedAfterwards.incrementAndGet();
      }
      if (Thread.interrupted()) {
        interruptedAfterwards.incrementAndGet();
      }
    });
    executor.start();
    finished.await();
    assertThat(t.requestStop(LocalTask.Stop.CANCELLED)).as("recorded, for the outcome").isTrue();
    stopped.countDown();
    executor.join();
    assertThat(interruptedAfterwards.get()).as("the executor thread writing the outcome was not interrupted").isZero();
  }

  @Test
  void aTaskLetGoRefusesEveryLaterStop() {
    LocalTask t = UnitConfigs.task(1, 1);
    t.done();
    for (LocalTask.Stop reason : LocalTask.Stop.values()) {
      if (reason != LocalTask.Stop.NONE) {
        assertThat(t.requestStop(reason)).as(reason.name()).isFalse();
      }
    }
    assertThat(t.stopReason()).isEqualTo(LocalTask.Stop.NONE);
  }

  @Test
  void theHandlersViewOfItsTransactionEndsWhenItReturns() {
    LocalTask t = UnitConfigs.task(1, 1);
    t.running(null, null, null, null, null);
    t.finishing();
    org.assertj.core.api.Assertions.assertThatThrownBy(t::connection)
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("transaction is over");
  }
}
