/**
 * Where a task is claimed: the {@link dev.pgtask.internal.claim.Producer} decides when to claim and
 * how much (woken by {@code internal.wakeup}, bounded by the executor's capacity) and hands what it
 * claimed to the executor. The claim itself is SQL, and so lives with the rest of the SQL:
 * {@code internal.sql.ClaimQueries} runs it, {@code ClaimStatements} builds it, {@code ClaimRows}
 * reads a claimed row by name. The claim protocol: one statement marks up to N tasks
 * {@code running} with attempt + 1, this worker as owner and a first lease, skipping the tenants
 * with a running task and the paused queues, and commits; into an idle worker it also re-locks the
 * first transactional task in a new transaction ({@code claimAndStart}), which the executor adopts.
 */
package dev.pgtask.internal.claim;
