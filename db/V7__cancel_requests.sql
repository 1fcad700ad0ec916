-- Durable cancel requests. cancel_task cannot change a task whose row its worker holds locked, so
-- it asks that worker with a notification. A notification is lost when the worker is not listening
-- at that moment (its listener is still connecting, or reconnecting), and the task would then run
-- on as if nobody had asked. The request is therefore also written down here, for the attempt that
-- was running: the worker reads the requests for its tasks each time its listener (re)connects,
-- and a run that ends any other way than by completing (its handler fails, it is released, it
-- snoozes, or its worker dies and the rescue pass finds it) ends the task cancelled instead of
-- queueing it again. Requests whose attempt is no longer running are deleted by the rescue pass.
-- A running task whose row is not locked (a plain-mode handler, which runs outside any
-- transaction) is cancelled at once as before, and now its worker is also told, so that it
-- interrupts the handler.
CREATE TABLE pgtask.cancel_request (
  task_id      bigint      PRIMARY KEY,          -- pgtask.task(id); no FK: retention deletes tasks in bulk
  attempt      integer     NOT NULL,             -- the attempt that was running when it was asked
  requested_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE OR REPLACE FUNCTION pgtask.cancel_task(task_id bigint) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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

-- pgtask.running shows a cancellation asked of the running attempt and not yet carried out.
CREATE OR REPLACE VIEW pgtask.running AS
SELECT t.id AS task_id, t.kind, t.queue, tn.name AS tenant, t.owner AS worker, a.pid AS backend_pid,
       coalesce(a.xact_start, t.attempted_at) AS started_at,
       greatest(clock_timestamp() - coalesce(a.xact_start, t.attempted_at), interval '0') AS running_for,
       EXISTS (
         SELECT 1 FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.pid = a.pid AND l.objsubid = 2
           AND l.classid = pgtask.lock_namespace_oid() AND l.objid = t.tenant_id::text::oid) AS holds_tenant_lock,
       (SELECT r.requested_at FROM pgtask.cancel_request r
        WHERE r.task_id = t.id AND r.attempt = t.attempt) AS cancel_requested_at
FROM pgtask.task t
LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id
LEFT JOIN pg_stat_activity a
  ON a.datname = current_database()
 AND a.application_name LIKE 'pgtask task %'
 AND split_part(a.application_name, ' ', 3) = t.id::text
WHERE t.state = 'running';
