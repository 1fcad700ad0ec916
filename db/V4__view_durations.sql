-- running_for and held_for measured with clock_timestamp(): a reader's now() is the start of its own
-- transaction, which may be earlier than the task's, and the durations must never be negative.

CREATE OR REPLACE VIEW pgtask.running AS
SELECT t.id AS task_id, t.kind, t.queue, tn.name AS tenant, t.owner AS worker, a.pid AS backend_pid,
       coalesce(a.xact_start, t.attempted_at) AS started_at,
       greatest(clock_timestamp() - coalesce(a.xact_start, t.attempted_at), interval '0') AS running_for,
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
  AND l.classid = pgtask.lock_namespace_oid();

CREATE OR REPLACE VIEW pgtask.workers AS
SELECT w.id, w.host, w.pid, w.version, w.queues, w.kinds, w.concurrency, w.started_at, w.last_seen,
       greatest(clock_timestamp() - w.last_seen, interval '0') AS last_seen_ago
FROM pgtask.worker w
WHERE w.last_seen > now() - interval '1 minute';
