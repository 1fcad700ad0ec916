-- Weighted fair share between the tenants of a queue (V11__fair_share.sql; docs/how-it-works.md,
-- "Weights"). Start-time fair queueing on the task rows: while some tenant has a weight
-- (pgtask.set_limit('tenant', key, weight => w)), every task that becomes claimable is given a
-- pass, and the claim takes tasks in (priority, pass, run_at, id) order.
-- - A tenant's next head in a queue: 1/weight after the tenant's latest pass there (its heads and
--   running tasks, or the head that just finished). A tenant with none of those was idle: its
--   head gets the queue's virtual time, so it comes back at the queue's present, with no credit
--   banked; so does a head not due yet (idle until it is due).
--   Not clamped to the virtual time while the tenant is active: a tenant whose heads all finished
--   in one statement while the others' claimed-ahead tasks ran would lose its place at every such
--   hand-off.
-- - The queue's virtual time: the smallest pass of its running tasks (the oldest place still being
--   served), else the pass of the head that just finished, else the smallest pass waiting, else 0.
--   Not the largest: with tasks claimed ahead, a tenant whose heads were all running when the
--   others' were claimed would be put behind every one of those at each hand-off (measured: 25 of
--   240 starts for weight 3 against 1, two processes of two executors).
-- - Tasks without a tenant are one more tenant of weight 1 each queue: a statement's new tasks
--   without a tenant get the queue's virtual time + 1, + 2, ... in (priority, run_at, id) order.
-- Without a weight nothing here runs but one probe of pgtask.flow_limit per statement, and every
-- pass stays NULL: the claim's order is the one it had before weights.
-- Passes are a hint for the order of starts, never a guarantee of exclusion: two transactions that
-- promote heads of one tenant at once may give them equal passes (the claim then orders them by
-- run_at, id); nothing but the share over many starts depends on them.

CREATE OR REPLACE FUNCTION pgtask.queue_pass(p_queue text, p_prev double precision) RETURNS double precision
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
  SELECT coalesce(
    (SELECT min(r.pass) FROM pgtask.task r WHERE r.state = 'running' AND r.queue = p_queue),
    p_prev,
    (SELECT w.pass FROM pgtask.task w
     WHERE w.queue = p_queue AND w.state IN ('available', 'retryable') AND NOT w.blocked AND w.pass IS NOT NULL
     ORDER BY w.priority, w.pass NULLS FIRST
     LIMIT 1),
    0)
$$;

-- A tenant's weight: its limit's, 1 without one.
CREATE OR REPLACE FUNCTION pgtask.tenant_weight(p_tenant_id integer) RETURNS double precision
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce((SELECT l.weight FROM pgtask.flow_limit l
                   WHERE l.scope = 'tenant' AND l.tenant_id = p_tenant_id), 1)::double precision
$$;

-- Gives passes to the claimable heads without one of each (tenant, queue) pair (parallel arrays;
-- p_prevs: the passes of the pair's heads that just finished, or NULL), in (priority, run_at, id)
-- order. A tenant that may run N at once has N heads, N "lanes": the head that takes over from a
-- finished one gets its pass + N/weight, so the tenant's passes still advance 1/weight a start, and
-- no two transactions handing on heads of one tenant at once can give them the same place (each
-- reads only the pass of the head it finished; reading the tenant's other heads instead, two such
-- hand-offs each missed the other's and gave equal passes: 81 % of the starts for a weight of 3
-- against 1, two processes of two executors). Other new heads (an insert, a repair, more heads than
-- finished ones) go on 1/weight after the tenant's latest pass, or start at the queue's virtual time
-- when it has none (idle). Rows locked by others are passed over (they keep no pass: taken first).
CREATE OR REPLACE FUNCTION pgtask.assign_passes(p_tenants integer[], p_queues text[], p_prevs double precision[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  r record;
  v_weight double precision;
  v_lanes integer;
  v_finished integer;
  v_start double precision;
  v_now double precision;
BEGIN
  FOR r IN SELECT x.tenant_id, x.queue,
                  array_agg(x.prev ORDER BY x.prev) FILTER (WHERE x.prev IS NOT NULL) AS prevs
           FROM unnest(p_tenants, p_queues, p_prevs) AS x(tenant_id, queue, prev)
           WHERE x.tenant_id IS NOT NULL AND x.queue IS NOT NULL
           GROUP BY x.tenant_id, x.queue
           ORDER BY x.tenant_id, x.queue
  LOOP
    CONTINUE WHEN NOT EXISTS (
      SELECT 1 FROM pgtask.task h
      WHERE h.tenant_id = r.tenant_id AND h.queue = r.queue AND NOT h.blocked
        AND h.state IN ('available', 'retryable') AND h.pass IS NULL);
    v_weight := pgtask.tenant_weight(r.tenant_id);
    v_lanes := pgtask.tenant_slots(r.tenant_id);
    v_finished := coalesce(cardinality(r.prevs), 0);
    v_now := pgtask.queue_pass(r.queue, r.prevs[1]);
    -- after the finished heads' successors: 1/weight after the tenant's latest pass (its heads and
    -- running tasks, the finished heads); an idle tenant starts at the queue's virtual time
    v_start := coalesce(
      (SELECT greatest(max(h.pass), r.prevs[v_finished] + (v_lanes - 1) / v_weight) FROM pgtask.task h
       WHERE h.tenant_id = r.tenant_id AND h.queue = r.queue AND NOT h.blocked
         AND h.state IN ('available', 'retryable', 'running')) + 1 / v_weight,
      v_now);
    -- a head not due yet starts no earlier than the queue's virtual time either: it is idle until due
    UPDATE pgtask.task t
    SET pass = CASE WHEN s.run_at > clock_timestamp() THEN greatest(s.pass, v_now) ELSE s.pass END
    FROM (SELECT l.id, l.run_at,
                 CASE WHEN l.rn <= v_finished THEN r.prevs[l.rn] + v_lanes / v_weight
                      ELSE v_start + (l.rn - v_finished - 1) / v_weight END AS pass
          FROM (SELECT k.id, k.run_at, row_number() OVER (ORDER BY k.priority, k.run_at, k.id) AS rn
                FROM (SELECT h.id, h.priority, h.run_at FROM pgtask.task h
                      WHERE h.tenant_id = r.tenant_id AND h.queue = r.queue AND NOT h.blocked
                        AND h.state IN ('available', 'retryable') AND h.pass IS NULL
                      FOR UPDATE SKIP LOCKED) k) l) s
    WHERE t.id = s.id;
  END LOOP;
END
$$;

-- Passes for the tasks without a tenant given (claimable, without a pass): per queue, its virtual
-- time + 1, + 2, ... in (priority, run_at, id) order.
CREATE OR REPLACE FUNCTION pgtask.assign_passes_untenanted(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  UPDATE pgtask.task t SET pass = s.base + s.rn
  FROM (SELECT l.id, pgtask.queue_pass(l.queue, NULL) AS base,
               row_number() OVER (PARTITION BY l.queue ORDER BY l.priority, l.run_at, l.id) AS rn
        FROM (SELECT u.id, u.queue, u.priority, u.run_at FROM pgtask.task u
              WHERE u.id = ANY (p_ids) AND u.tenant_id IS NULL AND NOT u.blocked
                AND u.state IN ('available', 'retryable') AND u.pass IS NULL
              FOR UPDATE SKIP LOCKED) l) s
  WHERE t.id = s.id;
END
$$;

-- When the last weight goes (called by set_limit and clear_limit when they take one away), the
-- passes go too: a task queued since would otherwise (NULLS FIRST) be taken before every task
-- given a pass, for as long as such tasks keep coming. A task that was running then and is queued
-- again later (a retry) still has its pass: the leader's tenant repair calls this too, every
-- rescue interval (without weights and passes: one probe of an empty index).
CREATE OR REPLACE FUNCTION pgtask.clear_passes_unless_weighted() RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
    UPDATE pgtask.task t SET pass = NULL
    WHERE t.pass IS NOT NULL AND t.state IN ('available', 'retryable');         -- task_pass_idx
  END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION pgtask.assign_passes(integer[], text[], double precision[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.assign_passes_untenanted(bigint[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.clear_passes_unless_weighted() FROM PUBLIC;
