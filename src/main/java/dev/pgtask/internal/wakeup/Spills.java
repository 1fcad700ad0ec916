package dev.pgtask.internal.wakeup;

import dev.pgtask.internal.sql.IdleQueries;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The spill of the claim after this worker's own hand-off, as {@link SpillPolicy} decides it: which
 * claim carries one ({@link #nextClaim}), what its answer leaves owed ({@link #claimed}), and the
 * owed spill, sent on the {@link DueTimer}'s thread: one statement on the pool that notifies the
 * worker's queues if a task is still claimable ({@link IdleQueries#notifyIfClaimable}).
 *
 * <p>Threads: {@link #handedOn} from an executor thread after its commit; {@link #nextClaim} and
 * {@link #claimed} on the producer's thread; the owed spill on the timer's.
 */
public final class Spills {

  private static final Logger log = LoggerFactory.getLogger(Spills.class);

  /** What a claim does about the spill. */
  public enum Claim {
    /** Sends none: nothing was handed on since the last claim. */
    NONE,
    /** Notifies its queues if it comes back full and leaves a claimable task behind. */
    SEND,
    /** Sends none now, but owes one if it comes back full ({@link SpillPolicy}). */
    HELD;

    /** Whether the claim statement carries the spill. */
    public boolean sends() {
      return this == SEND;
    }
  }

  private final SpillPolicy policy;
  private final DueTimer timer;
  private final DataSource dataSource;
  private final List<String> queues;
  private final List<String> kinds;
  private final BooleanSupplier running;
  // set by handedOn (an executor thread), taken by the next claim (the producer's thread)
  private volatile boolean handedOn;

  Spills(SpillPolicy policy, DueTimer timer, DataSource dataSource, List<String> queues, List<String> kinds,
      BooleanSupplier running) {
    this.policy = policy;
    this.timer = timer;
    this.dataSource = dataSource;
    this.queues = queues;
    this.kinds = kinds;
    this.running = running;
  }

  /** This worker's commit handed tasks on in its queues without a notification: its next claim spills. */
  void handedOn() {
    handedOn = true;
  }

  /** What the claim about to be sent does about the spill (takes the hand-off, if any). */
  public Claim nextClaim() {
    boolean spill = handedOn;
    handedOn = false;
    if (!spill) {
      return Claim.NONE;
    }
    return policy.holdBack(System.nanoTime()) ? Claim.HELD : Claim.SEND;
  }

  /** The claim sent as {@code claim} came back {@code full} (it locked as many tasks as it asked for). */
  public void claimed(Claim claim, boolean full) {
    long now = System.nanoTime();
    if (!full) {
      policy.drained();
      return;
    }
    if (claim == Claim.HELD) {
      long delay = policy.owe(now, ThreadLocalRandom.current().nextLong(SpillPolicy.QUIET_NANOS / 2 + 1));
      if (delay >= 0) {
        timer.after(delay, this::sendOwed);
      }
    } else if (claim == Claim.SEND) {
      policy.sent(now); // it notified if it left a task behind
    }
  }

  private void sendOwed() {
    if (!policy.takeOwed() || !running.getAsBoolean()) {
      return; // the idle workers were called since
    }
    try {
      if (IdleQueries.notifyIfClaimable(dataSource, queues, kinds) > 0) {
        policy.sent(System.nanoTime());
      }
    } catch (RuntimeException e) {
      log.warn("pgtask: notifying the queues of the tasks a claim left behind failed ({}); the other workers "
          + "find them at their next poll", e.getMessage());
    }
  }
}
