-- Queue control and diagnosis: pausing and resuming a queue, explaining why one task is not
-- running, and each tenant's load against the one-at-a-time limit of its critical section.
--
-- Sorts after R__05_views (it reads pgtask.running, pgtask.workers and pgtask.tenant_locks) and
-- before R__06_privileges. Everything here is for the owner: no grants (see the end of the file).

-- ---------------------------------------------------------------------------------------------
-- Pause and resume
-- ---------------------------------------------------------------------------------------------

-- The claim reads pgtask.paused_queue in its own statement (ClaimQueries): a queue paused here is
-- not claimed from by any claim that starts after this transaction commits, on any worker, however
-- late it starts. Tasks already claimed run to their end. Enqueueing is not affected.

-- Raises 23514 (check_violation, constraint task_queue_format) for a name no task could have.
CREATE OR REPLACE FUNCTION pgtask.check_queue_name(p_queue text, p_action text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_error text := pgtask.task_input_error('x', '{}', p_queue, NULL, 1, NULL, 1048576);
BEGIN
  IF v_error IS NOT NULL THEN
    RAISE EXCEPTION 'pgtask: cannot % queue: %', p_action, split_part(v_error, '|', 2)
      USING ERRCODE = 'check_violation', CONSTRAINT = split_part(v_error, '|', 1);
  END IF;
END
$$;

-- Pauses a queue: 'paused', or 'already_paused' (the first pause's time and role are kept). A queue
-- without tasks may be paused ahead of them.
CREATE OR REPLACE FUNCTION pgtask.pause_queue(queue text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pgtask.check_queue_name(pause_queue.queue, 'pause');
  INSERT INTO pgtask.paused_queue AS p (queue) VALUES (pause_queue.queue)
  ON CONFLICT ON CONSTRAINT paused_queue_pkey DO NOTHING;
  RETURN CASE WHEN FOUND THEN 'paused' ELSE 'already_paused' END;
END
$$;

-- Resumes a queue: 'resumed' (and its workers are woken, as by an enqueue: they claim at once, by
-- the payload "<queue>" of db/R__02a_wakeup.sql), or 'not_paused'.
CREATE OR REPLACE FUNCTION pgtask.resume_queue(queue text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pgtask.check_queue_name(resume_queue.queue, 'resume');
  DELETE FROM pgtask.paused_queue p WHERE p.queue = resume_queue.queue;
  IF NOT FOUND THEN
    RETURN 'not_paused';
  END IF;
  PERFORM pg_notify('pgtask', resume_queue.queue);
  RETURN 'resumed';
END
$$;

-- Every paused queue, with what waits in it: due tasks (claimable now but for the pause) and all
-- unfinished ones that are not running.
CREATE OR REPLACE VIEW pgtask.paused_queues AS
SELECT p.queue, p.paused_at, p.paused_by,
       greatest(clock_timestamp() - p.paused_at, interval '0') AS paused_for,
       (SELECT count(*) FROM pgtask.task t
        WHERE t.queue = p.queue AND t.state IN ('available', 'retryable') AND NOT t.blocked AND t.run_at <= now()) AS due,
       (SELECT count(*) FROM pgtask.task t
        WHERE t.queue = p.queue AND t.state IN ('available', 'retryable')) AS queued
FROM pgtask.paused_queue p;

-- ---------------------------------------------------------------------------------------------
-- Why isn't my task running?
-- ---------------------------------------------------------------------------------------------

-- A timestamp as the explanations write it: to the millisecond, with the session's time zone.
CREATE OR REPLACE FUNCTION pgtask.explain_time(p_at timestamptz) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT to_char(p_at, 'YYYY-MM-DD HH24:MI:SS.MS TZ')
$$;

-- A duration as the explanations write it: seconds to a tenth under a minute, else to the second.
CREATE OR REPLACE FUNCTION pgtask.explain_duration(p_for interval) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE WHEN p_for < interval '1 minute'
              THEN to_char(greatest(extract(epoch FROM p_for), 0), 'FM9990.0') || ' s'
              ELSE date_trunc('second', p_for)::text END
$$;

-- Why task_id is or is not running, from the database's own state, as one JSON object:
-- {"task_id", "reason", "sentence", ...the fields the sentence names}. Reasons, in the order they
-- are decided:
--   not_found          no such task (never enqueued, or deleted: retention deletes finished tasks)
--   finished           completed, cancelled or discarded, at finished_at
--   running            running on a live worker (with the backend pid of its transaction, if any)
--   worker_lost        marked running by a worker that is not live: rescued once its lease ends
--   waiting_for_tenant waiting behind another task of its tenant: the task it waits for is
--                      described too ("head"), in the same words
--   limit_full         due, but a concurrency limit that applies to it (pgtask.set_limit) is full:
--                      which one, and the tasks running under it
--   tenant_lock_held   due, but its tenant's advisory lock is held by a backend (pg_locks)
--   retrying           failed, next attempt at run_at
--   scheduled          due later, at run_at
--   queue_paused       due, but its queue is paused
--   unserved_queue     due, but no live worker serves its queue
--   unhandled_kind     due, but no live worker of its queue handles its kind
--   ready              due and claimable: a live worker of its queue takes it at its next claim
-- Reads pg_stat_activity (through pgtask.running and pgtask.tenant_locks): run it as a superuser or
-- a member of pg_read_all_stats to see other roles' backends. Locks: none.
CREATE OR REPLACE FUNCTION pgtask.explain_task_json(task_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  t pgtask.task;
  v_id bigint := explain_task_json.task_id;
  v_tenant text;
  v_last_error text;
  v_run record;
  v_head pgtask.task;
  v_head_json jsonb;
  v_lock record;
  v_lock_text text;
  v_paused record;
  v_workers integer;
  v_base jsonb;
  v_clock timestamptz := clock_timestamp();
  v_limit jsonb;
BEGIN
  SELECT * INTO t FROM pgtask.task WHERE id = v_id;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('task_id', v_id, 'reason', 'not_found',
      'sentence', format('task %s does not exist: it was never enqueued, or it was deleted (retention deletes '
        'finished tasks once their retention has passed)', v_id));
  END IF;
  SELECT tn.name INTO v_tenant FROM pgtask.tenant tn WHERE tn.id = t.tenant_id;
  v_last_error := t.errors -> -1 ->> 'error';
  v_base := jsonb_build_object('task_id', t.id, 'kind', t.kind, 'queue', t.queue, 'tenant', v_tenant,
    -- the state as pgtask.tasks names it
    'state', CASE WHEN t.blocked THEN 'waiting' WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled'
                  ELSE t.state::text END,
    'attempt', t.attempt, 'max_attempts', t.max_attempts, 'run_at', t.run_at);

  -- finished
  IF t.state IN ('completed', 'cancelled', 'discarded') THEN
    RETURN v_base || jsonb_build_object('reason', 'finished', 'finished_at', t.finished_at,
      'last_error', CASE WHEN t.state <> 'completed' THEN v_last_error END,
      'sentence', format('task %s finished as %s at %s (attempt %s of %s)%s', t.id, t.state,
        pgtask.explain_time(t.finished_at), t.attempt, t.max_attempts,
        CASE WHEN t.state <> 'completed' AND v_last_error IS NOT NULL THEN ' after error: ' || v_last_error ELSE '' END));
  END IF;

  -- waiting for its parents (db/R__03b_dependencies.sql)
  IF t.state = 'pending' THEN
    RETURN v_base || pgtask.explain_parents_json(t);
  END IF;

  -- running
  IF t.state = 'running' THEN
    SELECT r.backend_pid, r.started_at, r.running_for, r.cancel_requested_at INTO v_run
    FROM pgtask.running r WHERE r.task_id = t.id;
    IF NOT EXISTS (SELECT 1 FROM pgtask.workers w WHERE w.id = t.owner) THEN
      RETURN v_base || jsonb_build_object('reason', 'worker_lost', 'worker', t.owner, 'lease_until', t.lease_until,
        'worker_last_seen', (SELECT w.last_seen FROM pgtask.worker w WHERE w.id = t.owner),
        'sentence', format('task %s was claimed by worker %s at %s, which is not live (%s); the rescue pass takes '
          'it back once its lease ends at %s', t.id, t.owner, pgtask.explain_time(t.attempted_at),
          coalesce('last seen ' || pgtask.explain_time((SELECT w.last_seen FROM pgtask.worker w WHERE w.id = t.owner)),
                   'no longer registered'),
          pgtask.explain_time(t.lease_until)));
    END IF;
    RETURN v_base || jsonb_build_object('reason', 'running', 'worker', t.owner, 'backend_pid', v_run.backend_pid,
      'started_at', coalesce(v_run.started_at, t.attempted_at),
      'running_for_s', round(extract(epoch FROM coalesce(v_run.running_for, v_clock - t.attempted_at))::numeric, 3),
      'cancel_requested_at', v_run.cancel_requested_at,
      'sentence', format('task %s is running on worker %s (%s) for %s (attempt %s of %s)%s', t.id, t.owner,
        CASE WHEN v_run.backend_pid IS NOT NULL THEN 'backend pid ' || v_run.backend_pid
             ELSE 'no open transaction: a plain-mode task, or claimed and about to start' END,
        pgtask.explain_duration(coalesce(v_run.running_for, v_clock - t.attempted_at)), t.attempt, t.max_attempts,
        CASE WHEN v_run.cancel_requested_at IS NOT NULL
             THEN '; cancel requested at ' || pgtask.explain_time(v_run.cancel_requested_at) ELSE '' END));
  END IF;

  -- due, and a limit that applies to it is full (db/R__05d_limits.sql)
  IF NOT t.blocked AND t.run_at <= now() THEN
    v_limit := pgtask.limit_full_json(t.tenant_id, t.queue, t.kind);
    IF v_limit IS NOT NULL THEN
      RETURN v_base || (v_limit - 'text') || jsonb_build_object('sentence',
        format('task %s is due since %s, but %s; a worker starts it when one of them ends', t.id,
          pgtask.explain_time(t.run_at), v_limit ->> 'text'));
    END IF;
  END IF;

  -- waiting behind its tenant: its head in its queue (blocked), or a task of its tenant running
  -- anywhere (the claim passes over a tenant with a running task, unless its limit admits more)
  IF t.blocked THEN
    SELECT * INTO v_head FROM pgtask.task h
    WHERE h.tenant_id = t.tenant_id AND h.queue = t.queue AND NOT h.blocked
      AND h.state IN ('available', 'retryable', 'running')
    ORDER BY h.state = 'running' DESC, h.run_at, h.id
    LIMIT 1;
    IF v_head.id IS NULL THEN
      RETURN v_base || jsonb_build_object('reason', 'waiting_for_tenant', 'head', NULL,
        'sentence', format('task %s is waiting behind its tenant %s in queue %s, which has no task there that is '
          'not waiting: the workers'' tenant repair pass hands it on', t.id, v_tenant, t.queue));
    END IF;
  ELSIF t.tenant_id IS NOT NULL AND t.run_at <= now() AND pgtask.tenant_slots(t.tenant_id) <= 1 THEN
    SELECT * INTO v_head FROM pgtask.task h
    WHERE h.tenant_id = t.tenant_id AND h.state = 'running' AND NOT h.blocked AND h.id <> t.id
    ORDER BY h.attempted_at, h.id
    LIMIT 1;
  END IF;
  IF v_head.id IS NOT NULL THEN
    v_head_json := pgtask.explain_task_json(v_head.id);
    RETURN v_base || jsonb_build_object('reason', 'waiting_for_tenant', 'head_task_id', v_head.id,
      'head_state', v_head_json ->> 'state', 'head_worker', v_head.owner, 'head', v_head_json,
      'sentence', format('task %s is waiting behind task %s of its tenant %s%s, which %s', t.id, v_head.id, v_tenant,
        CASE WHEN v_head.queue <> t.queue THEN ' (in queue ' || v_head.queue || ')' ELSE '' END,
        -- the head's own sentence, without its leading "task <id> "
        substr(v_head_json ->> 'sentence', length('task ' || v_head.id || ' ') + 1)));
  END IF;

  -- its tenant's lock held by a backend (another application's pg_advisory_xact_lock on pgtask's
  -- key, or a task transaction of the tenant not marked running, or not yet): a worker that claims
  -- the task while it is held defers it, without spending an attempt
  IF t.tenant_id IS NOT NULL AND pgtask.tenant_slots(t.tenant_id) <= 1 THEN
    SELECT l.holder_pid, l.application_name, l.xact_start INTO v_lock
    FROM pgtask.tenant_locks l WHERE l.tenant = v_tenant
    ORDER BY l.xact_start NULLS LAST LIMIT 1;
    IF v_lock.holder_pid IS NOT NULL THEN
      v_lock_text := format('its tenant %s''s lock is held by backend pid %s%s since %s', v_tenant, v_lock.holder_pid,
        CASE WHEN coalesce(v_lock.application_name, '') <> '' THEN ' (' || v_lock.application_name || ')' ELSE '' END,
        coalesce(pgtask.explain_time(v_lock.xact_start), 'an unknown time'));
      v_base := v_base || jsonb_build_object('holder_pid', v_lock.holder_pid,
        'holder_application', v_lock.application_name, 'held_since', v_lock.xact_start);
      IF t.run_at <= now() THEN
        RETURN v_base || jsonb_build_object('reason', 'tenant_lock_held',
          'sentence', format('task %s is due since %s, but %s: a worker that claims it while the lock is held defers '
            'it without spending an attempt', t.id, pgtask.explain_time(t.run_at), v_lock_text));
      END IF;
    END IF;
  END IF;

  SELECT p.paused_at, p.paused_by INTO v_paused FROM pgtask.paused_queue p WHERE p.queue = t.queue;

  -- not due yet
  IF t.run_at > now() THEN
    IF t.state = 'retryable' THEN
      RETURN v_base || jsonb_build_object('reason', 'retrying', 'last_error', v_last_error,
        'queue_paused', v_paused.paused_at IS NOT NULL,
        'sentence', format('task %s is retrying at %s after error: %s (attempt %s of %s)%s%s', t.id,
          pgtask.explain_time(t.run_at), coalesce(v_last_error, 'none recorded'), t.attempt, t.max_attempts,
          CASE WHEN v_paused.paused_at IS NOT NULL THEN '; its queue ' || t.queue || ' is paused' ELSE '' END,
          coalesce('; ' || v_lock_text, '')));
    END IF;
    RETURN v_base || jsonb_build_object('reason', 'scheduled', 'queue_paused', v_paused.paused_at IS NOT NULL,
      'sentence', format('task %s is scheduled until %s%s%s', t.id, pgtask.explain_time(t.run_at),
        CASE WHEN v_paused.paused_at IS NOT NULL THEN '; its queue ' || t.queue || ' is paused' ELSE '' END,
        coalesce('; ' || v_lock_text || ' (a claim while it is held defers the task again)', '')));
  END IF;

  -- due: paused, unserved, unhandled (as pgtask.unrunnable decides them), or ready
  IF v_paused.paused_at IS NOT NULL THEN
    RETURN v_base || jsonb_build_object('reason', 'queue_paused', 'paused_at', v_paused.paused_at,
      'paused_by', v_paused.paused_by,
      'sentence', format('task %s is due since %s, but its queue %s is paused (since %s, by %s): '
        'pgtask.resume_queue(%L) resumes it', t.id, pgtask.explain_time(t.run_at), t.queue,
        pgtask.explain_time(v_paused.paused_at), v_paused.paused_by, t.queue));
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pgtask.workers w WHERE t.queue = ANY (w.queues)) THEN
    RETURN v_base || jsonb_build_object('reason', 'unserved_queue',
      'sentence', format('task %s is due since %s, but no live worker serves its queue %s (live: seen in the '
        'last minute)', t.id, pgtask.explain_time(t.run_at), t.queue));
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pgtask.workers w WHERE t.queue = ANY (w.queues) AND t.kind = ANY (w.kinds)) THEN
    RETURN v_base || jsonb_build_object('reason', 'unhandled_kind',
      'sentence', format('task %s is due since %s, but no live worker of its queue %s handles its kind %s',
        t.id, pgtask.explain_time(t.run_at), t.queue, t.kind));
  END IF;
  SELECT count(*) INTO v_workers FROM pgtask.workers w WHERE t.queue = ANY (w.queues) AND t.kind = ANY (w.kinds);
  RETURN v_base || jsonb_build_object('reason', 'ready', 'workers', v_workers, 'last_error', v_last_error,
    'sentence', format('task %s is due since %s and claimable: %s live worker%s of its queue %s handle%s its kind '
      'and take%s it at the next claim (if it stays here, they are busy: see pgtask.running)', t.id,
      pgtask.explain_time(t.run_at), v_workers, CASE WHEN v_workers = 1 THEN '' ELSE 's' END, t.queue,
      CASE WHEN v_workers = 1 THEN 's' ELSE '' END, CASE WHEN v_workers = 1 THEN 's' ELSE '' END));
END
$$;

-- The sentence of pgtask.explain_task_json: why the task is or is not running, in one line.
CREATE OR REPLACE FUNCTION pgtask.explain_task(task_id bigint) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT pgtask.explain_task_json(explain_task.task_id) ->> 'sentence'
$$;

-- ---------------------------------------------------------------------------------------------
-- Capacity per tenant
-- ---------------------------------------------------------------------------------------------

-- Each tenant's load over the last p_window (the view pgtask.tenant_load: 15 minutes, rates over at
-- least p_min_span, 1 minute; shorter times are for scaled-down tests and experiments). A tenant's
-- tasks run N at a time (N: its slots, pgtask.tenant_slots: its limit's max_running, 1 without
-- one), so it can finish at most N x 60 / mean_run_s tasks a minute whatever the number of workers;
-- utilisation = arrivals per minute x mean run time (in minutes) / N, the share of its N slots'
-- time its arrivals need: at or above 1 its backlog can only grow.
--   arrivals_per_min       tasks enqueued (created_at) in the window, per minute
--   completions_per_min    tasks completed (finished_at) in the window, per minute
--   mean_run_s, p95_run_s  run time of the tasks that finished in the window (claim to finish of
--                          their last attempt), and of those running now whose time so far is
--                          longer than the finished ones' mean
--   utilisation            arrivals_per_min * mean_run_s / 60 / N (N as its limit says now)
--   backlog                unfinished tasks not running and due now (waiting ones included)
--   backlog_trend_per_min  (arrivals - tasks finished in any state) per minute: how fast the
--                          tenant's unfinished tasks grow (positive) or shrink
--   rate_window_min        the minutes the rates are taken over: the window, or the time since
--                          the tenant's first task in it when that is shorter, but at least p_min_span
-- Only tenants with a task in the window, or an unfinished one. Finished tasks deleted by retention
-- before the window ends are not counted: keep completed tasks at least as long as the window.
CREATE OR REPLACE FUNCTION pgtask.tenant_load_over(p_window interval, p_min_span interval DEFAULT interval '1 minute')
RETURNS TABLE (tenant text, arrivals_per_min numeric, completions_per_min numeric, mean_run_s numeric,
               p95_run_s numeric, utilisation numeric, backlog bigint, backlog_trend_per_min numeric,
               rate_window_min numeric)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH w AS (
    SELECT now() - p_window AS since, clock_timestamp() AS clock
  ), rows AS (
    -- finished in the window (task_finished_idx)
    SELECT t.tenant_id, t.created_at, t.state, true AS finished, false AS due,
           extract(epoch FROM t.finished_at - t.attempted_at) AS run_s
    FROM pgtask.task t, w
    WHERE t.state IN ('completed', 'cancelled', 'discarded') AND t.finished_at >= w.since AND t.tenant_id IS NOT NULL
    UNION ALL
    -- unfinished (task_tenant_head_idx, task_tenant_waiting_idx); a running task with its time so far
    SELECT t.tenant_id, t.created_at, t.state, false, t.state <> 'running' AND t.run_at <= now(),
           CASE WHEN t.state = 'running' THEN extract(epoch FROM greatest(w.clock - t.attempted_at, interval '0')) END
    FROM pgtask.task t, w
    WHERE t.state IN ('available', 'retryable', 'running') AND t.tenant_id IS NOT NULL
  ), finished_mean AS (
    SELECT r.tenant_id, avg(r.run_s) FILTER (WHERE r.finished) AS run_s
    FROM rows r GROUP BY r.tenant_id
  ), per AS (
    SELECT r.tenant_id,
           count(*) FILTER (WHERE r.created_at >= w.since) AS arrivals,
           count(*) FILTER (WHERE r.finished AND r.state = 'completed') AS completions,
           count(*) FILTER (WHERE r.finished) AS finishes,
           -- a running task counts once it has run longer than the finished ones' mean: it can
           -- only raise the figures (a tenant stuck behind one long task shows it)
           avg(r.run_s) FILTER (WHERE r.finished OR r.run_s > coalesce(f.run_s, 0)) AS mean_run_s,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY r.run_s)
             FILTER (WHERE r.finished OR r.run_s > coalesce(f.run_s, 0)) AS p95_run_s,
           count(*) FILTER (WHERE r.due) AS backlog,
           -- minutes since the tenant's first task in the window, within [p_min_span, the window]
           -- (numeric: extract() returns double precision before PostgreSQL 14, and round(x, n) takes numeric)
           (greatest(extract(epoch FROM p_min_span),
                     least(extract(epoch FROM p_window),
                           extract(epoch FROM w.clock - greatest(w.since, min(r.created_at))))) / 60.0)::numeric AS minutes
    FROM rows r
    CROSS JOIN w
    JOIN finished_mean f ON f.tenant_id = r.tenant_id
    GROUP BY r.tenant_id, w.since, w.clock
  )
  SELECT tn.name,
         round(p.arrivals / p.minutes, 2),
         round(p.completions / p.minutes, 2),
         round(p.mean_run_s::numeric, 3),
         round(p.p95_run_s::numeric, 3),
         round((p.arrivals / p.minutes * p.mean_run_s / 60.0 / pgtask.tenant_slots(p.tenant_id))::numeric, 2),
         p.backlog,
         round((p.arrivals - p.finishes) / p.minutes, 2),
         round(p.minutes::numeric, 2)
  FROM per p
  JOIN pgtask.tenant tn ON tn.id = p.tenant_id
  ORDER BY 6 DESC NULLS LAST, 8 DESC, 7 DESC, 1
$$;

-- Each tenant's load over the last 15 minutes, the tenants nearest to or over a utilisation of 1
-- first (see pgtask.tenant_load_over for the columns).
CREATE OR REPLACE VIEW pgtask.tenant_load AS
SELECT l.tenant, l.arrivals_per_min, l.completions_per_min, l.mean_run_s, l.p95_run_s, l.utilisation,
       l.backlog, l.backlog_trend_per_min, l.rate_window_min
FROM pgtask.tenant_load_over(interval '15 minutes', interval '1 minute') l;

-- ---------------------------------------------------------------------------------------------
-- Privileges: the owner's alone (R__06 revokes PUBLIC's defaults; said here again for these)
-- ---------------------------------------------------------------------------------------------

REVOKE EXECUTE ON FUNCTION pgtask.check_queue_name(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.pause_queue(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.resume_queue(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.explain_time(timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.explain_duration(interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.explain_task_json(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.explain_task(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.tenant_load_over(interval, interval) FROM PUBLIC;
