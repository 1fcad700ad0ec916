-- The reads the operator dashboard needs beyond the views (docs/dashboard.md): one page of tasks
-- by filters with keyset pagination, errors grouped by kind and first line, and finished tasks per
-- minute. Each is bounded by what it returns (a page, a group count, a window), read-only and
-- owner-only like every function here (db/R__06_privileges.sql). Locks: none.

-- One page of tasks, newest first: at most p_limit (1 to 500) tasks with an id below p_before_id
-- (NULL: from the newest), of p_kind, p_queue, in p_state (as pgtask.tasks names it), of p_tenant,
-- whose last error matches the LIKE pattern p_error_like, active within p_since, active from p_from
-- (inclusive) until p_until (exclusive) (their last activity: finished, else last started, else
-- enqueued), each filter applied when not NULL; a p_from not before p_until is refused as the bulk
-- operations refuse it (SQLSTATE 22023, constraint task_filter_range). Walks the primary key backwards
-- from p_before_id, so a page costs the rows it skips over, never a sort of the table; the caller's
-- statement_timeout bounds a filter that matches nothing. The next page is the one before the last
-- id returned.
CREATE OR REPLACE FUNCTION pgtask.task_page(p_kind text, p_queue text, p_state text, p_tenant text,
    p_error_like text, p_since interval, p_from timestamptz, p_until timestamptz, p_before_id bigint, p_limit integer)
RETURNS TABLE (id bigint, kind text, queue text, tenant text, state text, priority integer, attempt integer,
    max_attempts integer, run_at timestamptz, created_at timestamptz, finished_at timestamptz, last_error text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
  SELECT f.id, f.kind, f.queue, (SELECT tn.name FROM pgtask.tenant tn WHERE tn.id = f.tenant_id), f.op_state,
         f.priority, f.attempt, f.max_attempts, f.run_at, f.created_at, f.finished_at, f.last_error
  FROM (
    SELECT t.*, CASE WHEN t.blocked THEN 'waiting' WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled'
                     ELSE t.state::text END AS op_state,
           CASE WHEN t.state <> 'completed' THEN t.errors -> -1 ->> 'error' END AS last_error
    FROM pgtask.task t
    WHERE (p_before_id IS NULL OR t.id < p_before_id)
      AND (p_kind IS NULL OR t.kind = p_kind)
      AND (p_queue IS NULL OR t.queue = p_queue)
      AND (p_tenant IS NULL OR t.tenant_id = (SELECT tn.id FROM pgtask.tenant tn WHERE tn.name = p_tenant))
      AND (p_since IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= now() - p_since)
      AND (p_from IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= p_from)
      AND (p_until IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) < p_until)
      -- a completed task shows no error: passed over before its errors are read (the walk through
      -- 1,000,000 mostly completed tasks for an error text took 687 ms reading every one's errors)
      AND (p_error_like IS NULL OR (t.state <> 'completed' AND t.errors IS NOT NULL))
    ORDER BY t.id DESC
    OFFSET 0
  ) f
  WHERE (p_state IS NULL OR f.op_state = p_state)
    AND (p_error_like IS NULL OR f.last_error LIKE p_error_like)
    AND pgtask.check_task_range('list', p_from, p_until) -- no column: checked once, before the walk
  ORDER BY f.id DESC
  LIMIT greatest(1, least(coalesce(p_limit, 50), 500))
$$;
SELECT pgtask.replace_function('pgtask.task_page(text, text, text, text, text, interval, bigint, integer)',
  'pgtask.task_page(text, text, text, text, text, interval, timestamptz, timestamptz, bigint, integer)');

-- The errors of the tasks that failed and wait for a retry or were discarded, grouped by kind and
-- the first line of their last error, most tasks first, at most p_limit (1 to 500) groups: how many
-- tasks, how many of them retryable and discarded, and when the group was first and last seen (the
-- task's last activity: finished, else last started). Only tasks active within p_since, and from
-- p_from (inclusive) until p_until (exclusive), each when it is not NULL (a p_from not before p_until:
-- task_filter_range, as task_page). Reads every such task once (no index covers a task's last error).
CREATE OR REPLACE FUNCTION pgtask.error_groups(p_since interval, p_from timestamptz, p_until timestamptz,
    p_limit integer)
RETURNS TABLE (kind text, error text, tasks bigint, retryable bigint, discarded bigint, first_seen timestamptz,
    last_seen timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
  SELECT t.kind, split_part(t.errors -> -1 ->> 'error', E'\n', 1) AS error, count(*),
         count(*) FILTER (WHERE t.state = 'retryable'), count(*) FILTER (WHERE t.state = 'discarded'),
         min(coalesce(t.finished_at, t.attempted_at, t.created_at)),
         max(coalesce(t.finished_at, t.attempted_at, t.created_at))
  FROM pgtask.task t
  WHERE t.state IN ('retryable', 'discarded') AND t.errors IS NOT NULL
    AND (p_since IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= now() - p_since)
    AND (p_from IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) >= p_from)
    AND (p_until IS NULL OR coalesce(t.finished_at, t.attempted_at, t.created_at) < p_until)
    AND pgtask.check_task_range('group the errors of', p_from, p_until) -- no column: checked once, before the read
  GROUP BY 1, 2
  ORDER BY 3 DESC, 1, 2
  LIMIT greatest(1, least(coalesce(p_limit, 100), 500))
$$;
SELECT pgtask.replace_function('pgtask.error_groups(interval, integer)',
  'pgtask.error_groups(interval, timestamptz, timestamptz, integer)');

-- Finished tasks per minute over the last p_minutes minutes (1 to 1440), oldest first, one row per
-- minute that finished any: completed, discarded and cancelled (the ones retention has not yet
-- removed). Reads the finished tasks of the window through task_finished_idx.
CREATE OR REPLACE FUNCTION pgtask.throughput(p_minutes integer)
RETURNS TABLE (minute timestamptz, completed bigint, discarded bigint, cancelled bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
  SELECT date_trunc('minute', t.finished_at) AS minute,
         count(*) FILTER (WHERE t.state = 'completed'), count(*) FILTER (WHERE t.state = 'discarded'),
         count(*) FILTER (WHERE t.state = 'cancelled')
  FROM pgtask.task t
  WHERE t.state IN ('completed', 'cancelled', 'discarded')
    AND t.finished_at >= date_trunc('minute', now()) - make_interval(mins => greatest(1, least(coalesce(p_minutes, 60), 1440)) - 1)
  GROUP BY 1
  ORDER BY 1
$$;

-- Every queue's unfinished tasks, by state as pgtask.queue_summary counts them, and its lag and
-- pause, read from the indexes of the unfinished tasks only (claimable, running, waiting behind a
-- tenant, pending): its cost grows with the backlog, never with the history that retention keeps
-- (pgtask.queue_summary counts the finished tasks too: 544 ms with 1,000,000 tasks, against the
-- dashboard's 500 ms a page). Queues with unfinished tasks or paused.
CREATE OR REPLACE FUNCTION pgtask.queue_depth()
RETURNS TABLE (queue text, scheduled bigint, available bigint, running bigint, claimed_ahead bigint,
               retryable bigint, waiting_for_tenant bigint, pending bigint, lag interval, paused boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
  WITH counts AS (
    SELECT t.queue,
           count(*) FILTER (WHERE t.state = 'available' AND t.run_at > now()) AS scheduled,
           count(*) FILTER (WHERE t.state = 'available' AND t.run_at <= now()) AS available,
           0::bigint AS running, 0::bigint AS claimed_ahead,
           count(*) FILTER (WHERE t.state = 'retryable') AS retryable,
           0::bigint AS waiting, 0::bigint AS pending,
           min(pgtask.due_since(t.run_at, t.created_at)) FILTER (WHERE t.run_at <= now()) AS due_since
    FROM pgtask.task t
    WHERE t.state IN ('available', 'retryable') AND NOT t.blocked              -- task_claimable_idx
    GROUP BY t.queue
    UNION ALL
    SELECT t.queue, 0, 0, count(*),
           count(*) FILTER (WHERE t.lease_until > now()
             AND EXISTS (SELECT 1 FROM pgtask.workers w WHERE w.id = t.owner)
             AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                             WHERE a.datname = current_database() AND a.application_name LIKE 'pgtask task %'
                               AND split_part(a.application_name, ' ', 3) = t.id::text)),
           0, 0, 0, NULL
    FROM pgtask.task t
    WHERE t.state = 'running'                                                    -- task_running_idx
    GROUP BY t.queue
    UNION ALL
    SELECT t.queue, 0, 0, 0, 0, 0, count(*), 0, NULL
    FROM pgtask.task t
    WHERE t.blocked                                                              -- task_tenant_waiting_idx
    GROUP BY t.queue
    UNION ALL
    SELECT t.queue, 0, 0, 0, 0, 0, 0, count(*), NULL
    FROM pgtask.task t
    WHERE t.state = 'pending'                                                    -- task_pending_idx
    GROUP BY t.queue
    UNION ALL
    SELECT p.queue, 0, 0, 0, 0, 0, 0, 0, NULL FROM pgtask.paused_queue p
  )
  SELECT c.queue, sum(c.scheduled)::bigint, sum(c.available)::bigint, sum(c.running)::bigint,
         sum(c.claimed_ahead)::bigint, sum(c.retryable)::bigint, sum(c.waiting)::bigint, sum(c.pending)::bigint,
         coalesce(now() - min(c.due_since), interval '0'),
         EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = c.queue)
  FROM counts c
  GROUP BY c.queue
  ORDER BY c.queue
$$;
REVOKE EXECUTE ON FUNCTION pgtask.queue_depth() FROM PUBLIC;

-- On an upgrade R__06 does not run again (its text is unchanged): take PUBLIC's EXECUTE back here.
REVOKE EXECUTE ON FUNCTION pgtask.task_page(text, text, text, text, text, interval, timestamptz, timestamptz, bigint, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.error_groups(interval, timestamptz, timestamptz, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.throughput(integer) FROM PUBLIC;
