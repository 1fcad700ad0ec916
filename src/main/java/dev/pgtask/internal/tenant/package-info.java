/**
 * Tenant critical sections. Lock-key scheme: a tenant's task runs under
 * {@code pg_try_advisory_xact_lock(namespace, tenant_id)}, the two-int4 form, so pgtask's keys never
 * meet an application's single-bigint keys. {@code namespace} is {@code pgtask.settings.lock_namespace}
 * (0x70677461, "pgta", unless changed); {@code tenant_id} is the tenant's collision-free id from the
 * registry table {@code pgtask.tenant} (never a hash of the name); maintenance passes use the same
 * namespace with negative keys. The lock is taken inside the task's transaction, in the statement
 * that re-locks the task row, so it is released exactly when that transaction ends (or, with commit
 * batching, when it rolls back to the task's savepoint) and can never leak through the pool.
 * Claiming is tenant-aware (see the claim in {@code internal.sql.ClaimQueries} and the head/hand-off
 * triggers of the V1 migration): a tenant has one claimable head task at a time.
 */
package dev.pgtask.internal.tenant;
