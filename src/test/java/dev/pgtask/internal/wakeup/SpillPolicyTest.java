package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * When the claim after a worker's own hand-off sends, holds back or owes its spill, without a
 * database or a clock: the instants are System.nanoTime() values made up here.
 */
class SpillPolicyTest {

  static final long QUIET = SpillPolicy.QUIET_NANOS;
  static final long MARGIN = SpillPolicy.HEARD_MARGIN_NANOS;
  static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  static final long T = 1_000_000_000_000L; // an instant of the made-up clock

  final AtomicLong heard = new AtomicLong(); // the listener's last notification of the worker's queues
  final SpillPolicy policy = new SpillPolicy(heard::get);

  @Test
  void aClaimAfterAHandOffSendsItsSpillWhenTheWorkerHeardNothingAndSentNothing() {
    assertThat(policy.holdBack(T)).isFalse();
  }

  @Test
  void aClaimWithinTheQuietIntervalAfterANotificationOfItsQueuesHoldsItsSpillBack() {
    heard.set(T);
    assertThat(policy.holdBack(T + QUIET - 1)).isTrue();
    assertThat(policy.holdBack(T + QUIET)).isFalse();
  }

  @Test
  void aSpillThisWorkerSentHoldsBackItsNextOnesForAQuietInterval() {
    policy.sent(T);
    assertThat(policy.holdBack(T + 10 * MS)).isTrue();
    assertThat(policy.holdBack(T + QUIET)).isFalse();
  }

  @Test
  void theQuietIntervalCountsFromTheLaterOfTheLastNotificationHeardAndTheLastSpillSent() {
    policy.sent(T);
    heard.set(T + 50 * MS);
    assertThat(policy.holdBack(T + QUIET + 10 * MS)).isTrue();
    heard.set(T - 50 * MS);
    assertThat(policy.holdBack(T + QUIET + 10 * MS)).isFalse();
  }

  @Test
  void anOwedSpillIsSentAQuietIntervalAfterTheLastCallOfItsQueuesPlusTheJitter() {
    heard.set(T);
    assertThat(policy.owe(T + 20 * MS, 7 * MS)).isEqualTo(QUIET - 20 * MS + 7 * MS);
  }

  @Test
  void anOwedSpillWhoseQuietIntervalHasPassedWaitsOnlyForTheJitter() {
    heard.set(T);
    assertThat(policy.owe(T + QUIET + MS, 3 * MS)).isEqualTo(3 * MS);
  }

  @Test
  void aSecondFullClaimWhileASpillIsOwedOwesNoSecondOne() {
    heard.set(T);
    assertThat(policy.owe(T + MS, 0)).isNotNegative();
    assertThat(policy.owe(T + 2 * MS, 0)).isEqualTo(-1);
  }

  @Test
  void anOwedSpillIsSentWhenNoNotificationAndNoSpillCameAfterTheClaimThatOwesIt() {
    heard.set(T);
    policy.owe(T + MS, 0);
    assertThat(policy.takeOwed()).isTrue();
  }

  @Test
  void anOwedSpillIsTakenOnce() {
    heard.set(T);
    policy.owe(T + MS, 0);
    assertThat(policy.takeOwed()).isTrue();
    assertThat(policy.takeOwed()).isFalse();
  }

  @Test
  void anOwedSpillIsNotSentWhenTheQueuesWereNotifiedSinceTheClaim() {
    heard.set(T);
    policy.owe(T + MS, 0);
    heard.set(T + MS + MARGIN + 1);
    assertThat(policy.takeOwed()).isFalse();
  }

  @Test
  void aNotificationHeardWithinTheMarginAfterTheClaimIsTakenAsSentBeforeItAndTheOwedSpillGoesOut() {
    heard.set(T);
    policy.owe(T + MS, 0);
    heard.set(T + MS + MARGIN); // the enqueue's notification, heard late by a busy listener thread
    assertThat(policy.takeOwed()).isTrue();
  }

  @Test
  void anOwedSpillIsNotSentWhenThisWorkerSentASpillSinceTheClaim() {
    heard.set(T);
    policy.owe(T + MS, 0);
    policy.sent(T + 2 * MS);
    assertThat(policy.takeOwed()).isFalse();
  }

  @Test
  void aShortClaimLeavesNothingBehindSoTheOwedSpillIsNotSent() {
    heard.set(T);
    policy.owe(T + MS, 0);
    policy.drained();
    assertThat(policy.takeOwed()).isFalse();
  }

  @Test
  void nothingOwedIsNothingSent() {
    assertThat(policy.takeOwed()).isFalse();
  }
}
