-- What an operator reads about one task: its attempt history (pgtask.task_attempts) and the whole
-- task at once (pgtask.task_detail): payload, state, attempts with their errors, and why it is or
-- is not running (pgtask.explain_task_json). Owner-only, like every other function and view
-- (db/R__06_privileges.sql). See docs/operations.md, "One task: show".

-- Every recorded attempt (db/V7__attempt_history.sql): the ones that failed, were discarded, were
-- cancelled while they ran, or were lost with their worker; a task keeps its last 25. duration is
-- from the attempt's claim to its end. error is the first line, error_detail the full text (class,
-- message, stack trace and causes, at most 16,384 characters, cut with a last line saying so).
CREATE OR REPLACE VIEW pgtask.task_attempts AS
SELECT a.task_id, a.attempt, a.outcome, a.worker, a.started_at, a.finished_at,
       a.finished_at - a.started_at AS duration, a.error, a.error_detail
FROM pgtask.task_attempt a;

-- One task as a JSON object, or NULL when there is no such task: its fields (state as
-- pgtask.tasks names it), its payload, the error history of its row (every error, one line each,
-- with its attempt, time and worker), its recorded attempts (pgtask.task_attempts, oldest first)
-- and its explanation (pgtask.explain_task_json: reason, sentence and the fields the reason names).
-- Reads pg_stat_activity through the explanation: run it as a superuser or a member of
-- pg_read_all_stats to see other roles' backends. Locks: none.
CREATE OR REPLACE FUNCTION pgtask.task_detail(task_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  t pgtask.task;
  v_id bigint := task_detail.task_id;
BEGIN
  SELECT * INTO t FROM pgtask.task WHERE id = v_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN jsonb_build_object(
    'id', t.id, 'kind', t.kind, 'queue', t.queue,
    'tenant', (SELECT tn.name FROM pgtask.tenant tn WHERE tn.id = t.tenant_id),
    'state', CASE WHEN t.blocked THEN 'waiting' WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled'
                  ELSE t.state::text END,
    'priority', t.priority, 'attempt', t.attempt, 'max_attempts', t.max_attempts,
    'run_at', t.run_at, 'created_at', t.created_at, 'attempted_at', t.attempted_at, 'finished_at', t.finished_at,
    'worker', t.owner, 'lease_until', t.lease_until, 'dedupe_key', t.dedupe_key,
    'last_error', CASE WHEN t.state <> 'completed' THEN t.errors -> -1 ->> 'error' END,
    'payload', t.payload,
    'errors', coalesce(t.errors, '[]'::jsonb),
    'attempts', coalesce((
      SELECT jsonb_agg(jsonb_build_object('attempt', a.attempt, 'outcome', a.outcome, 'worker', a.worker,
               'started_at', a.started_at, 'finished_at', a.finished_at,
               'duration_s', extract(epoch FROM a.duration), 'error', a.error, 'error_detail', a.error_detail)
             ORDER BY a.attempt)
      FROM pgtask.task_attempts a WHERE a.task_id = t.id), '[]'::jsonb),
    'explanation', pgtask.explain_task_json(t.id));
END
$$;
