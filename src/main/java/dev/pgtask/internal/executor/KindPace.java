package dev.pgtask.internal.executor;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How long the handlers of each kind have been running, for commit batching's gate: a task joins a
 * transaction that carries other tasks only when its kind's recent runs say it will be done well
 * within the batch's time bound, so a finished task's commit does not wait behind a long one.
 *
 * <p>The estimate is a decaying maximum: each run sets it to the larger of the run's time and 0.9
 * of the estimate so far. One long run keeps its kind out of batches until that many shorter runs
 * have passed (about 60 for a run 400 times over the limit); a kind is unknown, and runs alone,
 * until it has run {@link #WARMUP} times.
 */
final class KindPace {

  /** Runs of a kind seen before its tasks may share a transaction. */
  static final int WARMUP = 4;
  private static final double DECAY = 0.9;

  private static final class Pace {
    int runs;
    long estimateNanos;
    boolean alone;
  }

  private final Map<String, Pace> kinds = new ConcurrentHashMap<>();

  /** A handler of {@code kind} ran for {@code nanos}. */
  void ran(String kind, long nanos) {
    Pace p = kinds.computeIfAbsent(kind, k -> new Pace());
    synchronized (p) {
      p.estimateNanos = p.runs == 0 ? nanos : Math.max(nanos, (long) (p.estimateNanos * DECAY));
      if (p.runs < Integer.MAX_VALUE) {
        p.runs++;
      }
    }
  }

  /** A handler of {@code kind} changed a setting of its transaction: its tasks run alone from now on. */
  void changesSettings(String kind) {
    Pace p = kinds.computeIfAbsent(kind, k -> new Pace());
    synchronized (p) {
      p.alone = true;
    }
  }

  /**
   * How long the next run of {@code kind} is expected to take, or {@link Long#MAX_VALUE} while the
   * kind is not known well enough to share a transaction.
   */
  long expectedNanos(String kind) {
    Pace p = kinds.get(kind);
    if (p == null) {
      return Long.MAX_VALUE;
    }
    synchronized (p) {
      return p.runs < WARMUP || p.alone ? Long.MAX_VALUE : p.estimateNanos;
    }
  }
}
