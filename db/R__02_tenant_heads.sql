-- Tenant-fair scheduling (see docs/how-it-works.md). The wake-ups the hand-offs send (which
-- queues, which payloads, which are left to the completing worker) are db/R__02a_wakeup.sql's:
-- pgtask.wake_queues for promoted heads, pgtask.wake_due_heads for the heads a tenant's stopped
-- task held back (inlined in pgtask.task_after_update_heads, see there).
--
-- Heads are per tenant AND queue: in each queue, a tenant has one "head" task that may be claimed
-- or run; its other queued tasks in that queue wait (blocked) and are handed the head in turn. A
-- tenant's head in a queue nobody works therefore never holds back its tasks in other queues.
-- Mutual exclusion across queues is not the scheduling's job: the tenant's advisory lock, taken
-- by the worker inside the task's transaction, excludes overlap everywhere, and the claim passes
-- over tenants that have a task running anywhere.

-- Plans made on an empty queue (all the functions that read pgtask.task on a task's path, here
-- and in R__01, R__03, R__04): SET enable_seqscan = off, jit = off. The server keeps a plan per
-- session, and a plan made while the table was empty or tiny (an idle queue, autovacuum's last
-- ANALYZE seeing it empty) reads the whole table for each row: measured, a batch of 10,000
-- tenant tasks into an empty table took 893 ms against 96 ms into a full one, and each
-- completion's hand-off scanned the table until the next ANALYZE. Every lookup here has its
-- index, so no plan wants a sequential scan of pgtask.task; jit = off because a disabled scan's
-- cost (of a one-row table without an index) would otherwise pass jit_above_cost and compile the
-- statement on every execution (107 ms measured).

-- Whether a task of this tenant in this queue, due at p_run_at, waits behind its tenant's heads:
-- the tenant has as many heads there as it may run at once (1 without a limit, its max_running with
-- one), each running or due no later. The one rule for an insert (task_before_insert_tenant, R__02)
-- and for a child released from its parents (db/R__03b_dependencies.sql).
CREATE OR REPLACE FUNCTION pgtask.tenant_waits(p_tenant_id integer, p_queue text, p_run_at timestamptz) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_n integer;
BEGIN
  IF p_tenant_id IS NULL THEN
    RETURN false;
  END IF;
  v_n := pgtask.tenant_slots(p_tenant_id);
  RETURN (SELECT count(*) FROM (
    SELECT 1 FROM pgtask.task h
    WHERE h.tenant_id = p_tenant_id AND h.queue = p_queue AND NOT h.blocked
      AND h.state IN ('available', 'retryable', 'running')
      AND (h.state = 'running' OR h.run_at <= p_run_at)
    LIMIT greatest(v_n, 1)) s) >= greatest(v_n, 1);
END
$$;

-- A new task of a tenant waits when the tenant already has its heads in the task's queue, running
-- or due no later than the new task (pgtask.tenant_waits). A row that arrives blocked was decided
-- by its inserter (pgtask.enqueue_batch decides a batch's heads set-based): the WHEN clause passes
-- over it, so a batch of many tasks of one tenant calls this once per head, not once per task.
CREATE OR REPLACE FUNCTION pgtask.task_before_insert_tenant() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  IF NEW.state IN ('available', 'retryable') THEN
    NEW.blocked := pgtask.tenant_waits(NEW.tenant_id, NEW.queue, NEW.run_at);
  END IF;
  RETURN NEW;
END
$$;

-- Quiet for the rest of this migration's transaction: a first migration's DROP TRIGGER IF EXISTS
-- would otherwise send a "does not exist, skipping" notice that Flyway logs at INFO.
SET LOCAL client_min_messages = warning;
DROP TRIGGER IF EXISTS task_before_insert_tenant ON pgtask.task;
CREATE TRIGGER task_before_insert_tenant
  BEFORE INSERT ON pgtask.task
  FOR EACH ROW WHEN (NEW.tenant_id IS NOT NULL AND NOT NEW.blocked)
  EXECUTE FUNCTION pgtask.task_before_insert_tenant();

-- The hand-off for tenants that may run N > 1 tasks at once (pgtask.set_limit): each (tenant,
-- queue) pair given gets up to N heads (running, or queued and unblocked). The waiting tasks that
-- are due are promoted in (priority, run_at, id) order, up to N less the heads it has; a pair with
-- no head and nothing due gets the task due first. Pairs of tenants limited to one task at a time
-- are left alone (pgtask.promote_tenants hands theirs on). Rows locked by others are passed over
-- (SKIP LOCKED). More heads than slots are harmless: the slots (pgtask.take_slots) decide who
-- runs; the heads only keep a backlog out of the claim's way. Wakes the promoted tasks' queues;
-- returns how many were promoted.
CREATE OR REPLACE FUNCTION pgtask.promote_parallel(p_tenant_ids integer[], p_queues text[]) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  r record;
  v_heads integer;
  v_count integer := 0;
  v_queues text[] := '{}';
  v_run_ats timestamptz[] := '{}';
  v_now timestamptz := clock_timestamp();
  v_promoted record;
BEGIN
  FOR r IN
    SELECT DISTINCT x.tenant_id, x.queue, l.max_running AS n
    FROM unnest(p_tenant_ids, p_queues) AS x(tenant_id, queue)
    JOIN pgtask.flow_limit l ON l.scope = 'tenant' AND l.tenant_id = x.tenant_id AND l.max_running > 1
    WHERE x.queue IS NOT NULL
    ORDER BY x.tenant_id, x.queue
  LOOP
    SELECT count(*) INTO v_heads FROM pgtask.task h
    WHERE h.tenant_id = r.tenant_id AND h.queue = r.queue AND NOT h.blocked
      AND h.state IN ('available', 'retryable', 'running');
    CONTINUE WHEN v_heads >= r.n;
    FOR v_promoted IN
      WITH due AS (
        SELECT w.id FROM pgtask.task w
        WHERE w.tenant_id = r.tenant_id AND w.queue = r.queue AND w.blocked AND w.run_at <= v_now
        ORDER BY w.priority, w.run_at, w.id
        LIMIT r.n - v_heads
        FOR UPDATE SKIP LOCKED
      ), first_due AS (
        SELECT w.id FROM pgtask.task w
        WHERE v_heads = 0 AND NOT EXISTS (SELECT 1 FROM due)
          AND w.tenant_id = r.tenant_id AND w.queue = r.queue AND w.blocked
        ORDER BY w.run_at, w.priority, w.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
      )
      UPDATE pgtask.task t SET blocked = false
      WHERE t.id IN (SELECT id FROM due UNION ALL SELECT id FROM first_due)
      RETURNING t.queue, t.run_at
    LOOP
      v_count := v_count + 1;
      v_queues := v_queues || v_promoted.queue;
      v_run_ats := v_run_ats || v_promoted.run_at;
    END LOOP;
  END LOOP;
  IF v_count > 0 THEN
    PERFORM pgtask.wake_queues(v_queues, v_run_ats);
  END IF;
  RETURN v_count;
END
$$;

-- Hands on the heads of many (tenant, queue) pairs in one statement (parallel arrays). A pair
-- with a head that is running or due keeps it. Otherwise the pair's next head is, of its waiting
-- tasks in that queue, one that is due (the first in (priority, run_at, id) order), and when none
-- is due the one due first (run_at, then priority, id): a task due later than another never
-- becomes the head ahead of it, so no due task waits behind a head that is not due. It is
-- promoted only if it is due before every head the pair has left (all scheduled later), which
-- is the rule an insert follows. "Due" is by the clock, read once: the statement may run in a
-- task's transaction that began before the tasks enqueued while it ran. The walk reads one entry
-- of task_tenant_waiting_idx per distinct priority of the pair's waiting tasks, up to the first
-- priority with a task due (all of them only when none is due), never the backlog itself.
-- Rows locked by others are passed over (SKIP LOCKED). Wakes the queues of the promoted tasks
-- (a head due later by its "<queue> <ms>" payload); returns how many were promoted. Used by the
-- nested update trigger (through pgtask.heads_ended), the delete trigger and the workers' repair
-- pass; the statement-level update trigger runs the same query inline.
-- One set-based query, not a row trigger's three queries per finished head: that made the
-- completion of 32 tasks cost 30 ms under load.
-- pgtask.task_after_update_heads runs the same query inline (keep the two alike).
-- Generic plans: the plan does not depend on which tenants are passed (index probes per pair),
-- and re-planning this query for each call doubled the cost of completing one task.
CREATE OR REPLACE FUNCTION pgtask.promote_tenants(p_tenant_ids integer[], p_queues text[]) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_count integer;
  v_queues text[];
  v_run_ats timestamptz[];
  v_now timestamptz := clock_timestamp();
  v_parallel integer;
  v_all_tenants integer[] := p_tenant_ids;
  v_all_queues text[] := p_queues;
BEGIN
  -- tenants that may run N > 1 at once: their own hand-off (the query below gives one head)
  IF EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.scope = 'tenant' AND l.max_running > 1) THEN
    v_parallel := pgtask.promote_parallel(p_tenant_ids, p_queues);
    SELECT array_agg(x.tenant_id), array_agg(x.queue) INTO p_tenant_ids, p_queues
    FROM unnest(p_tenant_ids, p_queues) AS x(tenant_id, queue)
    WHERE pgtask.tenant_slots(x.tenant_id) <= 1;
  END IF;
  WITH RECURSIVE pairs AS (
    SELECT DISTINCT x.tenant_id, x.queue
    FROM unnest(p_tenant_ids, p_queues) AS x(tenant_id, queue)
    WHERE x.tenant_id IS NOT NULL AND x.queue IS NOT NULL
  ), headless AS (
    -- pairs without a head that is running or due; head_at: when the earliest of their heads
    -- (all scheduled later) is due, NULL when they have none
    SELECT p.tenant_id, p.queue,
           (SELECT min(h.run_at) FROM pgtask.task h
            WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
              AND h.state IN ('available', 'retryable', 'running')) AS head_at
    FROM pairs p
    WHERE NOT EXISTS (SELECT 1 FROM pgtask.task h
                      WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
                        AND h.state IN ('available', 'retryable', 'running')
                        AND (h.state = 'running' OR h.run_at <= v_now))
  ), walk AS (
    -- the first waiting task of each priority (task_tenant_waiting_idx, one probe each), best
    -- priority first, up to the first priority that has a task due
    SELECT o.tenant_id, o.queue, o.head_at, f.priority, f.run_at, f.id
    FROM headless o
    CROSS JOIN LATERAL (SELECT w.priority, w.run_at, w.id FROM pgtask.task w
                        WHERE w.tenant_id = o.tenant_id AND w.queue = o.queue AND w.blocked
                        ORDER BY w.priority, w.run_at, w.id
                        LIMIT 1) f
    UNION ALL
    SELECT k.tenant_id, k.queue, k.head_at, f.priority, f.run_at, f.id
    FROM walk k
    CROSS JOIN LATERAL (SELECT w.priority, w.run_at, w.id FROM pgtask.task w
                        WHERE w.tenant_id = k.tenant_id AND w.queue = k.queue AND w.blocked
                          AND w.priority > k.priority
                        ORDER BY w.priority, w.run_at, w.id
                        LIMIT 1) f
    WHERE k.run_at > v_now
  ), chosen AS (
    -- the due one if there is one (the best by priority, run_at, id); else the one due first
    SELECT DISTINCT ON (k.tenant_id, k.queue) k.tenant_id, k.queue, k.head_at, k.run_at, k.id
    FROM walk k
    ORDER BY k.tenant_id, k.queue, k.run_at > v_now, k.run_at, k.priority, k.id
  ), picked AS (
    -- only if it is due before every head left (as on insert); a chosen row someone else has
    -- locked is passed over for the next in (priority, run_at, id) order that may be a head
    SELECT coalesce(
             (SELECT w.id FROM pgtask.task w
              WHERE w.id = c.id AND w.tenant_id = c.tenant_id AND w.queue = c.queue AND w.blocked
              FOR UPDATE SKIP LOCKED),
             (SELECT w.id FROM pgtask.task w
              WHERE w.tenant_id = c.tenant_id AND w.queue = c.queue AND w.blocked
                AND w.run_at < coalesce(c.head_at, 'infinity')
                AND (w.run_at <= v_now OR c.run_at > v_now)
              ORDER BY w.priority, w.run_at, w.id
              LIMIT 1
              FOR UPDATE SKIP LOCKED)) AS id
    FROM chosen c
    WHERE c.run_at < coalesce(c.head_at, 'infinity')
  ), promoted AS (
    -- ids as an array: a join with picked was planned as a merge join over the primary key, read
    -- up to the picked id (2,003 rows for one promotion in a 4,000-task table, growing with it)
    UPDATE pgtask.task t SET blocked = false
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
    RETURNING t.queue, t.run_at
  )
  SELECT count(*)::integer, array_agg(p.queue), array_agg(p.run_at) INTO v_count, v_queues, v_run_ats FROM promoted p;
  IF v_count > 0 THEN
    PERFORM pgtask.wake_queues(v_queues, v_run_ats);
  END IF;
  -- weighted fair share (db/R__02b_fair_share.sql): the new heads' places
  IF v_count + coalesce(v_parallel, 0) > 0 AND EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
    PERFORM pgtask.assign_passes(v_all_tenants, v_all_queues, NULL);
  END IF;
  RETURN v_count + coalesce(v_parallel, 0);
END
$$;

-- The (tenant, queue) pairs of the heads an UPDATE statement ended (finished, stopped running,
-- pushed later, blocked, moved to another queue), handed on together. A tenant whose running task
-- stopped may have due heads the claim passed over while it ran (in other queues, or a failed
-- head whose retry came due): their queues are woken too, or they would wait for the next poll.
-- "Due" by the clock, not by now(): the statement runs in the task's transaction, which began
-- before the heads enqueued while the task ran.
CREATE OR REPLACE FUNCTION pgtask.heads_ended(p_tenants integer[], p_queues text[], p_stopped integer[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF p_tenants IS NOT NULL THEN
    PERFORM pgtask.promote_tenants(p_tenants, p_queues);
  END IF;
  IF p_stopped IS NOT NULL THEN
    PERFORM pgtask.wake_due_heads(p_stopped);
  END IF;
END
$$;

-- Generic plans here too: the wake-up query's parameter is an array, so every custom plan looked
-- cheaper than the generic one, and the server planned it again on every completed task of a
-- tenant (pg_stat_statements: 12,011 plans in 12,000 calls, 205 us of planning per task against
-- 17 us of execution; a fifth of the server's CPU per task with the defaults).
CREATE OR REPLACE FUNCTION pgtask.task_after_update_heads() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_tenants integer[];
  v_queues text[];
  v_stopped integer[];
  v_woken text[];
  v_run_ats timestamptz[];
  v_now timestamptz;
  v_passes double precision[];
  v_all_tenants integer[];
  v_all_queues text[];
  v_own text;
BEGIN
  SELECT array_agg(o.tenant_id), array_agg(o.queue),
         array_agg(o.tenant_id) FILTER (WHERE o.state = 'running' AND n.state <> 'running'),
         array_agg(o.pass)
  INTO v_tenants, v_queues, v_stopped, v_passes
  FROM old_tasks o
  JOIN new_tasks n ON n.id = o.id
  WHERE o.tenant_id IS NOT NULL AND NOT o.blocked
    AND o.state IN ('available', 'retryable', 'running')
    AND (n.blocked OR n.state NOT IN ('available', 'retryable', 'running')
         OR (o.state = 'running' AND n.state <> 'running')
         OR n.run_at > o.run_at
         OR n.queue <> o.queue);
  v_all_tenants := v_tenants;
  v_all_queues := v_queues;
  -- tenants that may run N > 1 at once (pgtask.set_limit): their own hand-off; one probe of a
  -- table that is empty without limits
  IF v_tenants IS NOT NULL
     AND EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.scope = 'tenant' AND l.max_running > 1) THEN
    PERFORM pgtask.promote_parallel(v_tenants, v_queues);
    SELECT array_agg(x.tenant_id), array_agg(x.queue) INTO v_tenants, v_queues
    FROM unnest(v_tenants, v_queues) AS x(tenant_id, queue)
    WHERE pgtask.tenant_slots(x.tenant_id) <= 1;
  END IF;
  -- nobody of these tenants waits in the queue of its ended head (one probe of
  -- task_tenant_waiting_idx per pair): no head to hand on to, and the hand-off's query (its plan
  -- started for nothing: half of this function's cost) is skipped. Per queue, as heads are: a tenant
  -- with a backlog in another queue (one whose workers are down) made every completion of its tasks
  -- here run the whole query for nothing (issue 31: the defaults beside 1,000,000 rows of which half
  -- such a backlog, 0.53 of their speed on an empty table)
  IF v_tenants IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM unnest(v_tenants, v_queues) AS x(tenant_id, queue)
                     WHERE EXISTS (SELECT 1 FROM pgtask.task w
                                   WHERE w.tenant_id = x.tenant_id AND w.queue = x.queue AND w.blocked)) THEN
    v_tenants := NULL;
  END IF;
  -- as pgtask.heads_ended does, inline, and pgtask.promote_tenants's query inline too: a call of
  -- that function (its own settings set and restored, its statement prepared in its own frame)
  -- cost more than the query it runs, once per completed task of a tenant with the defaults
  IF v_tenants IS NOT NULL THEN
    v_now := clock_timestamp();
    WITH RECURSIVE pairs AS (
      SELECT DISTINCT x.tenant_id, x.queue
      FROM unnest(v_tenants, v_queues) AS x(tenant_id, queue)
      WHERE x.tenant_id IS NOT NULL AND x.queue IS NOT NULL
    ), headless AS (
      -- pairs without a head that is running or due; head_at: when the earliest of their heads
      -- (all scheduled later) is due, NULL when they have none
      SELECT p.tenant_id, p.queue,
             (SELECT min(h.run_at) FROM pgtask.task h
              WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
                AND h.state IN ('available', 'retryable', 'running')) AS head_at
      FROM pairs p
      WHERE NOT EXISTS (SELECT 1 FROM pgtask.task h
                        WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
                          AND h.state IN ('available', 'retryable', 'running')
                          AND (h.state = 'running' OR h.run_at <= v_now))
    ), walk AS (
      -- the first waiting task of each priority (task_tenant_waiting_idx, one probe each), best
      -- priority first, up to the first priority that has a task due
      SELECT o.tenant_id, o.queue, o.head_at, f.priority, f.run_at, f.id
      FROM headless o
      CROSS JOIN LATERAL (SELECT w.priority, w.run_at, w.id FROM pgtask.task w
                          WHERE w.tenant_id = o.tenant_id AND w.queue = o.queue AND w.blocked
                          ORDER BY w.priority, w.run_at, w.id
                          LIMIT 1) f
      UNION ALL
      SELECT k.tenant_id, k.queue, k.head_at, f.priority, f.run_at, f.id
      FROM walk k
      CROSS JOIN LATERAL (SELECT w.priority, w.run_at, w.id FROM pgtask.task w
                          WHERE w.tenant_id = k.tenant_id AND w.queue = k.queue AND w.blocked
                            AND w.priority > k.priority
                          ORDER BY w.priority, w.run_at, w.id
                          LIMIT 1) f
      WHERE k.run_at > v_now
    ), chosen AS (
      -- the due one if there is one (the best by priority, run_at, id); else the one due first
      SELECT DISTINCT ON (k.tenant_id, k.queue) k.tenant_id, k.queue, k.head_at, k.run_at, k.id
      FROM walk k
      ORDER BY k.tenant_id, k.queue, k.run_at > v_now, k.run_at, k.priority, k.id
    ), picked AS (
      -- only if it is due before every head left (as on insert); a chosen row someone else has
      -- locked is passed over for the next in (priority, run_at, id) order that may be a head
      SELECT coalesce(
               (SELECT w.id FROM pgtask.task w
                WHERE w.id = c.id AND w.tenant_id = c.tenant_id AND w.queue = c.queue AND w.blocked
                FOR UPDATE SKIP LOCKED),
               (SELECT w.id FROM pgtask.task w
                WHERE w.tenant_id = c.tenant_id AND w.queue = c.queue AND w.blocked
                  AND w.run_at < coalesce(c.head_at, 'infinity')
                  AND (w.run_at <= v_now OR c.run_at > v_now)
                ORDER BY w.priority, w.run_at, w.id
                LIMIT 1
                FOR UPDATE SKIP LOCKED)) AS id
      FROM chosen c
      WHERE c.run_at < coalesce(c.head_at, 'infinity')
    ), promoted AS (
      -- ids as an array, as in pgtask.promote_tenants: a join was planned as a merge join over the key
      UPDATE pgtask.task t SET blocked = false
      WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
      RETURNING t.queue, t.run_at
    )
    SELECT array_agg(p.queue), array_agg(p.run_at) INTO v_woken, v_run_ats FROM promoted p;
    -- pgtask.wake_queues wakes nobody for a due head in a queue of the completing worker (it claims
    -- again itself): that common case is told here without the call
    IF v_woken IS NOT NULL THEN
      v_own := current_setting('pgtask.worker_queues', true);
      FOR i IN 1 .. array_length(v_woken, 1) LOOP
        IF v_run_ats[i] > clock_timestamp() OR NOT coalesce(strpos(v_own, ',' || v_woken[i] || ',') > 0, false) THEN
          PERFORM pgtask.wake_queues(v_woken, v_run_ats);
          EXIT;
        END IF;
      END LOOP;
    END IF;
  END IF;
  -- weighted fair share (db/R__02b_fair_share.sql): the new heads' places, after the passes of the
  -- heads that ended
  IF v_all_tenants IS NOT NULL AND EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
    PERFORM pgtask.assign_passes(v_all_tenants, v_all_queues, v_passes);
  END IF;
  -- pgtask.wake_due_heads (db/R__02a_wakeup.sql) inline, for the same reason: keep the two alike
  IF v_stopped IS NOT NULL THEN
    PERFORM pg_notify('pgtask', d.queue)
    FROM (SELECT DISTINCT h.queue FROM pgtask.task h
          WHERE h.tenant_id = ANY (v_stopped) AND NOT h.blocked
            AND h.state IN ('available', 'retryable') AND h.run_at <= clock_timestamp()) d
    WHERE NOT coalesce(strpos(current_setting('pgtask.worker_queues', true), ',' || d.queue || ',') > 0, false);
  END IF;
  RETURN NULL;
END
$$;

-- The same for one row, for UPDATEs made inside a trigger (below).
CREATE OR REPLACE FUNCTION pgtask.task_after_update_head_nested() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  PERFORM pgtask.heads_ended(ARRAY[OLD.tenant_id], ARRAY[OLD.queue],
    CASE WHEN OLD.state = 'running' AND NEW.state <> 'running' THEN ARRAY[OLD.tenant_id] END);
  RETURN NULL;
END
$$;

-- Top-level UPDATEs (every statement of the workers and of pgtask's functions): the statement
-- trigger, one set-based pass over the statement's rows. UPDATEs made inside a trigger (the
-- promotion's own UPDATE inside this trigger, which only unblocks rows and so never ends a head;
-- an application's trigger that calls a pgtask function): a row trigger whose WHEN clause the
-- server evaluates without calling any function, so the promotion's UPDATE costs no second
-- trigger call per completed task (it did: half of the trigger calls of a drain with tenants).
DROP TRIGGER IF EXISTS task_after_update_heads ON pgtask.task;
-- Not for a claim's UPDATE (available or retryable to running: no head ends, nothing a head
-- depends on changes): the claim sets pgtask.claiming for its own transaction
-- (dev.pgtask.internal.sql.ClaimStatements), and the call and its query over the transition tables
-- cost every claim about a tenth of a millisecond for nothing.
CREATE TRIGGER task_after_update_heads
  AFTER UPDATE ON pgtask.task
  REFERENCING OLD TABLE AS old_tasks NEW TABLE AS new_tasks
  FOR EACH STATEMENT
  WHEN (pg_trigger_depth() = 0 AND current_setting('pgtask.claiming', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION pgtask.task_after_update_heads();

DROP TRIGGER IF EXISTS task_after_update_head_nested ON pgtask.task;
CREATE TRIGGER task_after_update_head_nested
  AFTER UPDATE ON pgtask.task
  FOR EACH ROW WHEN (
    pg_trigger_depth() > 0
    AND OLD.tenant_id IS NOT NULL AND NOT OLD.blocked
    AND OLD.state IN ('available', 'retryable', 'running')
    AND (NEW.blocked OR NEW.state NOT IN ('available', 'retryable', 'running')
         OR (OLD.state = 'running' AND NEW.state <> 'running')
         OR NEW.run_at > OLD.run_at
         OR NEW.queue <> OLD.queue))
  EXECUTE FUNCTION pgtask.task_after_update_head_nested();

-- Deletes of heads are rare (retention deletes finished tasks, which the trigger's WHEN skips):
-- a row trigger, calling the one hand-off function.
CREATE OR REPLACE FUNCTION pgtask.task_after_head_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  PERFORM pgtask.promote_tenants(ARRAY[OLD.tenant_id], ARRAY[OLD.queue]);
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_after_delete_head ON pgtask.task;
CREATE TRIGGER task_after_delete_head
  AFTER DELETE ON pgtask.task
  FOR EACH ROW WHEN (
    OLD.tenant_id IS NOT NULL AND NOT OLD.blocked
    AND OLD.state IN ('available', 'retryable', 'running'))
  EXECUTE FUNCTION pgtask.task_after_head_change();
