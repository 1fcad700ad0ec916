/**
 * The leases of the tasks this worker holds, and the checks that keep what it holds true to the
 * database.
 *
 * <p>The fencing rule: the claim sets a task's first lease; every later renewal goes through
 * {@link dev.pgtask.internal.lease.Leases}, the only caller of
 * {@link dev.pgtask.internal.sql.LeaseQueries#extendLeases}, and is fenced by (id, owner, attempt,
 * {@code running}), so it succeeds only for a claim that is still this worker's. Its answer is
 * applied only once the renewal is durable: the renewed tasks' lease instant (as of the send) and a
 * stop request for each cancel request found. A task a renewal does not find is not lost by that
 * alone (its row may have been locked for a moment): only the durable held-task check
 * ({@link dev.pgtask.internal.sql.HeldQueries#checkHeld}) decides it is gone.
 *
 * <p>{@link dev.pgtask.internal.lease.LeaseKeeper} decides when: every third of the lease, on the
 * listener's session while it renews, through the pool otherwise, and a held-task check on each
 * renewal, poll, reconnect and cancellation hint (at most one per 20 ms). It sees the registry of
 * held tasks only through {@link dev.pgtask.internal.lease.HeldRegistry}, and a task only through the
 * public surface of {@link dev.pgtask.internal.executor.LocalTask}: a lease instant and stop requests,
 * never its state.
 */
package dev.pgtask.internal.lease;
