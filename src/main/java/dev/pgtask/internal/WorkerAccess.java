package dev.pgtask.internal;

import dev.pgtask.PgTaskWorker;
import java.util.Objects;

/**
 * The way from a {@link PgTaskWorker} to its internal parts, for pgtask's own code outside the
 * root package (the testing helpers, the command line, pgtask's tests) without putting an internal
 * type in the worker's public signatures. {@code PgTaskWorker} installs the accessor when its class
 * is initialized, which has happened by the time anyone holds a worker.
 */
public final class WorkerAccess {

  /** Implemented by {@code PgTaskWorker} only. */
  public interface Accessor {
    /** The worker's resolved configuration. */
    WorkerConfig config(PgTaskWorker worker);

    /** The worker's runtime, or null before it started. */
    WorkerRuntime runtime(PgTaskWorker worker);
  }

  private static volatile Accessor accessor;

  private WorkerAccess() {}

  /** Called once, by {@code PgTaskWorker}'s static initializer. */
  public static void install(Accessor a) {
    Objects.requireNonNull(a, "accessor");
    synchronized (WorkerAccess.class) {
      if (accessor != null) {
        throw new IllegalStateException("the worker accessor is installed already");
      }
      accessor = a;
    }
  }

  /** The worker's resolved configuration (with the lock namespace once it has started). */
  public static WorkerConfig config(PgTaskWorker worker) {
    return accessor.config(Objects.requireNonNull(worker, "worker"));
  }

  /** The worker's runtime, or null before {@link PgTaskWorker#start()}. */
  public static WorkerRuntime runtime(PgTaskWorker worker) {
    return accessor.runtime(Objects.requireNonNull(worker, "worker"));
  }
}
