-- Seeing the limits (pgtask.set_limit, db/R__01a_flow_limits.sql): the pgtask.limits view and the
-- explanation of a task that waits for a slot. Owner only, like the other operator views and
-- functions (no grants).

-- The tasks of a limit's key: p_scope 'tenant' (by tenant id), 'queue' or 'kind' (by name).
CREATE OR REPLACE FUNCTION pgtask.limit_matches(p_scope text, p_key text, p_tenant_id integer,
  t_tenant_id integer, t_queue text, t_kind text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE p_scope WHEN 'tenant' THEN t_tenant_id = p_tenant_id
                      WHEN 'queue' THEN t_queue = p_key
                      ELSE t_kind = p_key END
$$;

-- One row per limit, with what it admits now:
--   running       its tasks in state running (claimed ones too: see pgtask.running.claimed_ahead)
--   slots_held    its slots held right now by transactions (pg_locks): never above max_running.
--                 It may differ from running legitimately: tasks claimed ahead of a free executor
--                 hold no slot yet, and tasks sharing one transaction (HandlerOptions
--                 .withSharedTransaction) share its slot
--   waiting       its queued tasks (available or retryable, due or not, waiting behind a tenant
--                 head or not); oldest_waiting_since: the run_at of its oldest due one
--   stuck         its running tasks whose lease has run out: their worker is gone, and the
--                 rescue pass takes them back (until then the claim counts them as running)
--   per_second, burst, tokens, next_token_at
--                 a rate limit, the starts its bucket admits now, and when its next token is
--                 due while it has none (NULL otherwise)
--   weight        a tenant's weight in fair share (db/R__02b_fair_share.sql), NULL for 1
-- A tenant without a limit runs one task at a time and is not listed.
CREATE OR REPLACE VIEW pgtask.limits AS
SELECT l.scope, l.key, coalesce(l.max_running, CASE WHEN l.scope = 'tenant' THEN 1 END) AS max_running,
       (SELECT count(*) FROM pgtask.task r
        WHERE r.state = 'running' AND pgtask.limit_matches(l.scope, l.key, l.tenant_id, r.tenant_id, r.queue, r.kind)
       ) AS running,
       (SELECT count(*) FROM pg_locks k
        WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2
          AND k.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
          AND CASE WHEN l.scope = 'tenant'
                   THEN pgtask.slot_offset(k.classid) < 1024 AND k.objid = l.tenant_id::text::oid
                   ELSE pgtask.slot_offset(k.classid) BETWEEN 1024 AND 2047 AND k.objid = l.id::text::oid END
       ) AS slots_held,
       (SELECT count(*) FROM pgtask.task w
        WHERE w.state IN ('available', 'retryable')
          AND pgtask.limit_matches(l.scope, l.key, l.tenant_id, w.tenant_id, w.queue, w.kind)) AS waiting,
       (SELECT min(w.run_at) FROM pgtask.task w
        WHERE w.state IN ('available', 'retryable') AND w.run_at <= now()
          AND pgtask.limit_matches(l.scope, l.key, l.tenant_id, w.tenant_id, w.queue, w.kind)) AS oldest_waiting_since,
       (SELECT count(*) FROM pgtask.task r
        WHERE r.state = 'running' AND r.lease_until < now()
          AND pgtask.limit_matches(l.scope, l.key, l.tenant_id, r.tenant_id, r.queue, r.kind)) AS stuck,
       l.updated_at, l.updated_by,
       l.per_second, l.burst,
       (SELECT pgtask.tokens_now(b.tat, l.per_second, l.burst, clock_timestamp())
        FROM pgtask.limit_bucket b WHERE b.limit_id = l.id) AS tokens,
       (SELECT greatest(b.tat - make_interval(secs => (l.burst - 1) / l.per_second), clock_timestamp())
        FROM pgtask.limit_bucket b WHERE b.limit_id = l.id
          AND pgtask.tokens_now(b.tat, l.per_second, l.burst, clock_timestamp()) = 0) AS next_token_at,
       l.weight
FROM pgtask.flow_limit l;

-- NULL when no concurrency limit that applies to a task (of this tenant, queue and kind) is full;
-- else the first full one, in the order a task's slots are taken (tenant, queue, kind), as
-- {"reason": "limit_full", "limit_scope", "limit_key", "max_running", "running", "running_task_ids",
-- "text"}: e.g. "it waits for a slot of kind report.render: 2 of 2 running (tasks 812, 815)".
-- Counted from the running rows, as the claim counts them. A tenant without a limit is not a
-- limit here (pgtask.explain_task_json explains waiting behind a tenant's task).
CREATE OR REPLACE FUNCTION pgtask.limit_full_json(p_tenant_id integer, p_queue text, p_kind text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  l record;
  v_running bigint;
  v_ids bigint[];
BEGIN
  FOR l IN
    SELECT f.* FROM pgtask.flow_limit f
    WHERE f.max_running IS NOT NULL
      AND ((f.scope = 'tenant' AND f.tenant_id = p_tenant_id) OR (f.scope = 'queue' AND f.key = p_queue)
           OR (f.scope = 'kind' AND f.key = p_kind))
    ORDER BY CASE f.scope WHEN 'tenant' THEN 0 WHEN 'queue' THEN 1 ELSE 2 END
  LOOP
    SELECT count(*), (array_agg(r.id ORDER BY r.attempted_at, r.id))[1:10] INTO v_running, v_ids
    FROM pgtask.task r
    WHERE r.state = 'running' AND pgtask.limit_matches(l.scope, l.key, l.tenant_id, r.tenant_id, r.queue, r.kind);
    IF v_running >= l.max_running THEN
      RETURN jsonb_build_object('reason', 'limit_full', 'limit_scope', l.scope, 'limit_key', l.key,
        'max_running', l.max_running, 'running', v_running, 'running_task_ids', to_jsonb(v_ids),
        'text', format('it waits for a slot of %s %s: %s of %s running (task%s %s%s)', l.scope, l.key, v_running,
          l.max_running, CASE WHEN v_running = 1 THEN '' ELSE 's' END, array_to_string(v_ids, ', '),
          CASE WHEN v_running > 10 THEN ', ...' ELSE '' END));
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

REVOKE EXECUTE ON FUNCTION pgtask.limit_matches(text, text, integer, integer, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.limit_full_json(integer, text, text) FROM PUBLIC;

-- On an upgrade, R__06_privileges does not run again (its text is unchanged), and a function is
-- executable by PUBLIC when created: the limits' functions (R__01a) lose that here, as every
-- function of the schema does in R__06 on a new install.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA pgtask FROM PUBLIC;
