-- Debounce (pgtask.enqueue(..., dedupe_key => k, debounce => interval)): while a task enqueued with
-- debounce key k has not started, the next such enqueue replaces its payload and moves its run_at
-- to now() + the interval instead of inserting (R__03_enqueue.sql, docs/how-it-works.md,
-- "Debounce").
--
-- A key space of its own, apart from dedupe_key: a debounced task has dedupe_key NULL, so a
-- running debounced task holds no key at all and an enqueue while it runs inserts the next task.
ALTER TABLE pgtask.task ADD COLUMN debounce_key text
  CONSTRAINT task_debounce_key_length CHECK (char_length(debounce_key) BETWEEN 1 AND 255);

-- One task per key that has not started: queued and never claimed. attempted_at is set by the
-- claim and never cleared, so a task leaves this index the moment it first starts and never comes
-- back into it: its retry (retryable), or a put-back that spent no attempt (its tenant was busy,
-- it lost a limit's slot), can never meet the pending task enqueued while it ran. With the index
-- on queued tasks alone, such a worker's outcome write would fail with a unique violation.
-- Rows without a key (all tasks but debounced ones) are not in it: it costs other tasks nothing.
CREATE UNIQUE INDEX task_debounce_key_idx ON pgtask.task (debounce_key)
  WHERE debounce_key IS NOT NULL AND state IN ('available', 'retryable') AND attempted_at IS NULL;
