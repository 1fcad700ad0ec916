package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeName;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs claimed tasks in the calling thread, each exactly as an executor thread runs a task taken
 * alone: the same {@link Executor#runOne} path ({@link Executor#runOnCaller}; its
 * {@link TaskTransaction}: fenced re-lock, tenant lock, savepoint, handler, completion and COMMIT,
 * or back to the savepoint and the outcome written by {@link dev.pgtask.internal.complete.OutcomeWriter} under the task's
 * locks), the same watchdog, the same outcomes ({@link dev.pgtask.internal.complete.Outcomes}). Plain-mode completions are written before {@link #run} returns. For
 * {@code dev.pgtask.testing}; the executor's own threads are never started.
 *
 * <p>Owned by one thread at a time; not thread-safe.
 */
public final class DirectRun implements AutoCloseable {

  /**
   * How one attempt ended, as it was counted ({@link OutcomeName}; {@code LOST}: nothing was
   * written, the claim was no longer this worker's, or pgtask failed around the task, as the log says).
   */
  public record Ran(long taskId, String kind, int attempt, OutcomeName outcome, String error) {}

  private final Executor executor;
  private final Map<Long, Ran> counted = new ConcurrentHashMap<>();

  /** {@code config}: the worker's, with its lock namespace resolved. */
  public DirectRun(WorkerConfig config) {
    this.executor = new Executor(config, new WorkerStats());
    executor.observe(this::counted);
  }

  private void counted(LocalTask t, Outcome o, OutcomeName name) {
    String error = o instanceof Outcome.Failed f ? f.error() : null;
    counted.put(t.id(), new Ran(t.id(), t.claimed.kind(), t.claimed.attempt(), name, error));
  }

  /** Runs one task claimed with the config's worker id; returns how its attempt ended. */
  public Ran run(Claimed claimed) {
    LocalTask t = executor.runOnCaller(claimed);
    Ran ran = counted.remove(t.id());
    return ran != null ? ran : new Ran(t.id(), claimed.kind(), claimed.attempt(), OutcomeName.LOST, null);
  }

  /** Stops the watchdog thread. */
  @Override
  public void close() {
    executor.closeDirect();
  }
}
