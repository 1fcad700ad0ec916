/**
 * The cluster's maintenance: one class per pass, one driver.
 *
 * <p><b>Who runs it.</b> One worker at a time, the maintenance leader: the holder of the lease row
 * {@code pgtask.maintenance_lease} (its expiry on the database's clock, never a session lock;
 * {@link dev.pgtask.internal.maintenance.LeaderLease}). Every worker ticks every beat
 * ({@link dev.pgtask.internal.maintenance.Maintenance#beatInterval}: the rescue interval, at most
 * 10 s and at most a third of the claim lease) with one statement that refreshes its heartbeat and
 * takes the lease when it has expired ({@code pgtask.maintenance_turn}); the holder renews it for
 * three beats at each tick. A dead or frozen holder is replaced when its lease has expired, at the
 * next tick of another worker: within four beats of its last renewal. Every pass of the leader
 * starts its transaction with the same statement and runs only when it returned the lease, so a
 * leader that was frozen past its lease finds out before it runs a pass; the lease row stays locked
 * by that transaction until the pass ends, so no other worker takes the lease in the middle of one.
 *
 * <p><b>One transaction, written once.</b>
 * {@link dev.pgtask.internal.maintenance.PassTransaction}: server-side bounds from the first
 * statement ({@code TxBounds}), the pass's cluster-wide lock
 * ({@link dev.pgtask.internal.maintenance.PassLock}), the lease's turn for the leader's passes, the
 * pass's statements ({@link dev.pgtask.internal.maintenance.PassStatements#run}), commit, then the
 * turn's answer and the pass's after-commit step
 * ({@link dev.pgtask.internal.maintenance.PassStatements#committed}). On a pool connection, or in a
 * round of the listener's session for the tick (then what needs the pool is handed to the
 * maintenance thread).
 *
 * <p><b>The passes</b>, each a {@link dev.pgtask.internal.maintenance.MaintenancePass} with its own
 * small config and a {@code runOnce()} hook:
 * <ul>
 *   <li>{@link dev.pgtask.internal.maintenance.Tick}: every beat, heartbeat and lease; the leader's
 *       carries the {@link dev.pgtask.internal.maintenance.RescueRound} when due (every rescue
 *       interval, at once when it takes the lease);</li>
 *   <li>{@link dev.pgtask.internal.maintenance.RescuePass}: expired claims whose row no live
 *       transaction holds become retryable (or discarded, or cancelled) again; stale cancel requests
 *       go;</li>
 *   <li>{@link dev.pgtask.internal.maintenance.TenantRepairPass}: headless (tenant, queue) pairs get
 *       a head (in the rescue round);</li>
 *   <li>{@link dev.pgtask.internal.maintenance.VacuumPass} and
 *       {@link dev.pgtask.internal.maintenance.AnalyzePass}: after a round whose read of the task
 *       table calls for them;</li>
 *   <li>{@link dev.pgtask.internal.maintenance.RetentionPass}: finished tasks past their retention,
 *       in batches, every 30 s or half the shorter retention; its first batch carries the
 *       {@link dev.pgtask.internal.maintenance.StaleWorkerPass} and, every 30 s, the
 *       {@link dev.pgtask.internal.maintenance.UnhandledKindsPass};</li>
 *   <li>{@link dev.pgtask.internal.maintenance.QueueSamplePass}: every worker with metrics, every
 *       15 s.</li>
 * </ul>
 * Passes run on demand ({@code Maintenance.runNow}, any worker) take turns with the leader's
 * through the pass locks. The SQL stays in {@code internal.sql.MaintenanceQueries}.
 */
package dev.pgtask.internal.maintenance;
