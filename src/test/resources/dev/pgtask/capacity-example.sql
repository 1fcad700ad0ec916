-- The example of docs/capacity.md, as history rows relative to now() (TenantLoadTest loads it too).
-- acme: 5 arrivals a minute for the last 30 minutes, a 20-s critical section, run one at a time
-- from its first arrival: 89 completed, 1 running, 60 due and waiting.
-- globex: 2 arrivals a minute for 30 minutes, 4-s runs, all completed.
-- initech: a burst that began 2 minutes ago, 6 a minute, 8-s runs: 11 completed, 1 running.
WITH t0 AS (SELECT now() - interval '30 minutes' AS t0, now() - interval '2 minutes' AS tb)
INSERT INTO pgtask.task (kind, queue, tenant_id, state, blocked, attempt, created_at, run_at, attempted_at,
                         finished_at, owner, lease_until)
SELECT 'report.build', 'reports', pgtask.tenant_id('acme'),
       CASE WHEN i < 89 THEN 'completed' WHEN i = 89 THEN 'running' ELSE 'available' END::pgtask.task_state,
       i > 89,
       CASE WHEN i <= 89 THEN 1 ELSE 0 END,
       t0 + make_interval(secs => i * 12 + 6), t0 + make_interval(secs => i * 12 + 6),
       CASE WHEN i <= 89 THEN t0 + make_interval(secs => 6 + 20 * i) END,
       CASE WHEN i < 89 THEN t0 + make_interval(secs => 6 + 20 * (i + 1)) END,
       CASE WHEN i = 89 THEN 'worker-1' END,
       CASE WHEN i = 89 THEN now() + interval '1 minute' END
FROM t0, generate_series(0, 149) i
UNION ALL
SELECT 'report.build', 'reports', pgtask.tenant_id('globex'), 'completed', false, 1,
       t0 + make_interval(secs => i * 30 + 10), t0 + make_interval(secs => i * 30 + 10),
       t0 + make_interval(secs => i * 30 + 10), t0 + make_interval(secs => i * 30 + 14), NULL, NULL
FROM t0, generate_series(0, 59) i
UNION ALL
SELECT 'report.build', 'reports', pgtask.tenant_id('initech'),
       CASE WHEN i < 11 THEN 'completed' ELSE 'running' END::pgtask.task_state, false, 1,
       tb + make_interval(secs => i * 10 + 5), tb + make_interval(secs => i * 10 + 5),
       tb + make_interval(secs => i * 10 + 5),
       CASE WHEN i < 11 THEN tb + make_interval(secs => i * 10 + 13) END,
       CASE WHEN i = 11 THEN 'worker-2' END,
       CASE WHEN i = 11 THEN now() + interval '1 minute' END
FROM t0, generate_series(0, 11) i;
