package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeName;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs claimed tasks in the calling thread, each exactly as an executor thread runs a task taken
 * alone: the same {@link ExecutorParts} and the same {@link Executor#runOne} path (its
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

  private final ExecutorParts parts;
  private final Executor executor;
  private final Map<Long, Ran> counted = new ConcurrentHashMap<>();

  /** {@code config}: the worker's, with its lock namespace resolved. */
  public DirectRun(WorkerConfig config) {
    this.parts = new ExecutorParts(config, new WorkerStats());
    this.executor = new Executor(parts); // its threads are never started: only its runOne is used
    parts.writer.observe(this::counted);
  }

  private void counted(LocalTask t, Outcome o, OutcomeName name) {
    String error = o instanceof Outcome.Failed f ? f.error() : null;
    counted.put(t.id(), new Ran(t.id(), t.claimed.kind(), t.claimed.attempt(), name, error));
  }

  /** Runs one task claimed with the config's worker id; returns how its attempt ended. */
  public Ran run(Claimed claimed) {
    LocalTask t = runOnCaller(claimed);
    Ran ran = counted.remove(t.id());
    return ran != null ? ran : new Ran(t.id(), claimed.kind(), claimed.attempt(), OutcomeName.LOST, null);
  }

  /**
   * Runs one task claimed with the config's worker id on the calling thread, as an executor thread
   * runs a task taken alone; plain-mode completions are written before it returns.
   */
  private LocalTask runOnCaller(Claimed claimed) {
    parts.intake.claimStarting();
    LocalTask t = parts.held.register(List.of(claimed), System.nanoTime()).get(0);
    ExecutorThread w = new ExecutorThread();
    try {
      // a plain task whose start could not be checked waits for its next turn: give it a few
      for (int turn = 0; turn < 5; turn++) {
        HandlerCall.withMdc(t, () -> executor.runOne(w, t, true));
        while (!w.alone.isEmpty()) {
          LocalTask again = w.alone.poll();
          HandlerCall.withMdc(again, () -> executor.runOne(w, again, true));
        }
        parts.batch.commit(w);
        if (!parts.intake.ready.remove(t)) {
          break;
        }
      }
      parts.completer.flushRemaining();
    } finally {
      Thread.interrupted(); // an interrupt meant for the handler must not reach the caller
    }
    return t;
  }

  /** Stops the watchdog thread. */
  @Override
  public void close() {
    parts.call.close();
  }
}
