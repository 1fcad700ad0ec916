-- Operations on single tasks, for applications (through the Java API) and operators (SQL, CLI).
--
-- None of them ever waits for a running task: each takes the task's row lock with NOWAIT. The
-- executing worker holds that lock for the whole task transaction, so an operation that would
-- change a running task fails at once with SQLSTATE 55P03 and a message naming the task, its
-- worker and since when. A plain SQL UPDATE or DELETE of a running task, by contrast, waits for
-- the task's transaction to end: that lock is what keeps the row from changing under the handler.
--
-- Errors: P0002 (no such task), 55000 (the task's state does not allow the operation),
-- 55P03 (running, or locked by another transaction right now).

-- Locks the task row without waiting, or raises the right error. Returns the locked row.
CREATE OR REPLACE FUNCTION pgtask.lock_task_nowait(p_id bigint, p_operation text) RETURNS pgtask.task
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_task pgtask.task;
BEGIN
  BEGIN
    SELECT * INTO v_task FROM pgtask.task WHERE id = p_id FOR UPDATE NOWAIT;
  EXCEPTION WHEN lock_not_available THEN
    SELECT * INTO v_task FROM pgtask.task WHERE id = p_id;
    IF v_task.state = 'running' THEN
      RAISE EXCEPTION 'pgtask: task % is running on worker % since %: cannot % it',
        p_id, v_task.owner, v_task.attempted_at, p_operation
        USING ERRCODE = 'lock_not_available';
    END IF;
    RAISE EXCEPTION 'pgtask: cannot % task %: another transaction holds it right now (being claimed or changed); try again',
      p_operation, p_id
      USING ERRCODE = 'lock_not_available';
  END;
  IF v_task.id IS NULL THEN
    RAISE EXCEPTION 'pgtask: cannot % task %: no such task', p_operation, p_id USING ERRCODE = 'no_data_found';
  END IF;
  RETURN v_task;
END
$$;

-- Cancels a task. A queued task (scheduled, available, retryable) becomes cancelled at once:
-- returns 'cancelled'. A running task is told to stop: the request is written to
-- pgtask.cancel_request for the running attempt (a notification alone is lost when the worker is
-- not listening at that moment) and its worker gets a control notification, a hint on which it
-- reads the request back from pgtask.cancel_request (anyone may NOTIFY; only this function writes
-- requests); it interrupts the handler, rolls back to the task's savepoint and marks it cancelled
-- under the task's locks: returns 'cancel_requested' (watch the task's state). A task marked running whose worker holds no lock on it (a plain-mode handler,
-- which runs outside any transaction, or a task claimed and not started yet) is cancelled at once,
-- and its worker is told too, so that it interrupts the handler; the worker's fenced statements
-- then find nothing to change. The payload "cancel <task id> <attempt>" is the one the worker's
-- listener decodes (dev.pgtask.internal.wakeup.WakePayload; db/R__02a_wakeup.sql has the others).
CREATE OR REPLACE FUNCTION pgtask.cancel_task(task_id bigint) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_task pgtask.task;
BEGIN
  BEGIN
    SELECT * INTO v_task FROM pgtask.lock_task_nowait(cancel_task.task_id, 'cancel');
  EXCEPTION WHEN lock_not_available THEN
    SELECT * INTO v_task FROM pgtask.task WHERE id = cancel_task.task_id;
    IF v_task.state = 'running' THEN
      INSERT INTO pgtask.cancel_request AS r (task_id, attempt) VALUES (v_task.id, v_task.attempt)
      ON CONFLICT ON CONSTRAINT cancel_request_pkey
      DO UPDATE SET attempt = excluded.attempt, requested_at = excluded.requested_at;
      PERFORM pg_notify('pgtask_control', 'cancel ' || v_task.id || ' ' || v_task.attempt);
      RETURN 'cancel_requested';
    END IF;
    RAISE;
  END;
  IF v_task.state IN ('completed', 'cancelled', 'discarded') THEN
    RAISE EXCEPTION 'pgtask: cannot cancel task %: it is already %', cancel_task.task_id, v_task.state
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  UPDATE pgtask.task
  SET state = 'cancelled', blocked = false, finished_at = clock_timestamp(), lease_until = NULL,
      errors = coalesce(errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
        'attempt', attempt, 'at', clock_timestamp(), 'error', 'cancelled', 'worker', owner))
  WHERE id = cancel_task.task_id;
  IF v_task.state = 'running' THEN
    -- running without a row lock: a plain-mode handler (or a task claimed and not yet started);
    -- its worker is told, so that it interrupts the handler (fenced out, it records nothing), and
    -- the attempt that ends here is recorded in the attempt history (db/V7__attempt_history.sql)
    INSERT INTO pgtask.task_attempt AS a (task_id, attempt, worker, started_at, finished_at, outcome, error)
    VALUES (v_task.id, v_task.attempt, v_task.owner, v_task.attempted_at, clock_timestamp(), 'cancelled', 'cancelled')
    ON CONFLICT ON CONSTRAINT task_attempt_pkey
    DO UPDATE SET worker = excluded.worker, started_at = excluded.started_at, finished_at = excluded.finished_at,
                  outcome = excluded.outcome, error = excluded.error, error_detail = excluded.error_detail;
    PERFORM pg_notify('pgtask_control', 'cancel ' || v_task.id || ' ' || v_task.attempt);
  END IF;
  RETURN 'cancelled';
END
$$;

-- Makes a failed or cancelled task (retryable, discarded, cancelled) available now, with at least
-- one attempt left.
CREATE OR REPLACE FUNCTION pgtask.retry_task(task_id bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_task pgtask.task;
BEGIN
  v_task := pgtask.lock_task_nowait(retry_task.task_id, 'retry');
  IF v_task.state NOT IN ('retryable', 'discarded', 'cancelled') THEN
    RAISE EXCEPTION 'pgtask: cannot retry task %: it is %; only retryable, discarded or cancelled tasks can be retried',
      retry_task.task_id, CASE WHEN v_task.state = 'available' AND v_task.run_at > now() THEN 'scheduled' ELSE v_task.state::text END
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  BEGIN
    UPDATE pgtask.task
    SET state = 'available', blocked = false, run_at = now(), finished_at = NULL, owner = NULL, lease_until = NULL,
        max_attempts = greatest(max_attempts, attempt + 1)
    WHERE id = retry_task.task_id;
  EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgtask: cannot retry task %: another unfinished task holds its dedupe key', retry_task.task_id
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END;
END
$$;

-- Deletes a task that is not running.
CREATE OR REPLACE FUNCTION pgtask.delete_task(task_id bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_task pgtask.task;
BEGIN
  v_task := pgtask.lock_task_nowait(delete_task.task_id, 'delete');
  IF v_task.state = 'running' THEN
    -- marked running but unlocked: its worker is gone or about to start it; rescue owns it
    RAISE EXCEPTION 'pgtask: task % is running on worker % since %: cannot delete it; cancel it first',
      delete_task.task_id, v_task.owner, v_task.attempted_at
      USING ERRCODE = 'lock_not_available';
  END IF;
  DELETE FROM pgtask.task WHERE id = delete_task.task_id;
END
$$;

-- Changes the payload, run_at and/or priority of a queued task (scheduled, available, retryable).
-- NULL arguments leave the field unchanged. The payload and run_at follow the enqueue rules.
CREATE OR REPLACE FUNCTION pgtask.update_task(task_id bigint, payload jsonb DEFAULT NULL, run_at timestamptz DEFAULT NULL,
                                   priority integer DEFAULT NULL) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_task pgtask.task;
  v_error text;
BEGIN
  v_task := pgtask.lock_task_nowait(update_task.task_id, 'update');
  IF v_task.state NOT IN ('available', 'retryable') THEN
    RAISE EXCEPTION 'pgtask: cannot update task %: it is %; only queued tasks can be changed',
      update_task.task_id, v_task.state
      USING ERRCODE = CASE WHEN v_task.state = 'running' THEN 'lock_not_available' ELSE 'object_not_in_prerequisite_state' END;
  END IF;
  IF update_task.payload IS NOT NULL THEN
    v_error := pgtask.task_input_error(v_task.kind, update_task.payload, v_task.queue, NULL, v_task.max_attempts,
      NULL, (SELECT s.max_payload_bytes FROM pgtask.settings s));
    IF v_error IS NOT NULL THEN
      PERFORM pgtask.raise_input_error(v_error, 'task ' || update_task.task_id);
    END IF;
  END IF;
  v_error := pgtask.run_at_error(update_task.run_at);
  IF v_error IS NOT NULL THEN
    PERFORM pgtask.raise_input_error(v_error, 'task ' || update_task.task_id);
  END IF;
  -- A waiting task given a run_at is decided again as an insert decides it: it stays waiting only
  -- while its tenant has a head in its queue that is running or due no later. Moved earlier than
  -- every head (one scheduled later, say), it becomes another head instead of waiting behind it.
  UPDATE pgtask.task t
  SET payload = coalesce(update_task.payload, t.payload),
      run_at = coalesce(update_task.run_at, t.run_at),
      priority = coalesce(update_task.priority, t.priority),
      blocked = CASE WHEN t.blocked AND update_task.run_at IS NOT NULL THEN EXISTS (
                  SELECT 1 FROM pgtask.task h
                  WHERE h.tenant_id = t.tenant_id AND h.queue = t.queue AND NOT h.blocked
                    AND h.state IN ('available', 'retryable', 'running')
                    AND (h.state = 'running' OR h.run_at <= update_task.run_at))
                ELSE t.blocked END
  WHERE t.id = update_task.task_id;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- Operations on every task a filter matches: retry_tasks, cancel_tasks, delete_tasks
-- ---------------------------------------------------------------------------------------------
-- Each is ONE set-based statement that changes what the single-task operation above would change,
-- under the same rules, and skips the rest instead of failing: a task in a state the operation
-- cannot change, and a task another transaction holds locked right now (being claimed, changed, or
-- executed; SKIP LOCKED), never waiting for it. They return one row per state (as pgtask.tasks
-- names it, task_state) of the matched tasks: how many were changed and how many skipped. With dry_run they
-- change nothing and lock nothing, and count what the operation would change by the tasks' states
-- now (a task another transaction holds at the moment of the real run is skipped then). Kind, tenant,
-- error and time filters have no index: an operation reads the task table once.
--
-- The filters, all optional but at least one required (a forgotten filter must not retry, cancel
-- or delete every task): kind, queue, state (as pgtask.tasks names it: scheduled, waiting,
-- available, running, retryable, completed, cancelled, discarded), tenant (its name), error_like
-- (a LIKE pattern over last_error, the last entry of the task's error history; a completed task
-- has none), since (a positive interval: tasks whose last activity, when they finished, else
-- when their last attempt started, else when they were enqueued, lies within it, by the database
-- clock) and the range active_from (inclusive) .. active_until (exclusive) of instants that last
-- activity lies in (either end may be left open). A bad filter is refused with SQLSTATE 22023 and
-- the constraint name task_filter_required, task_filter_state, task_filter_since or
-- task_filter_range (active_from not before active_until).

-- Refuses a time range whose start is not before its end (SQLSTATE 22023, constraint
-- task_filter_range); true otherwise, so that a read can use it as a condition checked once.
CREATE OR REPLACE FUNCTION pgtask.check_task_range(p_action text, p_from timestamptz, p_until timestamptz)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_from IS NOT NULL AND p_until IS NOT NULL AND p_from >= p_until THEN
    RAISE EXCEPTION 'pgtask: cannot % tasks: active_from must be before active_until (got % and %)',
      p_action, p_from, p_until USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'task_filter_range';
  END IF;
  RETURN true;
END
$$;

-- Refuses a bad filter of a bulk operation (see above).
CREATE OR REPLACE FUNCTION pgtask.check_task_filter(p_action text, p_kind text, p_queue text, p_state text,
    p_tenant text, p_error_like text, p_since interval, p_from timestamptz, p_until timestamptz) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_kind IS NULL AND p_queue IS NULL AND p_state IS NULL AND p_tenant IS NULL AND p_error_like IS NULL
     AND p_since IS NULL AND p_from IS NULL AND p_until IS NULL THEN
    RAISE EXCEPTION 'pgtask: cannot % tasks without a filter: give at least one of kind, queue, state, tenant, error_like, since, active_from, active_until',
      p_action USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'task_filter_required';
  END IF;
  IF p_state IS NOT NULL AND p_state NOT IN ('pending', 'scheduled', 'waiting', 'available', 'running', 'retryable', 'completed',
                                              'cancelled', 'discarded') THEN
    RAISE EXCEPTION 'pgtask: cannot % tasks: "%" is not a task state; use one of pending, scheduled, waiting, available, running, retryable, completed, cancelled, discarded',
      p_action, left(p_state, 100) USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'task_filter_state';
  END IF;
  IF p_since IS NOT NULL AND p_since <= interval '0' THEN
    RAISE EXCEPTION 'pgtask: cannot % tasks: since must be a positive interval, e.g. interval ''1 hour'' (got %)',
      p_action, p_since USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'task_filter_since';
  END IF;
  PERFORM pgtask.check_task_range(p_action, p_from, p_until);
END
$$;
SELECT pgtask.replace_function('pgtask.check_task_filter(text, text, text, text, text, text, interval)',
  'pgtask.check_task_filter(text, text, text, text, text, text, interval, timestamptz, timestamptz)');

-- The tasks a bulk operation's filters match (see above), with their state as operators name it.
-- Locks: none (the operations lock what they change themselves).
CREATE OR REPLACE FUNCTION pgtask.filter_tasks(p_kind text, p_queue text, p_state text, p_tenant text,
    p_error_like text, p_since interval, p_from timestamptz, p_until timestamptz)
RETURNS TABLE (id bigint, op_state text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT f.id, f.op_state
  FROM (
    SELECT t.id, CASE WHEN t.blocked THEN 'waiting' WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled'
                      ELSE t.state::text END AS op_state
    FROM pgtask.task t
    WHERE (p_kind IS NULL OR t.kind = p_kind)
      AND (p_queue IS NULL OR t.queue = p_queue)
      AND (p_tenant IS NULL OR t.tenant_id = (SELECT tn.id FROM pgtask.tenant tn WHERE tn.name = p_tenant))
      AND (p_error_like IS NULL OR (t.state <> 'completed' AND (t.errors -> -1 ->> 'error') LIKE p_error_like))
      AND (p_since IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= now() - p_since)
      AND (p_from IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= p_from)
      AND (p_until IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) < p_until)
  ) f
  WHERE p_state IS NULL OR f.op_state = p_state
$$;
SELECT pgtask.replace_function('pgtask.filter_tasks(text, text, text, text, text, interval)',
  'pgtask.filter_tasks(text, text, text, text, text, interval, timestamptz, timestamptz)');

-- Retries every matched task that retry_task would retry: retryable, discarded or cancelled, made
-- available now with at least one attempt left. A retried task of a tenant waits behind its
-- tenant's head in its queue when there is one (a retryable task keeps its place), so retrying many
-- tasks of one tenant gives it one head, not many. Skipped: tasks in other states, tasks another
-- transaction holds, and a finished task whose dedupe key another unfinished task holds (or another
-- retried task with a lower id takes).
CREATE OR REPLACE FUNCTION pgtask.retry_tasks(kind text DEFAULT NULL, queue text DEFAULT NULL, state text DEFAULT NULL,
    tenant text DEFAULT NULL, error_like text DEFAULT NULL, since interval DEFAULT NULL, dry_run boolean DEFAULT false,
    active_from timestamptz DEFAULT NULL, active_until timestamptz DEFAULT NULL)
RETURNS TABLE (task_state text, changed bigint, skipped bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  p_dry boolean := coalesce(retry_tasks.dry_run, false);
BEGIN
  PERFORM pgtask.check_task_filter('retry', retry_tasks.kind, retry_tasks.queue, retry_tasks.state, retry_tasks.tenant,
    retry_tasks.error_like, retry_tasks.since, retry_tasks.active_from, retry_tasks.active_until);
  BEGIN
    RETURN QUERY
    WITH m AS (
      SELECT f.id, f.op_state FROM pgtask.filter_tasks(retry_tasks.kind, retry_tasks.queue, retry_tasks.state,
        retry_tasks.tenant, retry_tasks.error_like, retry_tasks.since, retry_tasks.active_from, retry_tasks.active_until) f
    ), c AS (
      -- what retry_task may retry, ranked per tenant and queue (finished ones) and per dedupe key
      SELECT t.id, t.state AS was,
             row_number() OVER (PARTITION BY t.tenant_id, t.queue, t.state = 'retryable' ORDER BY t.priority, t.id) AS tenant_rank,
             row_number() OVER (PARTITION BY t.dedupe_key ORDER BY t.id) AS key_rank, t.dedupe_key
      FROM pgtask.task t JOIN m ON m.id = t.id
      WHERE t.state IN ('retryable', 'discarded', 'cancelled')
    ), ok AS (
      SELECT c.id, c.was, c.tenant_rank FROM c
      WHERE c.was = 'retryable' OR c.dedupe_key IS NULL
         OR (c.key_rank = 1 AND NOT EXISTS (SELECT 1 FROM pgtask.task o WHERE o.dedupe_key = c.dedupe_key
                                            AND o.state IN ('available', 'retryable', 'running')))
    ), l AS (
      SELECT t.id FROM pgtask.task t
      WHERE t.id IN (SELECT ok.id FROM ok) AND t.state IN ('retryable', 'discarded', 'cancelled') AND NOT p_dry
      FOR NO KEY UPDATE SKIP LOCKED
    ), u AS (
      UPDATE pgtask.task t
      SET state = 'available', run_at = now(), finished_at = NULL, owner = NULL, lease_until = NULL,
          max_attempts = greatest(t.max_attempts, t.attempt + 1),
          blocked = CASE WHEN ok.was = 'retryable' THEN t.blocked
                         WHEN t.tenant_id IS NULL THEN false
                         ELSE ok.tenant_rank > 1 OR EXISTS (
                           SELECT 1 FROM pgtask.task h
                           WHERE h.tenant_id = t.tenant_id AND h.queue = t.queue AND NOT h.blocked
                             AND h.state IN ('available', 'retryable', 'running')) END
      FROM ok
      WHERE t.id = ok.id AND t.id IN (SELECT l.id FROM l)
      RETURNING t.id
    )
    SELECT m.op_state,
           count(*) FILTER (WHERE CASE WHEN p_dry THEN m.id IN (SELECT ok.id FROM ok) ELSE m.id IN (SELECT u.id FROM u) END),
           count(*) FILTER (WHERE NOT CASE WHEN p_dry THEN m.id IN (SELECT ok.id FROM ok) ELSE m.id IN (SELECT u.id FROM u) END)
    FROM m GROUP BY m.op_state ORDER BY m.op_state;
  EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgtask: cannot retry tasks: another unfinished task took the dedupe key of a task being retried meanwhile; nothing was retried, run it again'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END;
END
$$;
SELECT pgtask.replace_function('pgtask.retry_tasks(text, text, text, text, text, interval, boolean)',
  'pgtask.retry_tasks(text, text, text, text, text, interval, boolean, timestamptz, timestamptz)');

-- Cancels every matched task that cancel_task would cancel, as cancel_task does: a queued one
-- (scheduled, waiting, available, retryable) at once; a running one whose row its executing worker
-- holds is asked to stop (a cancel request for the running attempt and a control notification: its
-- worker interrupts the handler and rolls it back), never rewritten under its worker; a running one
-- that no transaction holds (a plain-mode handler, or a task claimed and not started) is cancelled at
-- once, its attempt recorded as cancelled, and its worker told. changed counts both. Skipped:
-- finished tasks, and queued ones another transaction holds right now.
CREATE OR REPLACE FUNCTION pgtask.cancel_tasks(kind text DEFAULT NULL, queue text DEFAULT NULL, state text DEFAULT NULL,
    tenant text DEFAULT NULL, error_like text DEFAULT NULL, since interval DEFAULT NULL, dry_run boolean DEFAULT false,
    active_from timestamptz DEFAULT NULL, active_until timestamptz DEFAULT NULL)
RETURNS TABLE (task_state text, changed bigint, skipped bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  p_dry boolean := coalesce(cancel_tasks.dry_run, false);
BEGIN
  PERFORM pgtask.check_task_filter('cancel', cancel_tasks.kind, cancel_tasks.queue, cancel_tasks.state,
    cancel_tasks.tenant, cancel_tasks.error_like, cancel_tasks.since, cancel_tasks.active_from, cancel_tasks.active_until);
  RETURN QUERY
  WITH m AS (
    SELECT f.id, f.op_state, t.state AS was, t.attempt
    FROM pgtask.filter_tasks(cancel_tasks.kind, cancel_tasks.queue, cancel_tasks.state, cancel_tasks.tenant,
      cancel_tasks.error_like, cancel_tasks.since, cancel_tasks.active_from, cancel_tasks.active_until) f
    JOIN pgtask.task t ON t.id = f.id
  ), l AS (
    SELECT t.id, t.state AS was FROM pgtask.task t
    WHERE t.id IN (SELECT m.id FROM m WHERE m.was IN ('pending', 'available', 'retryable', 'running'))
      AND t.state IN ('pending', 'available', 'retryable', 'running') AND NOT p_dry
    FOR NO KEY UPDATE SKIP LOCKED
  ), busy AS (
    -- running, and its row held: by its executing worker
    SELECT m.id, m.attempt FROM m WHERE m.was = 'running' AND NOT p_dry AND m.id NOT IN (SELECT l.id FROM l)
  ), req AS (
    INSERT INTO pgtask.cancel_request AS r (task_id, attempt)
    SELECT busy.id, busy.attempt FROM busy
    ON CONFLICT ON CONSTRAINT cancel_request_pkey
    DO UPDATE SET attempt = excluded.attempt, requested_at = excluded.requested_at
    RETURNING r.task_id, r.attempt
  ), u AS (
    UPDATE pgtask.task t
    SET state = 'cancelled', blocked = false, finished_at = clock_timestamp(), lease_until = NULL,
        errors = coalesce(t.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
          'attempt', t.attempt, 'at', clock_timestamp(), 'error', 'cancelled', 'worker', t.owner))
    FROM l
    WHERE t.id = l.id
    RETURNING t.id, l.was, t.attempt, t.owner, t.attempted_at
  ), att AS (
    -- the attempt of a running task cancelled at once ends here, recorded as cancel_task records it
    INSERT INTO pgtask.task_attempt AS a (task_id, attempt, worker, started_at, finished_at, outcome, error)
    SELECT u.id, u.attempt, u.owner, u.attempted_at, clock_timestamp(), 'cancelled', 'cancelled' FROM u WHERE u.was = 'running'
    ON CONFLICT ON CONSTRAINT task_attempt_pkey
    DO UPDATE SET worker = excluded.worker, started_at = excluded.started_at, finished_at = excluded.finished_at,
                  outcome = excluded.outcome, error = excluded.error, error_detail = excluded.error_detail
    RETURNING a.task_id
  ), told AS (
    -- their workers are told (the payload WakePayload decodes), after the writes above, in this transaction
    SELECT count(pg_notify('pgtask_control', 'cancel ' || x.id || ' ' || x.attempt)) AS n
    FROM (SELECT req.task_id AS id, req.attempt FROM req
          UNION ALL SELECT u.id, u.attempt FROM u WHERE u.was = 'running') x
  )
  SELECT m.op_state,
         count(*) FILTER (WHERE CASE WHEN p_dry THEN m.was IN ('pending', 'available', 'retryable', 'running')
                                     ELSE m.id IN (SELECT u.id FROM u) OR m.id IN (SELECT req.task_id FROM req) END),
         count(*) FILTER (WHERE NOT CASE WHEN p_dry THEN m.was IN ('pending', 'available', 'retryable', 'running')
                                         ELSE m.id IN (SELECT u.id FROM u) OR m.id IN (SELECT req.task_id FROM req) END)
  FROM m CROSS JOIN told -- read, so that the notifications are sent (the writing CTEs run in any case)
  GROUP BY m.op_state ORDER BY m.op_state;
END
$$;
SELECT pgtask.replace_function('pgtask.cancel_tasks(text, text, text, text, text, interval, boolean)',
  'pgtask.cancel_tasks(text, text, text, text, text, interval, boolean, timestamptz, timestamptz)');

-- Deletes every matched task that delete_task would delete: every task that is not running (a
-- running one must be cancelled first). Its attempt history goes with it. Skipped: running tasks,
-- and tasks another transaction holds right now.
CREATE OR REPLACE FUNCTION pgtask.delete_tasks(kind text DEFAULT NULL, queue text DEFAULT NULL, state text DEFAULT NULL,
    tenant text DEFAULT NULL, error_like text DEFAULT NULL, since interval DEFAULT NULL, dry_run boolean DEFAULT false,
    active_from timestamptz DEFAULT NULL, active_until timestamptz DEFAULT NULL)
RETURNS TABLE (task_state text, changed bigint, skipped bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  p_dry boolean := coalesce(delete_tasks.dry_run, false);
BEGIN
  PERFORM pgtask.check_task_filter('delete', delete_tasks.kind, delete_tasks.queue, delete_tasks.state,
    delete_tasks.tenant, delete_tasks.error_like, delete_tasks.since, delete_tasks.active_from, delete_tasks.active_until);
  RETURN QUERY
  WITH m AS (
    SELECT f.id, f.op_state FROM pgtask.filter_tasks(delete_tasks.kind, delete_tasks.queue, delete_tasks.state,
      delete_tasks.tenant, delete_tasks.error_like, delete_tasks.since, delete_tasks.active_from, delete_tasks.active_until) f
  ), l AS (
    SELECT t.id FROM pgtask.task t
    WHERE t.id IN (SELECT m.id FROM m WHERE m.op_state <> 'running') AND t.state <> 'running' AND NOT p_dry
    FOR UPDATE SKIP LOCKED
  ), d AS (
    DELETE FROM pgtask.task t USING l WHERE t.id = l.id RETURNING t.id
  )
  SELECT m.op_state,
         count(*) FILTER (WHERE CASE WHEN p_dry THEN m.op_state <> 'running' ELSE m.id IN (SELECT d.id FROM d) END),
         count(*) FILTER (WHERE NOT CASE WHEN p_dry THEN m.op_state <> 'running' ELSE m.id IN (SELECT d.id FROM d) END)
  FROM m GROUP BY m.op_state ORDER BY m.op_state;
END
$$;
SELECT pgtask.replace_function('pgtask.delete_tasks(text, text, text, text, text, interval, boolean)',
  'pgtask.delete_tasks(text, text, text, text, text, interval, boolean, timestamptz, timestamptz)');

-- On an upgrade R__06_privileges does not run again (its text is unchanged), and a function is
-- executable by PUBLIC when created: the functions this file created take it back here, as every
-- function of the schema does in R__06 on a new install.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA pgtask FROM PUBLIC;
