package dev.pgtask.internal.complete;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.OutcomeQueries;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Duration;
import org.jooq.DSLContext;

/**
 * The one writer of outcomes other than completion (completions are written in sets, with their
 * transaction's commit or by the {@link Completer}), and the one counter of every outcome. Each
 * write is fenced: a claim that is no longer ours matches no row and writes nothing.
 */
public final class OutcomeWriter {

  private final WorkerConfig config;
  private final WorkerStats stats;
  private volatile java.util.function.Consumer<Duration> dueIn = d -> { };
  /** Rate limits (ids) whose token a task put back without starting gives back, at the next claim. */
  private final java.util.concurrent.ConcurrentLinkedQueue<Integer> refunds =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  public OutcomeWriter(WorkerConfig config, WorkerStats stats) {
    this.config = config;
    this.stats = stats;
  }

  /** Sees each outcome as it is counted (the testing helpers' report); nothing by default. */
  public interface Observer {
    void counted(LocalTask t, Outcome o, OutcomeName name);
  }

  private volatile Observer observer = (t, o, name) -> { };

  public void observe(Observer observer) {
    this.observer = observer;
  }

  /** The refunds owed (see {@link #refunds}), taken: the next claim hands them to the database. */
  public Integer[] takeRefunds() {
    java.util.List<Integer> out = new java.util.ArrayList<>();
    for (Integer id; (id = refunds.poll()) != null; ) {
      out.add(id);
    }
    return out.toArray(Integer[]::new);
  }

  /** Told when an outcome just made durable puts its task back to run after a delay. */
  public void onDueIn(java.util.function.Consumer<Duration> dueIn) {
    this.dueIn = dueIn;
  }

  /**
   * Writes {@code o} for {@code t} through {@code dsl} (the task's own transaction, which holds its
   * row and tenant locks, or an autocommit connection for tasks held without one). Returns the
   * state the task is left in, or null when the fence did not match (or there is nothing to write).
   */
  public TaskState write(DSLContext dsl, LocalTask t, Outcome o) {
    Fence f = t.fence();
    if (o instanceof Outcome.Failed failed) {
      return failed.retryAt() != null
          ? OutcomeQueries.failUntil(dsl, f, failed.error(), failed.detail(), failed.retryAt(), failed.discard())
          : OutcomeQueries.fail(dsl, f, failed.error(), failed.detail(), failed.retryDelay(), failed.discard());
    }
    if (o instanceof Outcome.Snoozed s) {
      return OutcomeQueries.snooze(dsl, f, s.delay());
    }
    if (o instanceof Outcome.Released) {
      return OutcomeQueries.release(dsl, f, Duration.ZERO);
    }
    if (o instanceof Outcome.Deferred d) {
      return OutcomeQueries.release(dsl, f, d.delay());
    }
    if (o instanceof Outcome.Cancelled c) {
      return OutcomeQueries.cancelled(dsl, f, c.reason()) == 1 ? TaskState.cancelled : null;
    }
    return null; // Completed is written in sets; Lost writes nothing
  }

  /**
   * Counts an outcome once its write is durable: {@code result} is the state it left the task in
   * (null: fenced out, nothing counted). A run that was to be put back ends cancelled when a
   * cancellation was requested meanwhile, and is counted so.
   */
  public void count(LocalTask t, Outcome o, TaskState result, long startNanos) {
    OutcomeName name = OutcomeName.counted(o, result);
    observer.counted(t, o, name);
    if (o instanceof Outcome.Lost) {
      return;
    }
    if (result == TaskState.retryable || result == TaskState.available) {
      // back in the queue, due after this delay: the producer claims then, not at its next poll.
      // For a retry at an instant, this JVM's clock only times the wake-up; run_at (written as given)
      // and the database's clock decide when the task is due
      Duration delay = o instanceof Outcome.Failed f
          ? (f.retryAt() != null ? Duration.between(java.time.Instant.now(), f.retryAt()) : f.retryDelay())
          : o instanceof Outcome.Snoozed s ? s.delay() : o instanceof Outcome.Deferred d ? d.delay() : Duration.ZERO;
      dueIn.accept(delay);
    }
    if (o instanceof Outcome.Deferred d) {
      // a deferral is counted whether or not its write matched; one that met a cancel request
      // is counted as cancelled too
      stats.counted(OutcomeName.DEFERRED);
      if (d.limit()) {
        config.metrics().limitDeferred(t.queue());
        // it did not start: its rate tokens go back (never written in its own transaction,
        // which a shared transaction could keep open: the next claim gives them back)
        for (int id : t.chargedLimits()) {
          refunds.add(id);
        }
      } else {
        config.metrics().tenantDeferred(t.queue());
      }
    }
    if (name == OutcomeName.DEFERRED || name == OutcomeName.LOST) {
      return;
    }
    stats.counted(name);
    config.metrics().finished(t.queue(), t.kind(), name.label(),
        Duration.ofNanos(Math.max(0, System.nanoTime() - startNanos)));
  }
}
