-- Weighted fair share between the tenants of a queue (pgtask.set_limit('tenant', key, weight => w),
-- db/R__02b_fair_share.sql, docs/how-it-works.md, "Weights").
--
-- pass: a task's place in its queue's virtual time, given when it becomes claimable (inserted as a
-- head, or promoted to one) while some tenant has a weight, NULL otherwise. A tenant's successive
-- heads are 1/weight apart, so of two backlogged tenants with weights 3 and 1, three heads of the
-- first come before each of the second's.
ALTER TABLE pgtask.task ADD COLUMN pass double precision;

-- The claim's order becomes (priority, pass, run_at, id). Without a weight every pass is NULL and
-- the order is exactly the one before: (priority, run_at, id). NULLS FIRST: a task queued before the
-- first weight was set (or while none was) is taken before the tasks given a pass since, never
-- starved by them. Rebuilding the index locks the task table for the length of the build: on a
-- large queue, run this migration in a quiet moment (docs/migration.md).
DROP INDEX pgtask.task_claimable_idx;
CREATE INDEX task_claimable_idx ON pgtask.task (queue, priority, pass NULLS FIRST, run_at, id)
  WHERE state IN ('available', 'retryable') AND NOT blocked;

-- The queued tasks that have a pass: empty without weights (so free for every other task), read
-- when the last weight goes to take the passes away (pgtask.clear_passes_unless_weighted).
CREATE INDEX task_pass_idx ON pgtask.task (id)
  WHERE pass IS NOT NULL AND state IN ('available', 'retryable');
