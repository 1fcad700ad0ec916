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
    -- its worker is told, so that it interrupts the handler (fenced out, it records nothing)
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
