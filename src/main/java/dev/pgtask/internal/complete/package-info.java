/**
 * How an attempt ends: its outcome decided, written and counted, each in one place.
 *
 * <p>An {@link dev.pgtask.internal.complete.Outcome} is data, one record per way an attempt can
 * end. {@link dev.pgtask.internal.complete.Outcomes} is the one place that decides it (what a
 * handler's throwable or a stop request means, the retry policy);
 * {@link dev.pgtask.internal.complete.OutcomeWriter} is the one writer of every outcome other than a
 * completion (fenced: a claim no longer ours matches no row and writes nothing) and the one counter
 * of every outcome, once it is durable; {@link dev.pgtask.internal.complete.OutcomeName} the one
 * place where an outcome becomes a name (counters, metrics, logs, the testing helpers' report).
 * Completions are written in sets: a task transaction's with its COMMIT (the executor's
 * {@code BatchCommit}), plain-mode ones by the {@link dev.pgtask.internal.complete.Completer}, in
 * batches on a thread of its own.
 *
 * <p>What this package may do to a task: read its claim and fence through the public surface of
 * {@link dev.pgtask.internal.executor.LocalTask}, nothing else. It never writes a task's state: the
 * completer lets a task go through the callback the executor gave it ({@code HeldTasks.finished}).
 */
package dev.pgtask.internal.complete;
