-- Faster hand-off and enqueue (measured with bin/pgtask bench; see docs/benchmarks.md).
--
-- 1. Tenant hand-off per statement, not per row. V1 promoted a tenant's next task from a row-level
--    trigger: one plpgsql call and three queries per finished head, which made the completion of
--    32 tasks cost 30 ms under load. A statement-level trigger now collects the tenants whose head
--    ended in the statement (transition tables) and promotes all of them in one query.
-- 2. pgtask.enqueue reads the payload limit into a variable before validating: with a sub-select
--    among its arguments the validation function could not be inlined and PostgreSQL planned it
--    afresh on every call (about half of the function's time). A task without a tenant no longer
--    calls pgtask.tenant_id.

-- Hands on the heads of many tenants in one statement, replacing V1's promote_tenant (same rules):
-- for each tenant without a head that is running or due, the next waiting task is promoted (only
-- one already due when the tenant still has a head scheduled for later). Rows locked by others are
-- passed over (SKIP LOCKED). Wakes the queues of the promoted tasks; returns how many were
-- promoted. Used by the update and delete triggers and by the workers' repair pass.
-- Generic plans: the plan does not depend on which tenants are passed (index probes per tenant),
-- and re-planning this query for each call doubled the cost of completing one task.
CREATE FUNCTION pgtask.promote_tenants(p_tenant_ids integer[]) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_count integer;
  v_queues text[];
BEGIN
  WITH tenants AS (
    SELECT DISTINCT x.tenant_id FROM unnest(p_tenant_ids) AS x(tenant_id) WHERE x.tenant_id IS NOT NULL
  ), headless AS (
    SELECT t.tenant_id,
           EXISTS (SELECT 1 FROM pgtask.task h
                   WHERE h.tenant_id = t.tenant_id AND NOT h.blocked
                     AND h.state IN ('available', 'retryable', 'running')) AS has_head
    FROM tenants t
    WHERE NOT EXISTS (SELECT 1 FROM pgtask.task h
                      WHERE h.tenant_id = t.tenant_id AND NOT h.blocked
                        AND h.state IN ('available', 'retryable', 'running')
                        AND (h.state = 'running' OR h.run_at <= now()))
  ), picked AS (
    SELECT (SELECT w.id FROM pgtask.task w
            WHERE w.tenant_id = hl.tenant_id AND w.blocked AND (NOT hl.has_head OR w.run_at <= now())
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

-- The tenants of the heads an UPDATE statement ended (finished, deferred, pushed later, blocked),
-- handed on together. Same head-change rule as V1's row trigger.
CREATE FUNCTION pgtask.task_after_update_heads() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_tenants integer[];
BEGIN
  SELECT array_agg(o.tenant_id) INTO v_tenants
  FROM old_tasks o
  JOIN new_tasks n ON n.id = o.id
  WHERE o.tenant_id IS NOT NULL AND NOT o.blocked
    AND o.state IN ('available', 'retryable', 'running')
    AND (n.blocked OR n.state NOT IN ('available', 'retryable', 'running')
         OR (o.state = 'running' AND n.state <> 'running')
         OR n.run_at > o.run_at);
  IF v_tenants IS NOT NULL THEN
    PERFORM pgtask.promote_tenants(v_tenants);
  END IF;
  RETURN NULL;
END
$$;

-- Deletes of heads are rare (retention deletes finished tasks, which the trigger's WHEN skips):
-- the row trigger stays, calling the one hand-off function.
CREATE OR REPLACE FUNCTION pgtask.task_after_head_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pgtask.promote_tenants(ARRAY[OLD.tenant_id]);
  RETURN NULL;
END
$$;

DROP TRIGGER task_after_update_head ON pgtask.task;
DROP FUNCTION pgtask.promote_tenant(integer);

CREATE TRIGGER task_after_update_heads
  AFTER UPDATE ON pgtask.task
  REFERENCING OLD TABLE AS old_tasks NEW TABLE AS new_tasks
  FOR EACH STATEMENT
  EXECUTE FUNCTION pgtask.task_after_update_heads();

CREATE OR REPLACE FUNCTION pgtask.enqueue(
  kind text,
  payload jsonb DEFAULT '{}',
  queue text DEFAULT 'default',
  tenant text DEFAULT NULL,
  run_at timestamptz DEFAULT NULL,
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 25,
  dedupe_key text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_max_payload integer;
  v_error text;
  v_tenant_id integer;
  v_id bigint;
BEGIN
  SELECT s.max_payload_bytes INTO v_max_payload FROM pgtask.settings s;
  v_error := pgtask.task_input_error(enqueue.kind, enqueue.payload, enqueue.queue, enqueue.tenant,
    enqueue.max_attempts, enqueue.dedupe_key, v_max_payload);
  IF v_error IS NOT NULL THEN
    PERFORM pgtask.raise_input_error(v_error, NULL);
  END IF;
  IF enqueue.tenant IS NOT NULL THEN
    v_tenant_id := pgtask.tenant_id(enqueue.tenant);
  END IF;
  IF enqueue.dedupe_key IS NULL THEN
    INSERT INTO pgtask.task (kind, payload, queue, tenant_id, run_at, priority, max_attempts)
    VALUES (enqueue.kind, enqueue.payload, enqueue.queue, v_tenant_id, coalesce(enqueue.run_at, now()),
            coalesce(enqueue.priority, 0), enqueue.max_attempts)
    RETURNING id INTO v_id;
    RETURN v_id;
  END IF;
  LOOP
    INSERT INTO pgtask.task (kind, payload, queue, tenant_id, run_at, priority, max_attempts, dedupe_key)
    VALUES (enqueue.kind, enqueue.payload, enqueue.queue, v_tenant_id, coalesce(enqueue.run_at, now()),
            coalesce(enqueue.priority, 0), enqueue.max_attempts, enqueue.dedupe_key)
    ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND state IN ('available', 'retryable', 'running')
    DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
    SELECT t.id INTO v_id FROM pgtask.task t
    WHERE t.dedupe_key = enqueue.dedupe_key AND t.state IN ('available', 'retryable', 'running');
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
    -- the holder finished between the two statements: try again
  END LOOP;
END
$$;

REVOKE EXECUTE ON FUNCTION pgtask.promote_tenants(integer[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.task_after_update_heads() FROM PUBLIC;
