-- What operators see from SQL: queue summary, running tasks with their backends, tenant locks,
-- live workers, and what threatens the task table. Built on pg_locks and pg_stat_activity, because
-- an executing task's own writes are invisible to every other session until it commits.
--
-- Note: pg_stat_activity shows other roles' sessions (application_name, xact_start) only to
-- superusers and members of pg_read_all_stats; grant that role to whoever reads these views.

-- The first key of pgtask's two-int advisory locks: pg_try_advisory_xact_lock(lock_namespace, tenant_id).
-- Workers read it at start; the views below use it to find pgtask's locks in pg_locks.
ALTER TABLE pgtask.settings ADD COLUMN lock_namespace integer NOT NULL DEFAULT 1885828193; -- 0x70677461, "pgta"

-- The lock namespace as pg_locks shows it (classid is an unsigned oid).
CREATE FUNCTION pgtask.lock_namespace_oid() RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT ((s.lock_namespace::bigint + 4294967296) % 4294967296)::text::oid FROM pgtask.settings s
$$;

-- Live worker processes: registered at start, refreshed by a heartbeat, removed at shutdown.
CREATE TABLE pgtask.worker (
  id          text PRIMARY KEY,
  host        text        NOT NULL,
  pid         bigint      NOT NULL,
  version     text        NOT NULL,
  queues      text[]      NOT NULL,
  kinds       text[]      NOT NULL,
  concurrency integer     NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  last_seen   timestamptz NOT NULL DEFAULT now()
);

-- Workers seen in the last minute (the heartbeat runs every 10 s by default).
CREATE VIEW pgtask.workers AS
SELECT w.id, w.host, w.pid, w.version, w.queues, w.kinds, w.concurrency, w.started_at, w.last_seen,
       now() - w.last_seen AS last_seen_ago
FROM pgtask.worker w
WHERE w.last_seen > now() - interval '1 minute';

-- Per queue: counts by state, tasks waiting behind their tenant's head, running tasks, and the lag
-- (age of the oldest claimable task: how long work has been ready without being picked up).
CREATE VIEW pgtask.queue_summary AS
SELECT t.queue,
       count(*) FILTER (WHERE t.state = 'available' AND t.run_at > now()) AS scheduled,
       count(*) FILTER (WHERE t.state = 'available' AND t.run_at <= now()) AS available,
       count(*) FILTER (WHERE t.state = 'running') AS running,
       count(*) FILTER (WHERE t.state = 'retryable') AS retryable,
       count(*) FILTER (WHERE t.state = 'completed') AS completed,
       count(*) FILTER (WHERE t.state = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE t.state = 'discarded') AS discarded,
       count(*) FILTER (WHERE t.blocked) AS waiting_for_tenant,
       coalesce(now() - min(t.run_at) FILTER (
         WHERE t.state IN ('available', 'retryable') AND NOT t.blocked AND t.run_at <= now()), interval '0') AS lag
FROM pgtask.task t
GROUP BY t.queue;

-- Each running task and the backend executing it. The executing transaction names itself
-- "pgtask task <id> <worker>" in application_name (transaction-local) and holds the tenant's
-- advisory lock; both are visible to everyone while the task runs.
CREATE VIEW pgtask.running AS
SELECT t.id AS task_id, t.kind, t.queue, tn.name AS tenant, t.owner AS worker, a.pid AS backend_pid,
       coalesce(a.xact_start, t.attempted_at) AS started_at,
       now() - coalesce(a.xact_start, t.attempted_at) AS running_for,
       EXISTS (
         SELECT 1 FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.pid = a.pid AND l.objsubid = 2
           AND l.classid = pgtask.lock_namespace_oid() AND l.objid = t.tenant_id::text::oid) AS holds_tenant_lock
FROM pgtask.task t
LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id
LEFT JOIN pg_stat_activity a
  ON a.datname = current_database()
 AND a.application_name LIKE 'pgtask task %'
 AND split_part(a.application_name, ' ', 3) = t.id::text
WHERE t.state = 'running';

-- Each tenant lock held right now: its holder, since when, and the sessions waiting for it.
-- pgtask's workers never wait for a tenant lock (they try it and defer the task), so waiting_pids
-- lists only other sessions that called pg_advisory_xact_lock on the same key.
CREATE VIEW pgtask.tenant_locks AS
SELECT tn.name AS tenant, l.pid AS holder_pid, a.application_name, a.xact_start,
       now() - a.xact_start AS held_for,
       ARRAY(SELECT w.pid FROM pg_locks w
             WHERE w.locktype = 'advisory' AND NOT w.granted AND w.database = l.database
               AND w.classid = l.classid AND w.objid = l.objid AND w.objsubid = 2
             ORDER BY w.pid) AS waiting_pids
FROM pg_locks l
JOIN pgtask.tenant tn ON tn.id::text::oid = l.objid
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
  AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  AND l.classid = pgtask.lock_namespace_oid();

-- What threatens the task table: the oldest open transaction (it holds back vacuum everywhere),
-- dead tuples and vacuum times of the task table, and the notification queue's fill level.
CREATE VIEW pgtask.health AS
SELECT o.pid AS oldest_xact_pid,
       o.application_name AS oldest_xact_application,
       now() - o.xact_start AS oldest_xact_age,
       s.n_live_tup AS task_live_tuples,
       s.n_dead_tup AS task_dead_tuples,
       s.last_autovacuum AS task_last_autovacuum,
       s.last_vacuum AS task_last_vacuum,
       pg_total_relation_size('pgtask.task'::regclass) AS task_table_bytes,
       pg_notification_queue_usage() AS notification_queue_usage
FROM (SELECT 1) one
LEFT JOIN pg_stat_user_tables s ON s.relid = 'pgtask.task'::regclass
LEFT JOIN LATERAL (
  SELECT a.pid, a.application_name, a.xact_start
  FROM pg_stat_activity a
  WHERE a.xact_start IS NOT NULL AND (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL)
    AND a.pid <> pg_backend_pid()
  ORDER BY a.xact_start
  LIMIT 1) o ON true;

REVOKE EXECUTE ON FUNCTION pgtask.lock_namespace_oid() FROM PUBLIC;
