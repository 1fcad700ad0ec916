-- Dependencies (docs/how-it-works.md, "Dependencies"): a task may name parent tasks it waits for.
-- It is stored as 'pending' (a state of its own, not the tenant's "waiting", which is the column
-- blocked) until its last parent completes; the statement that finishes that parent releases it
-- in the same transaction (db/R__03b_dependencies.sql). A pending task is in no index of the
-- claim path: task_claimable_idx, task_tenant_head_idx and task_tenant_waiting_idx only hold
-- queued, running or blocked rows, so pending children cost the claim and the tenant hand-off
-- nothing.
--
-- ADD VALUE runs inside this migration's transaction (PostgreSQL 12 and later); the new value is
-- only used by the repeatable migrations, which Flyway applies in transactions of their own after
-- this one committed.
ALTER TYPE pgtask.task_state ADD VALUE IF NOT EXISTS 'pending' BEFORE 'available';

ALTER TABLE pgtask.task
  -- true once a child named this task as a parent: the row triggers that resolve children fire
  -- only for such tasks (their WHEN clause reads it without a function call), so a task nobody
  -- depends on pays nothing when it finishes
  ADD COLUMN has_children boolean NOT NULL DEFAULT false,
  -- a pending task's parents that have not completed yet (nor failed under policy 'run'); NULL
  -- for a task enqueued without parents. Decremented by each completing parent; 0 releases.
  ADD COLUMN parents_pending integer
    CONSTRAINT task_parents_pending_range CHECK (parents_pending >= 0),
  -- a completed task's result, set by its handler (TaskContext.setResult): a small JSON value,
  -- at most 64 KiB of JSON text, readable by its children (pgtask.parent_results)
  ADD COLUMN result jsonb
    CONSTRAINT task_result_size CHECK (octet_length(result::text) <= 65536);

-- One row per (child, parent). Private, like every table: read through pgtask.parent_results and
-- pgtask.explain_task. The rows go with their child (ON DELETE CASCADE); a parent may be deleted
-- without its rows (no foreign key: retention deletes tasks in bulk), its outcome is kept here.
CREATE TABLE pgtask.task_dependency (
  child_id     bigint NOT NULL,
  parent_id    bigint NOT NULL,
  -- what a failed parent (discarded, cancelled, or deleted before it finished) does to the child:
  -- cancel it (and its own children), let it run as if the parent had completed, or hold it
  -- pending for an operator (pgtask.release_task runs it, pgtask.cancel_task cancels it)
  on_failure   text   NOT NULL DEFAULT 'cancel'
    CONSTRAINT task_dependency_on_failure CHECK (on_failure IN ('cancel', 'run', 'wait')),
  -- the parent's final outcome once it had one (NULL while it has not finished)
  parent_state text
    CONSTRAINT task_dependency_parent_state CHECK (parent_state IN ('completed', 'cancelled', 'discarded', 'deleted')),
  CONSTRAINT task_dependency_pkey PRIMARY KEY (child_id, parent_id),
  CONSTRAINT task_dependency_child_fkey FOREIGN KEY (child_id) REFERENCES pgtask.task (id) ON DELETE CASCADE
);

-- A finishing parent finds its children here: one probe per parent, whatever the number of
-- siblings a child has (fan-in costs each parent's completion O(its own children)).
CREATE INDEX task_dependency_parent_idx ON pgtask.task_dependency (parent_id);
