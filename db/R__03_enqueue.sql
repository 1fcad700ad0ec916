-- Enqueue: the SQL functions every producer goes through (the Java client too), and the
-- owner's helpers for producers and the payload limit.

-- Enqueues one task. Named arguments; run_at NULL means now (database clock); lower priority
-- runs first. With a dedupe_key, returns the id of the unfinished task holding that key instead of
-- inserting (scope: the whole task table, all kinds and queues). With a dedupe_key and a debounce,
-- the key is a debounce key instead (a key space of its own, the column debounce_key; dedupe_key
-- stays NULL): while a task holding it has not started, the enqueue replaces that task's payload
-- and moves its run_at to now() + debounce, and returns its id (below, "Debounce").
-- The payload limit is read into a variable before validating: with a sub-select among its
-- arguments the validation function could not be inlined and PostgreSQL planned it afresh on every
-- call (about half of the function's time). A task without a tenant never calls pgtask.tenant_id.
-- The same read says whether the owner set any producer bound (settings.producer_bounds,
-- R__03a_producer_bounds.sql): only then is the caller's bound looked up, so where none is set
-- the bounds cost nothing.
-- With depends_on (parent task ids), the task waits ('pending') until its parents complete, and
-- on_parent_failure (cancel, the default; run; wait) says what a failed parent does to it
-- (R__03b_dependencies.sql); not with a dedupe key or debounce (task_depends_on_dedupe).
CREATE OR REPLACE FUNCTION pgtask.enqueue(
  kind text,
  payload jsonb DEFAULT '{}',
  queue text DEFAULT 'default',
  tenant text DEFAULT NULL,
  run_at timestamptz DEFAULT NULL,
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 25,
  dedupe_key text DEFAULT NULL,
  debounce interval DEFAULT NULL,
  depends_on bigint[] DEFAULT NULL,
  on_parent_failure text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_max_payload integer;
  v_bounds boolean;
  v_error text;
  v_tenant_id integer;
  v_id bigint;
  v_run_at timestamptz := enqueue.run_at;
  v_task record;
BEGIN
  SELECT s.max_payload_bytes, s.producer_bounds INTO v_max_payload, v_bounds
  FROM pgtask.settings s;
  v_error := pgtask.task_input_error(enqueue.kind, enqueue.payload, enqueue.queue, enqueue.tenant,
    enqueue.max_attempts, enqueue.dedupe_key, v_max_payload);
  IF v_error IS NULL AND NOT isfinite(enqueue.run_at) THEN
    v_error := pgtask.run_at_error(enqueue.run_at);
  END IF;
  IF v_error IS NULL AND enqueue.debounce IS NOT NULL THEN
    v_error := pgtask.debounce_error(enqueue.dedupe_key, enqueue.debounce, enqueue.run_at);
    -- the debounced run_at, which the producer bounds judge as any other (it is never in the past)
    v_run_at := now() + enqueue.debounce;
  END IF;
  IF v_error IS NULL AND enqueue.depends_on IS NOT NULL
     AND (enqueue.dedupe_key IS NOT NULL OR enqueue.debounce IS NOT NULL) THEN
    v_error := 'task_depends_on_dedupe|a task with depends_on takes no dedupe_key or debounce';
  END IF;
  IF v_error IS NULL AND v_bounds THEN
    SELECT pgtask.producer_bound_error(b.caller, b.min_priority, b.max_priority, b.past_run_at,
                                       coalesce(enqueue.priority, 0), v_run_at)
    INTO v_error
    FROM pgtask.caller_producer_bound() b;
  END IF;
  IF v_error IS NOT NULL THEN
    PERFORM pgtask.raise_input_error(v_error, NULL);
  END IF;
  IF enqueue.tenant IS NOT NULL THEN
    v_tenant_id := pgtask.tenant_id(enqueue.tenant);
  END IF;
  IF enqueue.depends_on IS NOT NULL THEN
    RETURN pgtask.insert_child(enqueue.kind, enqueue.payload, enqueue.queue, v_tenant_id, enqueue.run_at,
      coalesce(enqueue.priority, 0), enqueue.max_attempts, enqueue.depends_on, enqueue.on_parent_failure);
  END IF;
  IF enqueue.debounce IS NOT NULL THEN
    -- Debounce. The pending holder of the key (queued and never claimed: task_debounce_key_idx,
    -- V9__debounce.sql) gets the new payload and run_at; without one, the task is inserted. A
    -- concurrent uncommitted holder is waited for, as for dedupe, then updated or, if it rolled
    -- back, replaced by this insert. A task that has started is in no key's way: an enqueue while
    -- it runs (or while its retry waits) inserts the next pending task, so the last payload always
    -- runs after the last enqueue. kind, queue and tenant must be the holder's (its payload is
    -- theirs); its priority and max_attempts stay as first enqueued.
    -- Tenant heads as pgtask.update_task keeps them: a waiting task is decided again for its new
    -- run_at as an insert decides it; a head moved later keeps being a head and the statement's
    -- update trigger (task_after_update_heads, R__02) hands its tenant's next due task on, as it
    -- does for update_task. (The proposed row's blocked, from the insert trigger, counted the
    -- holder itself as a head: not used.)
    INSERT INTO pgtask.task AS t (kind, payload, queue, tenant_id, run_at, priority, max_attempts, debounce_key)
    VALUES (enqueue.kind, enqueue.payload, enqueue.queue, v_tenant_id, v_run_at,
            coalesce(enqueue.priority, 0), enqueue.max_attempts, enqueue.dedupe_key)
    ON CONFLICT (debounce_key)
      WHERE debounce_key IS NOT NULL AND state IN ('available', 'retryable') AND attempted_at IS NULL
    DO UPDATE
    SET payload = excluded.payload,
        run_at = excluded.run_at,
        trace_parent = excluded.trace_parent, -- the trace of the enqueue whose payload runs
        blocked = CASE WHEN t.blocked THEN EXISTS (
                    SELECT 1 FROM pgtask.task h
                    WHERE h.tenant_id = t.tenant_id AND h.queue = t.queue AND NOT h.blocked
                      AND h.state IN ('available', 'retryable', 'running')
                      AND (h.state = 'running' OR h.run_at <= excluded.run_at))
                  ELSE false END
    WHERE t.kind = excluded.kind AND t.queue = excluded.queue
      AND t.tenant_id IS NOT DISTINCT FROM excluded.tenant_id
    RETURNING t.id, t.queue, t.run_at, t.blocked, t.xmax::text <> '0' AS updated INTO v_task;
    IF v_task.id IS NULL THEN
      -- the holder (locked by the ON CONFLICT) is of another kind, queue or tenant
      SELECT t.id, t.kind, t.queue INTO v_task FROM pgtask.task t
      WHERE t.debounce_key = enqueue.dedupe_key AND t.state IN ('available', 'retryable') AND t.attempted_at IS NULL;
      PERFORM pgtask.raise_input_error('task_debounce|debounce key is held by pending task ' || v_task.id::text
        || ' of kind ' || v_task.kind || ' in queue ' || v_task.queue
        || ' (and its tenant): a debounced enqueue must name the same kind, queue and tenant', NULL);
    END IF;
    -- Wake-up: an update fires no insert trigger, and a run_at moved later no put-back trigger
    -- (R__02a_wakeup.sql): say when the task is now due, as the insert would have.
    IF v_task.updated AND NOT v_task.blocked THEN
      PERFORM pgtask.wake_queues(ARRAY[v_task.queue], ARRAY[v_task.run_at]);
    END IF;
    RETURN v_task.id;
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

-- pgtask.enqueue gained its debounce parameter (V9__debounce.sql), then depends_on and
-- on_parent_failure (V10__dependencies.sql); pgtask.enqueue_batch gained depends_on and
-- on_parent_failures. CREATE OR REPLACE cannot add a parameter, so each function here is a new one
-- beside the one it replaces: every role that could execute an old one (pgtask.grant_producer's
-- grants, or the owner's own) gets the same on the new one, and then the old one is dropped.
-- Callers keep working unchanged: the new parameters have defaults, and named or positional calls
-- of an old one call the new one. (Run at the end of this file, once both new functions exist.)
CREATE OR REPLACE FUNCTION pgtask.replace_function(p_old text, p_new text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_old regprocedure := to_regprocedure(p_old);
  v_grantee regrole;
BEGIN
  IF v_old IS NULL THEN
    RETURN;
  END IF;
  FOR v_grantee IN
    SELECT a.grantee::regrole FROM pg_proc p, aclexplode(p.proacl) a
    WHERE p.oid = v_old AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', p_new, v_grantee);
  END LOOP;
  EXECUTE format('DROP FUNCTION %s', v_old);
END
$$;
REVOKE EXECUTE ON FUNCTION pgtask.replace_function(text, text) FROM PUBLIC;
SELECT pgtask.replace_function('pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text)',
  'pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval, bigint[], text)');
SELECT pgtask.replace_function('pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval)',
  'pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval, bigint[], text)');
-- Nothing for PUBLIC, here and not only in R__06_privileges: on an upgrade Flyway re-applies only
-- the repeatable migrations whose text changed, so R__06 may not run after this file, and its
-- ALTER DEFAULT PRIVILEGES IN SCHEMA cannot take back the EXECUTE that every new function gives
-- PUBLIC (a per-schema default only adds to the global one).
REVOKE EXECUTE ON FUNCTION pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval, bigint[], text) FROM PUBLIC;

-- Enqueues a batch in one call. The arrays are parallel (one element per task; NULL elements take
-- the defaults of pgtask.enqueue; payloads, queues, ... may be NULL as a whole). Returns one row
-- per input task in input order: ord (1-based), the task id, and whether it was inserted (false:
-- a task held that dedupe_key while the call ran, and its id is returned). A bad task rejects
-- the whole batch with an error naming its position.
--
-- Set-based throughout, so that a batch costs about what inserting its rows costs: one validation
-- pass, one statement registering the new tenants, the ids drawn in one pass, and one INSERT from
-- unnest() of the arrays. In a batch without dedupe keys the INSERT decides the tenant heads
-- itself (below) and the row trigger task_before_insert_tenant runs only for the heads it found,
-- not for every task of a tenant; the insert trigger's wake-ups are one per queue per statement.
--
-- Dependencies: depends_on holds per task NULL or a JSON array of its parents, each either a task
-- id (a number) or {"batch": k}, the k-th task (1-based) of this batch, earlier than this one;
-- on_parent_failures the policy per task (cancel, the default; run; wait). A batch with any
-- dependency inserts its tasks one by one through pgtask.insert_child (R__03b_dependencies.sql),
-- in input order, and takes no dedupe keys (task_depends_on_dedupe).
CREATE OR REPLACE FUNCTION pgtask.enqueue_batch(
  kinds text[],
  payloads jsonb[] DEFAULT NULL,
  queues text[] DEFAULT NULL,
  tenants text[] DEFAULT NULL,
  run_ats timestamptz[] DEFAULT NULL,
  priorities integer[] DEFAULT NULL,
  max_attempts integer[] DEFAULT NULL,
  dedupe_keys text[] DEFAULT NULL,
  depends_on jsonb[] DEFAULT NULL,
  on_parent_failures text[] DEFAULT NULL
) RETURNS TABLE (ord integer, id bigint, inserted boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_n integer := coalesce(cardinality(kinds), 0);
  v_max_payload integer;
  v_bounds boolean;
  v_bad record;
  v_tenant_ids integer[];
  v_unregistered boolean;
  v_ids bigint[];
  v_inserted boolean[];
  v_keys text[];
  v_i integer;
  v_id bigint;
  v_queue_list text[];
  v_parents bigint[];
  v_ref jsonb;
  v_k integer;
BEGIN
  IF v_n = 0 THEN
    RETURN;
  END IF;
  IF coalesce(cardinality(payloads), v_n) <> v_n OR coalesce(cardinality(queues), v_n) <> v_n
     OR coalesce(cardinality(tenants), v_n) <> v_n OR coalesce(cardinality(run_ats), v_n) <> v_n
     OR coalesce(cardinality(priorities), v_n) <> v_n OR coalesce(cardinality(max_attempts), v_n) <> v_n
     OR coalesce(cardinality(dedupe_keys), v_n) <> v_n OR coalesce(cardinality(depends_on), v_n) <> v_n
     OR coalesce(cardinality(on_parent_failures), v_n) <> v_n THEN
    RAISE EXCEPTION 'pgtask: enqueue_batch arrays must all have % elements', v_n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.max_payload_bytes, s.producer_bounds INTO v_max_payload, v_bounds
  FROM pgtask.settings s;

  -- 1. validate: the first bad task rejects the batch; then, when the owner set producer bounds,
  --    the first task outside the caller's (R__03a_producer_bounds.sql)
  SELECT u.ord, coalesce(pgtask.task_input_error(u.kind, coalesce(u.payload, '{}'), coalesce(u.queue, 'default'),
                                                 u.tenant, coalesce(u.max_attempts, 25), u.dedupe_key, v_max_payload),
                         pgtask.run_at_error(u.run_at)) AS error
  INTO v_bad
  FROM unnest(kinds, payloads, queues, tenants, max_attempts, dedupe_keys, run_ats)
       WITH ORDINALITY AS u(kind, payload, queue, tenant, max_attempts, dedupe_key, run_at, ord)
  WHERE pgtask.task_input_error(u.kind, coalesce(u.payload, '{}'), coalesce(u.queue, 'default'), u.tenant,
                                coalesce(u.max_attempts, 25), u.dedupe_key, v_max_payload) IS NOT NULL
     OR NOT isfinite(u.run_at)
  ORDER BY u.ord
  LIMIT 1;
  IF FOUND THEN
    PERFORM pgtask.raise_input_error(v_bad.error, 'task ' || v_bad.ord || ' of ' || v_n);
  END IF;
  IF v_bounds THEN
    SELECT u.ord, u.error
    INTO v_bad
    FROM pgtask.caller_producer_bound() b,
         LATERAL (SELECT g.ord, pgtask.producer_bound_error(b.caller, b.min_priority, b.max_priority, b.past_run_at,
                                                            coalesce(priorities[g.ord], 0), run_ats[g.ord]) AS error
                  FROM generate_series(1, v_n) AS g(ord)) u
    WHERE u.error IS NOT NULL
    ORDER BY u.ord
    LIMIT 1;
    IF FOUND THEN
      PERFORM pgtask.raise_input_error(v_bad.error, 'task ' || v_bad.ord || ' of ' || v_n);
    END IF;
  END IF;

  -- 2. register the new tenants in one statement, in name order (concurrent batches never
  --    deadlock on the registry), and only names not registered yet (a known tenant burns no
  --    identity value), then read every task's tenant id. A name another transaction was
  --    inserting is waited for by ON CONFLICT; the next statement sees it once that committed.
  --    Should it still be missing (that transaction rolled back), the round runs again.
  IF tenants IS NOT NULL THEN
    LOOP
      INSERT INTO pgtask.tenant (name)
      SELECT d.name
      FROM (SELECT DISTINCT x AS name FROM unnest(tenants) AS x WHERE x IS NOT NULL) d
      WHERE NOT EXISTS (SELECT 1 FROM pgtask.tenant tn WHERE tn.name = d.name)
      ORDER BY d.name
      ON CONFLICT (name) DO NOTHING;
      SELECT array_agg(tn.id ORDER BY u.ord), coalesce(bool_or(u.name IS NOT NULL AND tn.id IS NULL), false)
      INTO v_tenant_ids, v_unregistered
      FROM unnest(tenants) WITH ORDINALITY AS u(name, ord)
      LEFT JOIN pgtask.tenant tn ON tn.name = u.name;
      EXIT WHEN NOT v_unregistered;
    END LOOP;
  END IF;

  IF depends_on IS NOT NULL AND cardinality(array_remove(depends_on, NULL)) > 0 THEN
    -- 3'. Dependencies: one by one, in input order, each with its parents resolved (a batch
    --     reference to the id drawn for that task)
    IF dedupe_keys IS NOT NULL AND cardinality(array_remove(dedupe_keys, NULL)) > 0 THEN
      PERFORM pgtask.raise_input_error('task_depends_on_dedupe|a batch with depends_on takes no dedupe keys', NULL);
    END IF;
    v_ids := ARRAY(SELECT nextval('pgtask.task_id_seq'::regclass) FROM generate_series(1, v_n));
    FOR v_i IN 1 .. v_n LOOP
      v_parents := NULL;
      IF depends_on[v_i] IS NOT NULL THEN
        IF jsonb_typeof(depends_on[v_i]) <> 'array' THEN
          PERFORM pgtask.raise_input_error('task_parent_missing|depends_on must be a JSON array of task ids and {"batch": k}',
            'task ' || v_i || ' of ' || v_n);
        END IF;
        v_parents := '{}';
        FOR v_ref IN SELECT e FROM jsonb_array_elements(depends_on[v_i]) e LOOP
          IF jsonb_typeof(v_ref) = 'number' THEN
            v_parents := v_parents || (v_ref #>> '{}')::bigint;
          ELSIF jsonb_typeof(v_ref) = 'object' AND jsonb_typeof(v_ref -> 'batch') = 'number' THEN
            v_k := (v_ref ->> 'batch')::integer;
            IF v_k < 1 OR v_k >= v_i THEN
              PERFORM pgtask.raise_input_error('task_parent_missing|depends on task ' || v_k
                || ' of the batch, which is not an earlier task of it', 'task ' || v_i || ' of ' || v_n);
            END IF;
            v_parents := v_parents || v_ids[v_k];
          ELSE
            PERFORM pgtask.raise_input_error('task_parent_missing|depends_on must be a JSON array of task ids and {"batch": k}, not '
              || left(v_ref::text, 50), 'task ' || v_i || ' of ' || v_n);
          END IF;
        END LOOP;
      END IF;
      IF v_parents IS NULL THEN
        INSERT INTO pgtask.task (id, kind, payload, queue, tenant_id, run_at, priority, max_attempts)
        VALUES (v_ids[v_i], kinds[v_i], coalesce(payloads[v_i], '{}'), coalesce(queues[v_i], 'default'),
                v_tenant_ids[v_i], coalesce(run_ats[v_i], now()), coalesce(priorities[v_i], 0),
                coalesce(max_attempts[v_i], 25));
      ELSE
        PERFORM pgtask.insert_child(kinds[v_i], coalesce(payloads[v_i], '{}'), coalesce(queues[v_i], 'default'),
          v_tenant_ids[v_i], run_ats[v_i], coalesce(priorities[v_i], 0), coalesce(max_attempts[v_i], 25),
          v_parents, on_parent_failures[v_i], v_ids[v_i], 'task ' || v_i || ' of ' || v_n);
      END IF;
    END LOOP;
    RETURN QUERY SELECT x.ord::integer, x.id, true FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord);
    RETURN;
  END IF;

  IF dedupe_keys IS NULL OR cardinality(array_remove(dedupe_keys, NULL)) = 0 THEN
    -- 3. No dedupe keys: every task is inserted. The ids are drawn first (one per task, in input
    --    order), so the INSERT reads nothing but the arrays and nothing has to be matched up after.
    v_ids := ARRAY(SELECT nextval('pgtask.task_id_seq'::regclass) FROM generate_series(1, v_n));
    IF v_tenant_ids IS NULL THEN
      INSERT INTO pgtask.task (id, kind, payload, queue, run_at, priority, max_attempts)
      SELECT u.id, u.kind, coalesce(u.payload, '{}'), coalesce(u.queue, 'default'), coalesce(u.run_at, now()),
             coalesce(u.priority, 0), coalesce(u.max_attempts, 25)
      FROM unnest(v_ids, kinds, payloads, queues, run_ats, priorities, max_attempts)
           AS u(id, kind, payload, queue, run_at, priority, max_attempts);
    ELSE
      -- Tenant heads, set-based: a task of a tenant waits (blocked) when its tenant has a head in
      -- its queue that is running or due no later than the task: one already in the table (looked
      -- up once per task that no earlier task of the batch already blocks), or an earlier task
      -- of the batch in that queue due no later (the minimum run_at of the earlier ones: an
      -- earlier task is either a head itself or waits behind one due no later). That is what
      -- task_before_insert_tenant decides row by row, and it still runs for the tasks found to be
      -- heads here (its WHEN clause passes over rows that arrive blocked), so a head committed by
      -- another transaction meanwhile still makes such a task wait.
      INSERT INTO pgtask.task (id, kind, payload, queue, tenant_id, run_at, priority, max_attempts, blocked)
      SELECT b.id, b.kind, b.payload, b.queue, b.tenant_id, b.run_at, b.priority, b.max_attempts,
             b.tenant_id IS NOT NULL
             AND CASE WHEN b.earlier_run_at <= b.run_at THEN true
                      ELSE EXISTS (SELECT 1 FROM pgtask.task h
                                   WHERE h.tenant_id = b.tenant_id AND h.queue = b.queue AND NOT h.blocked
                                     AND h.state IN ('available', 'retryable', 'running')
                                     AND (h.state = 'running' OR h.run_at <= b.run_at)) END
      FROM (SELECT u.*,
                   min(u.run_at) OVER (PARTITION BY u.tenant_id, u.queue ORDER BY u.ord
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_run_at
            FROM (SELECT x.ord, x.id, x.kind, coalesce(x.payload, '{}') AS payload,
                         coalesce(x.queue, 'default') AS queue, x.tenant_id, coalesce(x.run_at, now()) AS run_at,
                         coalesce(x.priority, 0) AS priority, coalesce(x.max_attempts, 25) AS max_attempts
                  FROM unnest(v_ids, kinds, payloads, queues, v_tenant_ids, run_ats, priorities, max_attempts)
                       WITH ORDINALITY AS x(id, kind, payload, queue, tenant_id, run_at, priority, max_attempts, ord)) u
           ) b;
      -- a tenant that may run N > 1 at once (pgtask.set_limit) gets its N heads: the batch gave it one
      IF EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.scope = 'tenant' AND l.max_running > 1
                 AND l.tenant_id = ANY (v_tenant_ids)) THEN
        v_queue_list := ARRAY(SELECT coalesce(q.queue, 'default')
                FROM generate_series(1, v_n) AS g(i) LEFT JOIN LATERAL (SELECT queues[g.i] AS queue) q ON true
                ORDER BY g.i);
        IF pgtask.promote_parallel(v_tenant_ids, v_queue_list) > 0
           AND EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
          -- weighted fair share (db/R__02b_fair_share.sql): the new heads' places
          PERFORM pgtask.assign_passes(v_tenant_ids, v_queue_list, NULL);
        END IF;
      END IF;
    END IF;
    RETURN QUERY SELECT x.ord::integer, x.id, true FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord);
    RETURN;
  END IF;

  -- With dedupe keys, steps 3 and 4 run in a block (a subtransaction) that is rolled back and run
  -- again in the one rare case where answering a held-back row would mean inserting it out of key
  -- order (4 below). Rolling it back releases every key it inserted; the new pass takes them in
  -- key order again. Tenant heads are decided row by row here, by task_before_insert_tenant (a
  -- task held back by its dedupe key is not inserted, so it must not count as a head).
  LOOP
    BEGIN
      -- 3. insert with ids drawn up front, so each input row knows its id. Rows with a dedupe key go
      --    first, in key order: an insert waits on a concurrent uncommitted holder of its key, so two
      --    batches sharing keys must take them in one order or they deadlock.
      WITH input AS MATERIALIZED (
        SELECT u.ord::integer AS ord, nextval('pgtask.task_id_seq'::regclass) AS id, u.kind,
               coalesce(u.payload, '{}') AS payload, coalesce(u.queue, 'default') AS queue,
               u.tenant_id, coalesce(u.run_at, now()) AS run_at, coalesce(u.priority, 0) AS priority,
               coalesce(u.max_attempts, 25) AS max_attempts, u.dedupe_key
        FROM unnest(kinds, payloads, queues, v_tenant_ids, run_ats, priorities, max_attempts, dedupe_keys)
             WITH ORDINALITY AS u(kind, payload, queue, tenant_id, run_at, priority, max_attempts, dedupe_key, ord)
      ), ins AS (
        INSERT INTO pgtask.task (id, kind, payload, queue, tenant_id, run_at, priority, max_attempts, dedupe_key)
        SELECT i.id, i.kind, i.payload, i.queue, i.tenant_id, i.run_at, i.priority, i.max_attempts, i.dedupe_key
        FROM input i ORDER BY i.dedupe_key NULLS LAST, i.ord
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND state IN ('available', 'retryable', 'running')
        DO NOTHING
        RETURNING id
      )
      SELECT array_agg(i.id ORDER BY i.ord), array_agg(ins.id IS NOT NULL ORDER BY i.ord),
             array_agg(i.dedupe_key ORDER BY i.ord)
      INTO v_ids, v_inserted, v_keys
      FROM input i LEFT JOIN ins ON ins.id = i.id;

      -- 4. rows held back by dedupe: report the task that held the key. Their keys were held by a
      --    committed task when step 3 ran (a conflict with an uncommitted or changing holder waits
      --    for it), so the answer is found without inserting: the unfinished holder if there is one
      --    now, else the holder that finished since (finished_at is clock_timestamp() of the
      --    finishing statement, which ran after this call's statement began; task_finished_idx
      --    finds it). It held the key while this call ran, which is all dedupe promises. Inserting
      --    the row here instead, after the keys step 3 took, would wait on other batches out of key
      --    order: two batches sharing keys would deadlock (SQLSTATE 40P01). When the holder is gone
      --    altogether (deleted meanwhile), the pass is rolled back and run again.
      FOR v_i IN
        SELECT x.ord::integer FROM unnest(v_inserted, v_keys) WITH ORDINALITY AS x(inserted, dedupe_key, ord)
        WHERE NOT x.inserted ORDER BY x.dedupe_key, x.ord
      LOOP
        SELECT t.id INTO v_id FROM pgtask.task t
        WHERE t.dedupe_key = v_keys[v_i] AND t.state IN ('available', 'retryable', 'running');
        IF v_id IS NULL THEN
          SELECT t.id INTO v_id FROM pgtask.task t
          WHERE t.dedupe_key = v_keys[v_i] AND t.state IN ('completed', 'cancelled', 'discarded')
            AND t.finished_at >= statement_timestamp()
          ORDER BY t.finished_at DESC
          LIMIT 1;
        END IF;
        IF v_id IS NULL THEN
          RAISE EXCEPTION 'pgtask: holder of dedupe key gone, enqueue_batch runs its insert again'
            USING ERRCODE = 'PGT01';
        END IF;
        v_ids[v_i] := v_id;
      END LOOP;
      EXIT;
    EXCEPTION WHEN SQLSTATE 'PGT01' THEN
      -- the pass is rolled back: insert again
    END;
  END LOOP;

  RETURN QUERY SELECT x.ord::integer, x.id, x.inserted
               FROM unnest(v_ids, v_inserted) WITH ORDINALITY AS x(id, inserted, ord);
END
$$;

SELECT pgtask.replace_function('pgtask.enqueue_batch(text[], jsonb[], text[], text[], timestamptz[], integer[], integer[], text[])',
  'pgtask.enqueue_batch(text[], jsonb[], text[], text[], timestamptz[], integer[], integer[], text[], jsonb[], text[])');
REVOKE EXECUTE ON FUNCTION pgtask.enqueue_batch(text[], jsonb[], text[], text[], timestamptz[], integer[], integer[], text[], jsonb[], text[]) FROM PUBLIC;

-- Lets a role enqueue through pgtask.enqueue / pgtask.enqueue_batch, and nothing else.
CREATE OR REPLACE FUNCTION pgtask.grant_producer(role_name name) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA pgtask TO %I', role_name);
  EXECUTE format('GRANT EXECUTE ON FUNCTION pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval, bigint[], text) TO %I', role_name);
  EXECUTE format('GRANT EXECUTE ON FUNCTION pgtask.enqueue_batch(text[], jsonb[], text[], text[], timestamptz[], integer[], integer[], text[], jsonb[], text[]) TO %I', role_name);
END
$$;

-- Changes the payload size limit (bytes of the payload's JSON text).
CREATE OR REPLACE FUNCTION pgtask.set_max_payload_bytes(bytes integer) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
  UPDATE pgtask.settings SET max_payload_bytes = bytes;
$$;
