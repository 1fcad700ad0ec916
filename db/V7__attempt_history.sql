-- Attempt history: one row per attempt that ended other than by completing (failed and retried,
-- discarded, cancelled while it ran, or lost with its worker), with the error's first line and its
-- full text (exception class, message, stack trace and cause chain) as the worker saw it.
--
-- Private, like every table: read it through pgtask.task_attempts and pgtask.task_detail(id)
-- (db/R__05d_task_detail.sql). Written in the statement that records the attempt's outcome on the
-- task row (dev.pgtask.internal.sql.OutcomeQueries, the rescue pass, cancel_task), so a row exists
-- exactly when that outcome was recorded. Completions are not recorded here: their row would be
-- one more insert per task on the completion path (docs/operations.md, "Attempt history").
--
-- Bounds (docs/operations.md): error_detail holds at most 16,384 characters, cut by the worker
-- with a line saying how much was left out; the statement that records an attempt deletes the
-- task's attempts 25 or more numbers older than it, so a task keeps at most its last 25. The rows go
-- with their task (ON DELETE CASCADE): the retention pass, delete_task, delete_tasks and a plain
-- DELETE remove them in the same statement, within the bound of the statement that deletes tasks.
CREATE TABLE pgtask.task_attempt (
  task_id      bigint      NOT NULL,
  attempt      integer     NOT NULL,
  worker       text,                              -- the worker id that ran it (the claim's owner)
  started_at   timestamptz,                       -- when the attempt was claimed (database clock)
  finished_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  outcome      text        NOT NULL,
  error        text,                              -- the error's first line (as in pgtask.tasks.last_error)
  error_detail text,                              -- class, message, stack trace and causes; bounded
  CONSTRAINT task_attempt_pkey PRIMARY KEY (task_id, attempt),
  CONSTRAINT task_attempt_task_fkey FOREIGN KEY (task_id) REFERENCES pgtask.task (id) ON DELETE CASCADE,
  CONSTRAINT task_attempt_outcome CHECK (outcome IN ('failed', 'discarded', 'cancelled', 'worker_lost'))
);
