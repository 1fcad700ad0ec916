-- Tenant-fair scheduling (see docs/how-it-works.md) and wake-ups.
--
-- Heads are per tenant AND queue: in each queue, a tenant has one "head" task that may be claimed
-- or run; its other queued tasks in that queue wait (blocked) and are handed the head in turn. A
-- tenant's head in a queue nobody works therefore never holds back its tasks in other queues.
-- Mutual exclusion across queues is not the scheduling's job: the tenant's advisory lock, taken
-- by the worker inside the task's transaction, excludes overlap everywhere, and the claim passes
-- over tenants that have a task running anywhere.

-- A new task of a tenant waits when the tenant already has a head in the task's queue that is
-- running or due no later than the new task.
CREATE OR REPLACE FUNCTION pgtask.task_before_insert_tenant() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NEW.state IN ('available', 'retryable') THEN
    NEW.blocked := EXISTS (
      SELECT 1 FROM pgtask.task h
      WHERE h.tenant_id = NEW.tenant_id AND h.queue = NEW.queue AND NOT h.blocked
        AND h.state IN ('available', 'retryable', 'running')
        AND (h.state = 'running' OR h.run_at <= NEW.run_at));
  END IF;
  RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS task_before_insert_tenant ON pgtask.task;
CREATE TRIGGER task_before_insert_tenant
  BEFORE INSERT ON pgtask.task
  FOR EACH ROW WHEN (NEW.tenant_id IS NOT NULL)
  EXECUTE FUNCTION pgtask.task_before_insert_tenant();

-- Hands on the heads of many (tenant, queue) pairs in one statement (parallel arrays): for each
-- pair without a head that is running or due, the next waiting task of that tenant in that queue
-- is promoted, in (priority, run_at, id) order; when the pair still has a head scheduled for
-- later, only a waiting task that is already due is. Rows locked by others are passed over (SKIP
-- LOCKED). Wakes the queues of the promoted tasks; returns how many were promoted. Used by the
-- update and delete triggers and by the workers' repair pass.
-- One set-based query, not a row trigger's three queries per finished head: that made the
-- completion of 32 tasks cost 30 ms under load.
-- Generic plans: the plan does not depend on which tenants are passed (index probes per pair),
-- and re-planning this query for each call doubled the cost of completing one task.
CREATE OR REPLACE FUNCTION pgtask.promote_tenants(p_tenant_ids integer[], p_queues text[]) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_count integer;
  v_queues text[];
BEGIN
  WITH pairs AS (
    SELECT DISTINCT x.tenant_id, x.queue
    FROM unnest(p_tenant_ids, p_queues) AS x(tenant_id, queue)
    WHERE x.tenant_id IS NOT NULL AND x.queue IS NOT NULL
  ), headless AS (
    SELECT p.tenant_id, p.queue,
           EXISTS (SELECT 1 FROM pgtask.task h
                   WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
                     AND h.state IN ('available', 'retryable', 'running')) AS has_head
    FROM pairs p
    WHERE NOT EXISTS (SELECT 1 FROM pgtask.task h
                      WHERE h.tenant_id = p.tenant_id AND h.queue = p.queue AND NOT h.blocked
                        AND h.state IN ('available', 'retryable', 'running')
                        AND (h.state = 'running' OR h.run_at <= now()))
  ), picked AS (
    SELECT (SELECT w.id FROM pgtask.task w
            WHERE w.tenant_id = hl.tenant_id AND w.queue = hl.queue AND w.blocked
              AND (NOT hl.has_head OR w.run_at <= now())
            ORDER BY w.priority, w.run_at, w.id
            LIMIT 1
            FOR UPDATE SKIP LOCKED) AS id
    FROM headless hl
  ), promoted AS (
    UPDATE pgtask.task t SET blocked = false
    FROM picked p
    WHERE t.id = p.id
    RETURNING t.queue
  )
  SELECT count(*)::integer, array_agg(DISTINCT p.queue) INTO v_count, v_queues FROM promoted p;
  IF v_count > 0 THEN
    PERFORM pg_notify('pgtask', q) FROM unnest(v_queues) AS q;
  END IF;
  RETURN v_count;
END
$$;

-- The (tenant, queue) pairs of the heads an UPDATE statement ended (finished, stopped running,
-- pushed later, blocked, moved to another queue), handed on together. A tenant whose running task
-- stopped may have due heads the claim passed over while it ran (in other queues, or a failed
-- head whose retry came due): their queues are woken too, or they would wait for the next poll.
CREATE OR REPLACE FUNCTION pgtask.task_after_update_heads() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_tenants integer[];
  v_queues text[];
  v_stopped integer[];
BEGIN
  SELECT array_agg(o.tenant_id), array_agg(o.queue),
         array_agg(o.tenant_id) FILTER (WHERE o.state = 'running' AND n.state <> 'running')
  INTO v_tenants, v_queues, v_stopped
  FROM old_tasks o
  JOIN new_tasks n ON n.id = o.id
  WHERE o.tenant_id IS NOT NULL AND NOT o.blocked
    AND o.state IN ('available', 'retryable', 'running')
    AND (n.blocked OR n.state NOT IN ('available', 'retryable', 'running')
         OR (o.state = 'running' AND n.state <> 'running')
         OR n.run_at > o.run_at
         OR n.queue <> o.queue);
  IF v_tenants IS NOT NULL THEN
    PERFORM pgtask.promote_tenants(v_tenants, v_queues);
  END IF;
  IF v_stopped IS NOT NULL THEN
    PERFORM pg_notify('pgtask', d.queue)
    FROM (SELECT DISTINCT h.queue FROM pgtask.task h
          WHERE h.tenant_id = ANY (v_stopped) AND NOT h.blocked
            AND h.state IN ('available', 'retryable') AND h.run_at <= now()) d;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_after_update_heads ON pgtask.task;
CREATE TRIGGER task_after_update_heads
  AFTER UPDATE ON pgtask.task
  REFERENCING OLD TABLE AS old_tasks NEW TABLE AS new_tasks
  FOR EACH STATEMENT
  EXECUTE FUNCTION pgtask.task_after_update_heads();

-- Deletes of heads are rare (retention deletes finished tasks, which the trigger's WHEN skips):
-- a row trigger, calling the one hand-off function.
CREATE OR REPLACE FUNCTION pgtask.task_after_head_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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

-- ---------------------------------------------------------------------------------------------
-- Wake-ups: one notification per queue per transaction, payload = queue name only.
-- PostgreSQL folds identical (channel, payload) pairs of one transaction into one notification.
-- ---------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION pgtask.task_after_insert_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_queue text;
BEGIN
  FOR v_queue IN SELECT DISTINCT n.queue FROM new_tasks n WHERE NOT n.blocked LOOP
    PERFORM pg_notify('pgtask', v_queue);
  END LOOP;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_after_insert_notify ON pgtask.task;
CREATE TRIGGER task_after_insert_notify
  AFTER INSERT ON pgtask.task
  REFERENCING NEW TABLE AS new_tasks
  FOR EACH STATEMENT
  EXECUTE FUNCTION pgtask.task_after_insert_notify();
