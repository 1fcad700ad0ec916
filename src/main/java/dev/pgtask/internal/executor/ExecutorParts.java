package dev.pgtask.internal.executor;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.complete.Completer;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.lease.LeaseKeeper;
import dev.pgtask.internal.lease.Leases;
import java.util.Set;

/**
 * The executor's parts for one worker, built and wired to each other in one place: who holds whom.
 * The {@link Executor} runs them (its threads, their loop); a {@link DirectRun} runs one task through
 * the same parts on its caller's thread. Immutable after construction; each part documents its own
 * threads.
 */
final class ExecutorParts {

  final WorkerConfig config;
  /** The shutdown's flags, written by {@link ExecutorShutdown} only. */
  final Stopping stop = new Stopping();
  /** The one place that decides outcomes. */
  final Outcomes outcomes;
  /** The one writer (other than completions) and counter of outcomes. */
  final OutcomeWriter writer;
  /** What the producer waits on. */
  final Capacity capacity;
  final KindSettings kinds;
  /** The registry of held tasks; the one way a task is let go ({@link HeldTasks#finished}). */
  final HeldTasks held;
  /** The one lease writer. */
  final Leases leases;
  /** Where claimed tasks come in. */
  final Intake intake;
  final BatchPlan plan;
  final HandlerCall call;
  final TransactionalRun transactional;
  final BatchCommit batch;
  /** Plain-mode completions; it lets a task go through {@link HeldTasks#finished}. */
  final Completer completer;
  final PlainRun plain;
  /** When leases are renewed and held tasks checked; it sees the registry as a {@code HeldRegistry}. */
  final LeaseKeeper keeper;

  ExecutorParts(WorkerConfig config, WorkerStats stats) {
    this.config = config;
    this.outcomes = new Outcomes(config);
    this.writer = new OutcomeWriter(config, stats);
    this.capacity = new Capacity(config);
    this.kinds = new KindSettings(config, outcomes);
    this.held = new HeldTasks(config, kinds, capacity, writer);
    this.leases = new Leases(config);
    this.intake = new Intake(config, held, stop);
    this.plan = new BatchPlan(config);
    this.call = new HandlerCall(config, outcomes, stop);
    this.transactional = new TransactionalRun(config, outcomes, writer, held, intake, plan, kinds, call, stop);
    this.batch = new BatchCommit(config, outcomes, writer, held, leases, intake, transactional, stop);
    this.completer = new Completer(config, writer, held::finished);
    this.plain = new PlainRun(config, outcomes, held, leases, intake, capacity, completer, call);
    this.keeper = new LeaseKeeper(config, held, leases);
  }

  /** The bounded stop of an executor whose threads are {@code workers}, driven through {@code threads}. */
  ExecutorShutdown shutdown(Set<ExecutorThread> workers, ExecutorShutdown.Threads threads) {
    return new ExecutorShutdown(config, stop, intake, held, workers, threads, keeper, completer, call);
  }
}
