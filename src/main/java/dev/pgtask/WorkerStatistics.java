package dev.pgtask;

/**
 * A worker's counters since it started, as one consistent-enough snapshot (each counter is read
 * once; they are not read under one lock). For logs, tests and the command line; for monitoring,
 * prefer the metrics ({@link PgTaskMetrics}) and the {@code pgtask.*} views.
 *
 * @param claimed tasks claimed
 * @param claimQueries claim statements sent (including those that found nothing)
 * @param completed tasks completed
 * @param retried failed attempts that left their task to be retried
 * @param discarded tasks discarded (no attempt left, or discarded by their handler)
 * @param cancelled tasks that ended cancelled
 * @param deferred attempts put back because their tenant's lock was busy
 * @param released tasks put back without spending an attempt (shutdown, lost connection)
 * @param rescued tasks of dead workers this worker's rescue pass put back
 * @param listenerReconnects times the LISTEN connection was opened again after a failure
 */
public record WorkerStatistics(long claimed, long claimQueries, long completed, long retried, long discarded,
    long cancelled, long deferred, long released, long rescued, long listenerReconnects) {

  /** All zero: a worker that has not started. */
  public static final WorkerStatistics ZERO = new WorkerStatistics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
