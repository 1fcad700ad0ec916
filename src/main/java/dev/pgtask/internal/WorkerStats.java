package dev.pgtask.internal;

import dev.pgtask.WorkerStatistics;
import dev.pgtask.internal.complete.OutcomeName;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker's counters since start: the one place they are kept. Outcomes are counted by their
 * {@link OutcomeName} ({@link #counted}); {@link #snapshot} reads them into the public
 * {@link WorkerStatistics}, the only other shape they have.
 */
public final class WorkerStats {
  /** Tasks claimed. Written by the producer. */
  public final AtomicLong claimed = new AtomicLong();
  /** Claim statements sent. Written by the producer. */
  public final AtomicLong claimQueries = new AtomicLong();
  /** Tasks of dead workers this worker's rescue pass put back. Written by the maintenance. */
  public final AtomicLong rescued = new AtomicLong();
  /** When the last claim statement returned (epoch millis; 0: none yet). Written by the producer. */
  public final AtomicLong lastClaimMillis = new AtomicLong();

  private final AtomicLong completed = new AtomicLong();
  private final AtomicLong retried = new AtomicLong();
  private final AtomicLong discarded = new AtomicLong();
  private final AtomicLong cancelled = new AtomicLong();
  private final AtomicLong deferred = new AtomicLong();
  private final AtomicLong released = new AtomicLong();

  /** Counts one attempt that ended as {@code outcome} (snoozed and lost ones have no counter). */
  public void counted(OutcomeName outcome) {
    AtomicLong counter = switch (outcome) {
      case COMPLETED -> completed;
      case RETRIED -> retried;
      case DISCARDED -> discarded;
      case CANCELLED -> cancelled;
      case DEFERRED -> deferred;
      case RELEASED -> released;
      case SNOOZED, LOST -> null;
    };
    if (counter != null) {
      counter.incrementAndGet();
    }
  }

  /** The counters now, each read once (not under one lock), with the listener's reconnects. */
  public WorkerStatistics snapshot(long listenerReconnects) {
    return new WorkerStatistics(claimed.get(), claimQueries.get(), completed.get(), retried.get(), discarded.get(),
        cancelled.get(), deferred.get(), released.get(), rescued.get(), listenerReconnects);
  }
}
