package dev.pgtask.internal;

import java.util.concurrent.atomic.AtomicLong;

/** A worker's counters since start. */
public final class WorkerStats {
  public final AtomicLong claimed = new AtomicLong();
  public final AtomicLong claimQueries = new AtomicLong();
  public final AtomicLong completed = new AtomicLong();
  public final AtomicLong retried = new AtomicLong();
  public final AtomicLong discarded = new AtomicLong();
  public final AtomicLong cancelled = new AtomicLong();
  public final AtomicLong deferred = new AtomicLong();
  public final AtomicLong released = new AtomicLong();
  public final AtomicLong rescued = new AtomicLong();
  /** When the last claim statement returned (epoch millis; 0: none yet). Written by the producer. */
  public final AtomicLong lastClaimMillis = new AtomicLong();
}
