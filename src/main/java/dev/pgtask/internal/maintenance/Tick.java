package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.notifier.SessionWork;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * The tick, every beat ({@link Maintenance#beatInterval}) on every worker: the heartbeat and the
 * maintenance lease's turn in one statement ({@code pgtask.maintenance_turn}); the leader's tick
 * carries its rescue round ({@link RescueRound}) when that is due, in the same transaction. A worker
 * whose tick took the lease runs a round at once, in a transaction of its own (a new cluster has a
 * leader, and a dead leader's claims are rescued, at once).
 *
 * <p>While the worker's listener listens, the tick runs on the listener's own session
 * ({@link #sessionWork()}), in the listener's round that also carries the poll: an idle worker's
 * heartbeat costs no transaction of its own, no pool check and no ping. Due a beat after the last
 * one; it runs early (by at most half a beat, and at most a poll interval) in a round that the
 * listener sends anyway for the poll. What needs the pool (registering again, the round of a worker
 * that has just taken the lease, the vacuum, the analyze) goes to the maintenance thread. While
 * these ticks come (the last one less than a beat and a quarter ago), the maintenance thread ticks
 * no more ({@link #onPool()}); when they stop (the listener lost its connection, or never heard a
 * notification and stopped), it ticks on the pool again, within two and a quarter beats of the last
 * one: inside the leader's lease of three.
 */
public final class Tick implements MaintenancePass<Boolean> {

  private final Duration beat;
  private final long beatNanos;
  private final long early;
  private final LeaderLease lease;
  private final PassTransaction tx;
  private final RescueRound round;
  private final Executor handOff;
  // System.nanoTime() of the last tick on the listener's session (0: none yet), and when the next
  // is due; written by the listener's thread, read by the maintenance thread
  private volatile long lastSessionTick;
  private volatile long sessionTickDue;

  /**
   * {@code poll}: the worker's poll interval (the session's tick runs early by at most that);
   * {@code handOff}: runs work on the maintenance thread.
   */
  Tick(Duration beat, Duration poll, LeaderLease lease, PassTransaction tx, RescueRound round, Executor handOff) {
    this.beat = beat;
    this.beatNanos = beat.toNanos();
    this.early = Math.min(poll.toNanos(), beatNanos / 2);
    this.lease = lease;
    this.tx = tx;
    this.round = round;
    this.handOff = handOff;
    this.sessionTickDue = System.nanoTime() + beatNanos / 2; // on the listener's session, before the pool's next
  }

  @Override
  public String name() {
    return "tick";
  }

  @Override
  public Duration interval() {
    return beat;
  }

  /** The maintenance thread's tick: nothing while the listener's session carries the ticks. */
  void onPool() {
    if (!tickedOnSession()) {
      runOnce();
    }
  }

  /** One tick now, through the pool; returns whether this worker leads after it. */
  @Override
  public Boolean runOnce() {
    tx.onPool(PassTransaction.Fence.BEAT, work());
    return lease.leads();
  }

  /** The tick's pass: the leader's rescue round, or for a follower what follows a lease it took. */
  private PassStatements<?> work() {
    return lease.leads() ? round : taken;
  }

  /**
   * A follower's tick runs no statement of its own beyond the turn; when the turn returned the
   * lease, the new leader's round runs at once, on the pool.
   */
  private final PassStatements<Boolean> taken = new PassStatements<>() {
    @Override
    public Boolean run(DSLContext t) {
      return Boolean.TRUE;
    }

    @Override
    public void committed(Boolean result, Executor onPool) {
      round.dueNow();
      onPool.execute(() -> tx.onPool(PassTransaction.Fence.BEAT, round));
    }
  };

  /** The tick as the listener runs it on its session while it listens (see {@link SessionWork}). */
  public SessionWork sessionWork() {
    return new SessionWork() {
      @Override
      public long dueAt() {
        return sessionTickDue;
      }

      @Override
      public boolean runsInRoundAt(long now) {
        return sessionTickDue - early - now <= 0;
      }

      @Override
      public Runnable run(DSLContext t, long now) {
        sessionTickDue = now + beatNanos;
        Runnable committed = tx.onSession(t, PassTransaction.Fence.BEAT, work(), handOff);
        return () -> {
          lastSessionTick = System.nanoTime();
          committed.run();
        };
      }
    };
  }

  /** Whether the listener's session ticked less than a beat and a quarter ago. */
  private boolean tickedOnSession() {
    long last = lastSessionTick;
    return last != 0 && System.nanoTime() - last < beatNanos * 5 / 4;
  }
}
