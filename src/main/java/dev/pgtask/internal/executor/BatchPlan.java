package dev.pgtask.internal.executor;

import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;

/**
 * Commit-batch planning: which tasks may share a transaction ({@code commitBatch(n, t)}, kinds that
 * opted in with {@code HandlerOptions.withSharedTransaction}), by how long each kind's handlers ran
 * lately ({@link KindPace}). Called on the executor threads; {@link KindPace} is thread-safe, the
 * rest is immutable.
 */
final class BatchPlan {

  private final WorkerConfig config;
  /** How long each kind's handlers ran lately: which tasks may share a transaction. */
  final KindPace pace = new KindPace();
  final int batchCapacity;
  final long batchTimeNanos;

  BatchPlan(WorkerConfig config) {
    this.config = config;
    this.batchCapacity = Math.max(1, config.commitBatchSize());
    this.batchTimeNanos = config.commitBatchTime().toNanos();
  }

  /**
   * Whether {@code t} may open a transaction that carries more tasks after it: commit batching is on,
   * its kind opted in ({@code HandlerOptions.withSharedTransaction}) and its recent runs took at most
   * a quarter of the batch's time. Otherwise its transaction
   * carries it alone, and nothing it finishes waits for another task.
   */
  boolean batchable(LocalTask t) {
    HandlerEntry<?> handler = config.handlers().get(t.claimed.kind());
    return batchCapacity > 1 && !t.plain && handler != null && handler.options().sharesTransaction()
        && pace.expectedNanos(t.claimed.kind()) <= batchTimeNanos / 4;
  }

  /**
   * Whether {@code t} may join {@code tx}, whose tasks are expected to take {@code plannedNanos} more:
   * there is room, and by its kind's recent runs it will be done before the transaction has been open
   * for the batch's time. The tasks already finished in {@code tx} wait for their commit at most that
   * long, unless a handler takes far longer than its kind's recent runs.
   */
  boolean joins(TaskTransaction tx, LocalTask t, long plannedNanos) {
    if (tx.capacity == 1 || tx.size() >= tx.capacity || !batchable(t)) {
      return false;
    }
    long expected = pace.expectedNanos(t.claimed.kind());
    return System.nanoTime() - tx.startNanos + plannedNanos + expected <= batchTimeNanos;
  }
}
