package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Which claim carries the spill, without a database: only the one after a hand-off. */
class SpillsTest {

  final AtomicLong heard = new AtomicLong();
  final DueTimer timer = new DueTimer("spills-test", () -> { });
  // not running: an owed spill would be dropped before it reads anything (there is no database here)
  final Spills spills = new Spills(new SpillPolicy(heard::get), timer, null, List.of("q"), List.of("k"), () -> false);

  @AfterEach
  void stop() {
    timer.stop();
  }

  @Test
  void aClaimWithoutAHandOffCarriesNoSpill() {
    assertThat(spills.nextClaim()).isEqualTo(Spills.Claim.NONE);
  }

  @Test
  void onlyTheFirstClaimAfterAHandOffCarriesTheSpill() {
    spills.handedOn();
    assertThat(spills.nextClaim()).isEqualTo(Spills.Claim.SEND);
    assertThat(spills.nextClaim()).isEqualTo(Spills.Claim.NONE);
  }

  @Test
  void theClaimAfterAHandOffHoldsItsSpillBackRightAfterANotificationOfItsQueues() {
    heard.set(System.nanoTime());
    spills.handedOn();
    assertThat(spills.nextClaim()).isEqualTo(Spills.Claim.HELD);
  }

  @Test
  void aFullClaimThatCarriedItsSpillHoldsBackTheNextOne() {
    spills.handedOn();
    spills.claimed(spills.nextClaim(), true);
    spills.handedOn();
    assertThat(spills.nextClaim()).isEqualTo(Spills.Claim.HELD);
  }

  @Test
  void aFullClaimThatHeldItsSpillBackOwesItOnTheTimer() {
    heard.set(System.nanoTime());
    spills.handedOn();
    spills.claimed(spills.nextClaim(), true);
    assertThat(timer.waiting()).isEqualTo(1);
  }

  @Test
  void aShortClaimOwesNothing() {
    heard.set(System.nanoTime());
    spills.handedOn();
    spills.claimed(spills.nextClaim(), false);
    assertThat(timer.waiting()).isZero();
  }
}
