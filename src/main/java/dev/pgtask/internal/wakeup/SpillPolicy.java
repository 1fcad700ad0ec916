package dev.pgtask.internal.wakeup;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * When the claim after this worker's own hand-off sends its spill, holds it back, or owes it: the
 * decisions alone, on {@code System.nanoTime()} values passed in (so they can be tested without a
 * database or a clock). {@link Spills} acts on them.
 *
 * <p>The spill: a worker's completions wake only itself for what they hand on in its queues
 * (db/R__02a_wakeup.sql), so the claim after such a hand-off notifies its queues when it comes back
 * full and leaves a claimable task behind ({@code ClaimStatements}, the claim's spill). It is held
 * back when this worker heard a notification of its queues, or sent a spill itself, less than
 * {@link #QUIET_NANOS} ago: every idle worker of the queue heard that too and claimed, and on a busy cluster nearly every claim
 * after a hand-off is full; a spill for each would signal every listening session of the database
 * for each (with 64 workers, about 60 times a second, each waking 64 sessions). A held-back spill
 * whose claim comes back full is owed: a quiet interval after the last call of its queues (plus a
 * jitter of up to half of one, so that the workers that owe one do not all send at once), it is sent
 * if no notification arrived and no spill of this worker went out since. So a worker that idles
 * hears of a task a busy one left behind within about 150 ms, and the database sends about one
 * spill per quiet interval, whatever the number of workers. A worker that dies owing one leaves
 * those tasks to the next poll of the queue's workers, as one that dies before its claim after a
 * hand-off.
 *
 * <p>Threads: the producer's thread decides and owes; the timer's thread takes what is owed; the
 * listener's thread writes the last notification heard.
 */
public final class SpillPolicy {

  /** How long after a notification of its queues this worker's claims send no spill of their own. */
  static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  /**
   * A notification heard this long after a held-back spill is taken to have been sent after the
   * claim that held it back committed. A notification takes 1 to 5 ms from its COMMIT to a listener
   * on a healthy server, but a listener thread that waits for a CPU hears it later: the enqueue's
   * notification that made the claim hold its spill can arrive after the claim. A wrong guess here
   * costs one notification more; the other way, a task that waits for the next poll.
   */
  static final long HEARD_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  // System.nanoTime() when this worker's listener last heard a notification of its queues (0: none)
  private final LongSupplier lastHeard;
  // System.nanoTime() when this worker last sent a spill (0: never)
  private volatile long lastSent;
  // System.nanoTime() of the full claim whose held-back spill is owed (0: none owed)
  private final AtomicLong owed = new AtomicLong();

  /** {@code lastHeard}: when the last notification of this worker's queues arrived (0: none yet). */
  public SpillPolicy(LongSupplier lastHeard) {
    this.lastHeard = lastHeard;
  }

  /** Whether the claim after a hand-off, made at {@code now}, holds its spill back. */
  boolean holdBack(long now) {
    long last = lastCall();
    return last != 0 && now - last < QUIET_NANOS;
  }

  /** A spill went out at {@code now} (a full claim that carried one, or an owed one that found a task). */
  void sent(long now) {
    lastSent = now;
  }

  /** A claim came back short: it left nothing claimable behind, so an owed spill has nothing to tell. */
  void drained() {
    owed.set(0);
  }

  /**
   * A full claim at {@code now} held its spill back: returns in how many nanoseconds to send it
   * ({@code jitter}, up to half a quiet interval, added), or -1 when one is owed already (that one
   * reads the claimable tasks later than this claim committed).
   */
  long owe(long now, long jitter) {
    if (!owed.compareAndSet(0, now)) {
      return -1;
    }
    long last = lastCall();
    long due = last == 0 || now - (last + QUIET_NANOS) >= 0 ? now : last + QUIET_NANOS;
    return due - now + jitter;
  }

  /**
   * Takes the owed spill: whether to send it now, which is when one is owed and neither a
   * notification of the worker's queues (beyond {@link #HEARD_MARGIN_NANOS}) nor a spill of its own
   * came after the claim that owes it. Nothing is owed afterwards.
   */
  boolean takeOwed() {
    long claim = owed.getAndSet(0); // before the read: a claim that owes after it owes again
    return claim != 0 && lastHeard.getAsLong() - claim <= HEARD_MARGIN_NANOS && lastSent - claim <= 0;
  }

  /** The later of the last notification of this worker's queues heard and the last spill sent (0: neither). */
  private long lastCall() {
    long heard = lastHeard.getAsLong();
    long sent = lastSent;
    return heard == 0 || (sent != 0 && sent - heard > 0) ? sent : heard;
  }
}
