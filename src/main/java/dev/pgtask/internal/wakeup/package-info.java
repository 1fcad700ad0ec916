/**
 * The wake-up protocol: how a worker learns that a task of its queues became claimable, now or
 * later, without waiting for its poll. Its database side is db/R__02a_wakeup.sql; its payloads are
 * {@link dev.pgtask.internal.wakeup.WakePayload}'s.
 *
 * <p>Who wakes whom. A worker's producer waits on its {@link dev.pgtask.internal.wakeup.WakeSignal}
 * (or its jittered poll interval); everything below releases it or sets its
 * {@link dev.pgtask.internal.wakeup.DueTimer}, and nothing else makes it claim:
 * <ul>
 *   <li>The database notifies channel {@code pgtask} when a statement's commit makes a task
 *   claimable: {@code <queue>} for one due now, {@code <queue> <ms>} for the earliest due later, at
 *   most one of each per queue and transaction (the insert trigger, the put-back trigger, the
 *   tenant hand-offs, {@code pgtask.resume_queue}). The listener hands every notification to the
 *   {@link dev.pgtask.internal.wakeup.WakeReceiver}: {@code <queue>} of the worker's queues wakes the
 *   producer at once, {@code <queue> <ms>} sets the due timer, control payloads go to the executor
 *   (cancellation hints) and the scheduler.</li>
 *   <li>A worker's own hand-offs wake only itself ({@link dev.pgtask.internal.wakeup.HandOffWake}):
 *   its completions name its queues in {@code pgtask.worker_queues}, the triggers send no
 *   {@code <queue>} for those, and after its commit the worker wakes its own producer. The claim that
 *   follows carries the spill: if it comes back full and leaves a claimable task behind, it notifies
 *   its queues, so that idle workers take what this one has no room for; after a recent
 *   notification of its queues it holds the spill back and owes it instead
 *   ({@link dev.pgtask.internal.wakeup.SpillPolicy}, {@link dev.pgtask.internal.wakeup.Spills}).</li>
 *   <li>A task this worker puts back due later (a retry, snooze, deferral, or a release with a
 *   delay) sends nothing: the worker's own due timer claims it then, the others' polls if it stops
 *   first. A task put back due now (a stopping worker, a rescue, a lost claim's answer) notifies.</li>
 *   <li>An enqueue that {@code PgTask} commits itself wakes the workers of the same JVM over the same
 *   DataSource at once ({@link dev.pgtask.internal.wakeup.LocalWake}); its notification follows.</li>
 *   <li>The listener wakes the producer when it (re)connects (what was sent meanwhile is lost); the
 *   poll on the listener's session wakes it when a claim would find a task; a maintenance pass that
 *   made tasks claimable wakes it; a starting worker arms its due timer with the upcoming due times.</li>
 * </ul>
 */
package dev.pgtask.internal.wakeup;
