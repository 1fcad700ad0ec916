package dev.pgtask.internal;

/** Wires listener, producer, executor and maintenance of one worker. */
public final class WorkerRuntime {

  /** Counters since start. */
  public record Stats(long claimed, long completed, long retried, long discarded, long deferred,
      long released, long claimQueries, long listenerReconnects) {}

  private final WorkerConfig config;

  public WorkerRuntime(WorkerConfig config) {
    this.config = config;
  }

  public void start() {
    throw new UnsupportedOperationException("in progress");
  }

  public void shutdown() {}

  public Stats stats() {
    return new Stats(0, 0, 0, 0, 0, 0, 0, 0);
  }
}
