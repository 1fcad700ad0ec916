-- The views: what operators and applications read. Built on pg_locks and pg_stat_activity where
-- they show running work, because an executing task's own writes are invisible to every other
-- session until it commits.
--
-- Note: pg_stat_activity shows other roles' sessions (application_name, xact_start) only to
-- superusers and members of pg_read_all_stats; grant that role to whoever reads these views.
--
-- Durations use clock_timestamp(): a reader's now() is the start of its own transaction, which may
-- be earlier than the task's, and the durations must never be negative.
--
-- CREATE OR REPLACE VIEW may only add columns at the end: a change that renames, removes or
-- retypes a column needs DROP VIEW IF EXISTS ... CASCADE before it (and the dependent views and
-- any grants on them made again).

-- When a due task became due, for the durations the views show: its run_at, or for a run_at
-- PostgreSQL cannot subtract from (-infinity: enqueue refuses it, but an older row or an owner's
-- hand-made one may hold it) its created_at, and NULL (counted as no delay) when both are infinite.
-- One such row must never make a view fail.
CREATE OR REPLACE FUNCTION pgtask.due_since(p_run_at timestamptz, p_created_at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN isfinite(p_run_at) THEN p_run_at WHEN isfinite(p_created_at) THEN p_created_at END
$$;

-- Every task with its state as operators name it. Two states are derived, not stored: "waiting"
-- (the task waits behind its tenant's head in its queue, whatever its stored state) and
-- "scheduled" (available, run_at in the future by the database clock). last_error is the last
-- entry of the error history, except for a completed task: it did not fail in the end, and the
-- history (pgtask.task.errors) keeps every error.
CREATE OR REPLACE VIEW pgtask.tasks AS
SELECT t.id, t.kind, t.queue, tn.name AS tenant,
       CASE WHEN t.blocked THEN 'waiting'
            WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled'
            ELSE t.state::text END AS state,
       t.priority, t.attempt, t.max_attempts, t.run_at, t.created_at, t.finished_at,
       CASE WHEN t.state <> 'completed' THEN t.errors -> -1 ->> 'error' END AS last_error
FROM pgtask.task t
LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id;

-- Workers seen in the last minute (the heartbeat runs every 10 s by default).
CREATE OR REPLACE VIEW pgtask.workers AS
SELECT w.id, w.host, w.pid, w.version, w.queues, w.kinds, w.concurrency, w.started_at, w.last_seen,
       greatest(clock_timestamp() - w.last_seen, interval '0') AS last_seen_ago,
       -- its LISTEN session ("pgtask listen <id>") is connected to this database: false while the
       -- worker polls instead (its listener lost, reconnecting, or not configured); NULL when that
       -- name would not fit application_name's 63 bytes (the session does not name the worker)
       CASE WHEN octet_length('pgtask listen ' || w.id) <= 63 THEN EXISTS (
         SELECT 1 FROM pg_stat_activity a
         WHERE a.datname = current_database() AND a.application_name = 'pgtask listen ' || w.id) END AS listening
FROM pgtask.worker w
WHERE w.last_seen > now() - interval '1 minute';

-- Per queue: counts by state as pgtask.tasks shows them (a task waiting behind its tenant's head
-- counts as waiting_for_tenant only, not also as available, scheduled or retryable), running
-- tasks, and the lag (age of the oldest claimable task: how long work has been ready without being
-- picked up), and whether the queue is paused (pgtask.paused_queues lists every paused queue, with
-- or without tasks), and claimed_ahead: how many of the running tasks wait in a live worker
-- for an executor (as pgtask.running.claimed_ahead, defined below), so running - claimed_ahead
-- execute now.
CREATE OR REPLACE VIEW pgtask.queue_summary AS
SELECT t.queue,
       count(*) FILTER (WHERE t.state = 'available' AND NOT t.blocked AND t.run_at > now()) AS scheduled,
       count(*) FILTER (WHERE t.state = 'available' AND NOT t.blocked AND t.run_at <= now()) AS available,
       count(*) FILTER (WHERE t.state = 'running') AS running,
       count(*) FILTER (WHERE t.state = 'retryable' AND NOT t.blocked) AS retryable,
       count(*) FILTER (WHERE t.state = 'completed') AS completed,
       count(*) FILTER (WHERE t.state = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE t.state = 'discarded') AS discarded,
       count(*) FILTER (WHERE t.blocked) AS waiting_for_tenant,
       coalesce(now() - min(pgtask.due_since(t.run_at, t.created_at)) FILTER (
         WHERE t.state IN ('available', 'retryable') AND NOT t.blocked AND t.run_at <= now()), interval '0') AS lag,
       EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = t.queue) AS paused,
       count(*) FILTER (WHERE t.state = 'running' AND t.lease_until > now()
         AND EXISTS (SELECT 1 FROM pgtask.workers w WHERE w.id = t.owner)
         AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                         WHERE a.datname = current_database() AND a.application_name LIKE 'pgtask task %'
                           AND split_part(a.application_name, ' ', 3) = t.id::text)) AS claimed_ahead,
       count(*) FILTER (WHERE t.state = 'pending') AS pending
FROM pgtask.task t
GROUP BY t.queue;

-- Each running task and the backend executing it. The executing transaction names itself
-- "pgtask task <id> <worker>" in application_name (transaction-local) and holds the tenant's
-- advisory lock; both are visible to everyone while the task runs. claimed_ahead: no backend
-- executes the task, and a live worker (pgtask.workers) holds its claim with a lease that has not
-- run out: it waits in that worker for a free executor or its turn in a commit batch (or it is a
-- plain-mode task, which runs outside any transaction). No backend and claimed_ahead false: its
-- worker is gone, and the rescue pass takes the task back after its lease.
CREATE OR REPLACE VIEW pgtask.running AS
SELECT t.id AS task_id, t.kind, t.queue, tn.name AS tenant, t.owner AS worker, a.pid AS backend_pid,
       coalesce(a.xact_start, t.attempted_at) AS started_at,
       greatest(clock_timestamp() - coalesce(a.xact_start, t.attempted_at), interval '0') AS running_for,
       EXISTS (
         SELECT 1 FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.pid = a.pid AND l.objsubid = 2
           AND pgtask.slot_offset(l.classid) < 1024 AND l.objid = t.tenant_id::text::oid) AS holds_tenant_lock,
       (SELECT r.requested_at FROM pgtask.cancel_request r
        WHERE r.task_id = t.id AND r.attempt = t.attempt) AS cancel_requested_at,
       (a.pid IS NULL AND t.lease_until > now()
        AND EXISTS (SELECT 1 FROM pgtask.workers w WHERE w.id = t.owner)) AS claimed_ahead
FROM pgtask.task t
LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id
LEFT JOIN pg_stat_activity a
  ON a.datname = current_database()
 AND a.application_name LIKE 'pgtask task %'
 AND split_part(a.application_name, ' ', 3) = t.id::text
WHERE t.state = 'running';

-- Each tenant lock held right now: its holder, since when, and the sessions waiting for it. A
-- tenant that may run N tasks at once (pgtask.set_limit) has up to N rows, one per slot held.
-- pgtask's workers never wait for a tenant lock (they try it and defer the task), so waiting_pids
-- lists only other sessions that called pg_advisory_xact_lock on the same key.
CREATE OR REPLACE VIEW pgtask.tenant_locks AS
SELECT tn.name AS tenant, l.pid AS holder_pid, a.application_name, a.xact_start,
       greatest(clock_timestamp() - a.xact_start, interval '0') AS held_for,
       ARRAY(SELECT w.pid FROM pg_locks w
             WHERE w.locktype = 'advisory' AND NOT w.granted AND w.database = l.database
               AND w.classid = l.classid AND w.objid = l.objid AND w.objsubid = 2
             ORDER BY w.pid) AS waiting_pids
FROM pg_locks l
JOIN pgtask.tenant tn ON tn.id::text::oid = l.objid
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
  AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  AND pgtask.slot_offset(l.classid) < 1024;

-- Due heads that no live worker can run, one row each: claimable now (available or retryable,
-- not waiting, run_at passed), and either their queue is paused ('paused_queue', whatever the
-- workers), or no live worker (pgtask.workers: seen in the last minute)
-- serves the task's queue ('unserved_queue'), or none of the live workers serving it handles the
-- task's kind ('unhandled_kind'). run_at: since when it is due (pgtask.due_since). Reads the
-- claimable index and the live workers, never the tasks waiting behind the heads: what the
-- leader's check of unhandled kinds reads every 30 s (beside a backlog of 2,500,000 waiting tasks
-- of 2,000 tenants, counting those behind each head took 1.19 s of the check's 1.19 s; issue 31).
-- Private (pgtask.unrunnable and pgtask.health are the public face).
CREATE OR REPLACE FUNCTION pgtask.unrunnable_due()
RETURNS TABLE (queue text, kind text, tenant_id integer, reason text, run_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- the reason is decided once per (queue, kind) of the due tasks, not per task: with the workers
  -- down and a backlog of 40,000 due tasks, deciding it per task took 330 ms of every read of the
  -- health (measured with 1,000,000 tasks), the moment an operator needs it most
  WITH due AS MATERIALIZED (
    SELECT t.queue, t.kind, t.tenant_id, t.run_at, t.created_at
    FROM pgtask.task t
    WHERE t.state IN ('available', 'retryable') AND NOT t.blocked AND t.run_at <= now()
  ), live AS MATERIALIZED (
    SELECT w.queues, w.kinds FROM pgtask.workers w
  ), reasons AS (
    SELECT p.queue, p.kind,
           CASE WHEN EXISTS (SELECT 1 FROM pgtask.paused_queue q WHERE q.queue = p.queue) THEN 'paused_queue'
                WHEN NOT EXISTS (SELECT 1 FROM live w WHERE p.queue = ANY (w.queues)) THEN 'unserved_queue'
                WHEN NOT EXISTS (SELECT 1 FROM live w WHERE p.queue = ANY (w.queues) AND p.kind = ANY (w.kinds))
                  THEN 'unhandled_kind'
           END AS reason
    FROM (SELECT DISTINCT d.queue, d.kind FROM due d) p
  )
  SELECT d.queue, d.kind, d.tenant_id, r.reason, pgtask.due_since(d.run_at, d.created_at)
  FROM due d
  JOIN reasons r ON r.queue = d.queue AND r.kind = d.kind
  WHERE r.reason IS NOT NULL
$$;

-- pgtask.unrunnable_due with, for each head, waiting: the tasks of the head's tenant waiting
-- behind it in its queue (a count: it reads each of them in task_tenant_waiting_idx). Private
-- (pgtask.unrunnable is its public face).
CREATE OR REPLACE FUNCTION pgtask.unrunnable_heads()
RETURNS TABLE (queue text, kind text, tenant_id integer, reason text, run_at timestamptz, waiting bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT d.queue, d.kind, d.tenant_id, d.reason, d.run_at,
         CASE WHEN d.tenant_id IS NULL THEN 0 ELSE
           (SELECT count(*) FROM pgtask.task w WHERE w.blocked AND w.tenant_id = d.tenant_id AND w.queue = d.queue)
         END AS waiting
  FROM pgtask.unrunnable_due() d
$$;

-- What no live worker can run, per queue, kind and reason: the due tasks ('paused_queue': the queue
-- is paused; 'unserved_queue': no live worker serves the queue; 'unhandled_kind': the queue's live
-- workers have no handler for the kind), since when the oldest has been due, the tenants whose heads they are, and how many of
-- those tenants' tasks wait behind them. Empty while every due task has a live worker.
CREATE OR REPLACE VIEW pgtask.unrunnable AS
SELECT h.queue, h.kind, h.reason,
       count(*) AS tasks,
       greatest(clock_timestamp() - min(h.run_at), interval '0') AS oldest_due_for,
       count(DISTINCT h.tenant_id) AS tenants,
       sum(h.waiting)::bigint AS waiting_behind
FROM pgtask.unrunnable_heads() h
GROUP BY h.queue, h.kind, h.reason;

-- The limits (pgtask.limits) that need a person, counted: limits_over, those whose slots held
-- exceed max_running (a bug, or an application taking advisory locks in pgtask's reserved classids
-- lock_namespace .. lock_namespace + 2047), and limits_stuck, those with running tasks whose lease
-- ran out (a dead worker's tasks, which the claim counts as running until the rescue pass takes
-- them back). PL/pgSQL on purpose: pgtask.limits is defined after this file
-- (db/R__05d_limits.sql), and a PL/pgSQL body is resolved when called, not when created.
-- Private (pgtask.health is its public face).
CREATE OR REPLACE FUNCTION pgtask.limit_alarms() RETURNS TABLE (limits_over bigint, limits_stuck bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RETURN QUERY
    SELECT count(*) FILTER (WHERE l.slots_held > l.max_running), count(*) FILTER (WHERE l.stuck > 0)
    FROM pgtask.limits l;
END
$$;

-- What threatens the task table: the oldest open transaction of this database (it holds back
-- vacuum of every table here; a transaction of another database of the server does not, and is
-- not shown: an operator must not cancel it by mistake),
-- dead tuples and vacuum times of the task table, and the notification queue's fill level. And
-- what no live worker can run (pgtask.unrunnable, summed): due tasks in queues no live worker
-- serves, due tasks whose kind no live worker of their queue handles, and the tenants with tasks
-- waiting behind such a head; and, apart from those, the due tasks of paused queues (paused_tasks:
-- held back on purpose, so not counted as unserved, and their tenants not as stuck). And the limits
-- that need a person (pgtask.limit_alarms): limits_over, limits_stuck.
CREATE OR REPLACE VIEW pgtask.health AS
SELECT o.pid AS oldest_xact_pid,
       o.application_name AS oldest_xact_application,
       now() - o.xact_start AS oldest_xact_age,
       s.n_live_tup AS task_live_tuples,
       s.n_dead_tup AS task_dead_tuples,
       s.last_autovacuum AS task_last_autovacuum,
       s.last_vacuum AS task_last_vacuum,
       pg_total_relation_size('pgtask.task'::regclass) AS task_table_bytes,
       pg_notification_queue_usage() AS notification_queue_usage,
       u.unserved_tasks,
       u.unhandled_tasks,
       u.tenants_stuck,
       u.paused_tasks,
       la.limits_over,
       la.limits_stuck
FROM (SELECT 1) one
LEFT JOIN pg_stat_user_tables s ON s.relid = 'pgtask.task'::regclass
LEFT JOIN LATERAL (
  SELECT a.pid, a.application_name, a.xact_start
  FROM pg_stat_activity a
  WHERE a.xact_start IS NOT NULL AND (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL)
    AND a.pid <> pg_backend_pid()
    AND a.datname = current_database() -- only this database's transactions hold back its vacuum
  ORDER BY a.xact_start
  LIMIT 1) o ON true
CROSS JOIN LATERAL (
  -- pgtask.unrunnable summed, from one reading of the due heads; a stuck tenant has a task
  -- waiting behind such a head (one probe of task_tenant_waiting_idx, not a count of them all)
  SELECT count(*) FILTER (WHERE h.reason = 'unserved_queue') AS unserved_tasks,
         count(*) FILTER (WHERE h.reason = 'unhandled_kind') AS unhandled_tasks,
         count(DISTINCT h.tenant_id) FILTER (WHERE h.reason <> 'paused_queue' AND EXISTS (
           SELECT 1 FROM pgtask.task w WHERE w.blocked AND w.tenant_id = h.tenant_id AND w.queue = h.queue)) AS tenants_stuck,
         count(*) FILTER (WHERE h.reason = 'paused_queue') AS paused_tasks
  FROM pgtask.unrunnable_due() h) u
CROSS JOIN LATERAL pgtask.limit_alarms() la;
