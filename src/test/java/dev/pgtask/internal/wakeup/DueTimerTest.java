package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The worker's one due-time timer, without a database. */
class DueTimerTest {

  final AtomicInteger wakes = new AtomicInteger();
  final AtomicLong wokeAt = new AtomicLong();
  final DueTimer timer = new DueTimer("due-test", () -> {
    wokeAt.compareAndSet(0, System.nanoTime());
    wakes.incrementAndGet();
  });

  @AfterEach
  void stop() {
    timer.stop();
  }

  @Test
  void aDueTimeWakesTheProducerOnceItHasPassedNotBefore() {
    long start = System.nanoTime();
    timer.dueIn(Duration.ofMillis(150));
    await().atMost(Duration.ofSeconds(5)).until(() -> wakes.get() == 1);
    assertThat(wokeAt.get() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
  }

  @Test
  void dueTimesThatPassedTogetherFoldIntoOneWakeUp() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    timer.after(0, () -> {
      try {
        release.await(); // holds the timer's thread until every due time below has passed
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    for (int i = 0; i < 100; i++) {
      timer.dueIn(Duration.ZERO);
    }
    long last = System.nanoTime() + DueTimer.DUE_MARGIN_NANOS;
    await().atMost(Duration.ofSeconds(5)).until(() -> System.nanoTime() - last > TimeUnit.MILLISECONDS.toNanos(2));
    release.countDown();
    await().atMost(Duration.ofSeconds(5)).until(() -> timer.waiting() == 0);
    assertThat(wakes.get()).isEqualTo(1);
  }

  @Test
  void aDueTimeLaterThanTheLastWakeUpWakesAgain() {
    timer.dueIn(Duration.ZERO);
    await().atMost(Duration.ofSeconds(5)).until(() -> wakes.get() == 1);
    timer.dueIn(Duration.ofMillis(20));
    await().atMost(Duration.ofSeconds(5)).until(() -> wakes.get() == 2);
  }

  @Test
  void theTimerKeepsAtMostItsLimitOfDueTimesButAlwaysTakesAnEarlierOne() {
    for (int i = 0; i < DueTimer.MAX_KNOWN_DUE; i++) {
      timer.dueIn(Duration.ofHours(1));
    }
    timer.dueIn(Duration.ofHours(2));
    assertThat(timer.waiting()).isEqualTo(DueTimer.MAX_KNOWN_DUE);
    timer.dueIn(Duration.ofMinutes(1));
    assertThat(timer.waiting()).isEqualTo(DueTimer.MAX_KNOWN_DUE + 1);
  }

  @Test
  void aStoppedTimerTakesNoMoreDueTimesAndDoesNotThrow() {
    timer.stop();
    timer.dueIn(Duration.ZERO);
    timer.after(0, wakes::incrementAndGet);
    assertThat(timer.waiting()).isZero();
    assertThat(wakes.get()).isZero();
  }
}
