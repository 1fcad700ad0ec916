-- Flow control: the owner's limits (pgtask.flow_limit, db/V8__flow_limits.sql) and the slots that
-- enforce concurrency limits inside each task's transaction. See docs/how-it-works.md, "Limits".
-- Sorts right after R__01 (validation): the tenant heads (R__02) and the views (R__05*) use these.

-- The classid of slot p_offset of a range starting at the lock namespace, wrapped into int4 as the
-- server does with the unsigned classid it shows in pg_locks.
CREATE OR REPLACE FUNCTION pgtask.slot_class(p_namespace integer, p_offset integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT ((p_namespace::bigint + p_offset + 2147483648) % 4294967296 - 2147483648)::integer
$$;

-- Where an advisory lock's classid (as pg_locks shows it) lies from the lock namespace: 0 to 1023
-- a tenant's slots (0: its one lock), 1024 to 2047 a queue's or kind's; anything else is not pgtask's.
CREATE OR REPLACE FUNCTION pgtask.slot_offset(p_classid oid) RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT (p_classid::bigint - pgtask.lock_namespace_oid()::bigint + 4294967296) % 4294967296
$$;

-- Takes one of p_n slots (transaction-scoped advisory locks (p_class + i, p_obj), i < p_n) and
-- stops at the first it gets: true when one was taken, false when all p_n are held (a failed try
-- holds nothing). Slot 0 first, always: it is the tenant lock of a tenant that runs one task at a
-- time, so a worker that knows nothing of limits (a rolling upgrade) still takes a slot of the N.
-- The others from a random start, so N running tasks do not all probe the same taken slots.
-- A loop in a function, not a query with a LIMIT: the server may evaluate a set's expressions on
-- more rows than a LIMIT returns, and each evaluation here takes a lock.
CREATE OR REPLACE FUNCTION pgtask.try_slot(p_class integer, p_obj integer, p_n integer) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_start integer;
BEGIN
  IF pg_try_advisory_xact_lock(p_class, p_obj) THEN
    RETURN true;
  END IF;
  IF p_n IS NULL OR p_n <= 1 THEN
    RETURN false;
  END IF;
  v_start := floor(random() * (p_n - 1))::integer;
  FOR i IN 0 .. p_n - 2 LOOP
    IF pg_try_advisory_xact_lock(pgtask.slot_class(p_class, 1 + (v_start + i) % (p_n - 1)), p_obj) THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END
$$;

-- A tenant's slots: its max_running, 1 without a limit.
CREATE OR REPLACE FUNCTION pgtask.tenant_slots(p_tenant_id integer) RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce((SELECT coalesce(l.max_running, 1) FROM pgtask.flow_limit l
                   WHERE l.scope = 'tenant' AND l.tenant_id = p_tenant_id), 1)
$$;

-- Takes a slot of every concurrency limit that applies to a task, all or nothing, in the order
-- tenant, queue, kind: NULL when the task may start (its slots are held until the transaction
-- ends), else the scope ('tenant', 'queue' or 'kind') of the first limit that is full, or
-- 'tenant_lock' for a tenant without a limit whose one lock is held; then no slot is held.
-- Called once per task, in the statement that re-locks the task's row in its transaction (internal/sql/ExecuteQueries). Only try-locks: it never waits, so it cannot
-- deadlock. All or nothing: a transaction-scoped advisory lock cannot be released, but one taken
-- in a subtransaction is released when that subtransaction rolls back (an exception block here;
-- it writes nothing, so it costs no transaction id).
CREATE OR REPLACE FUNCTION pgtask.take_slots(p_namespace integer, p_tenant_id integer, p_queue text, p_kind text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_tenant_n integer;
  v_queue_id integer;
  v_queue_n integer;
  v_kind_id integer;
  v_kind_n integer;
  v_limited boolean := false;
BEGIN
  IF p_tenant_id IS NOT NULL THEN
    SELECT coalesce(l.max_running, 1) INTO v_tenant_n FROM pgtask.flow_limit l
    WHERE l.scope = 'tenant' AND l.tenant_id = p_tenant_id;
    v_limited := FOUND;
    v_tenant_n := coalesce(v_tenant_n, 1);
  END IF;
  SELECT l.id, l.max_running INTO v_queue_id, v_queue_n FROM pgtask.flow_limit l
  WHERE l.scope = 'queue' AND l.key = p_queue AND l.max_running IS NOT NULL;
  SELECT l.id, l.max_running INTO v_kind_id, v_kind_n FROM pgtask.flow_limit l
  WHERE l.scope = 'kind' AND l.key = p_kind AND l.max_running IS NOT NULL;
  IF v_queue_id IS NULL AND v_kind_id IS NULL THEN
    IF p_tenant_id IS NULL OR pgtask.try_slot(p_namespace, p_tenant_id, v_tenant_n) THEN
      RETURN NULL;
    END IF;
    RETURN CASE WHEN v_limited THEN 'tenant' ELSE 'tenant_lock' END;
  END IF;
  IF p_tenant_id IS NULL AND (v_queue_id IS NULL OR v_kind_id IS NULL) THEN
    IF v_queue_id IS NOT NULL THEN
      RETURN CASE WHEN pgtask.try_slot(pgtask.slot_class(p_namespace, 1024), v_queue_id, v_queue_n)
                  THEN NULL ELSE 'queue' END;
    END IF;
    RETURN CASE WHEN pgtask.try_slot(pgtask.slot_class(p_namespace, 1024), v_kind_id, v_kind_n)
                THEN NULL ELSE 'kind' END;
  END IF;
  BEGIN
    IF p_tenant_id IS NOT NULL AND NOT pgtask.try_slot(p_namespace, p_tenant_id, v_tenant_n) THEN
      RAISE EXCEPTION USING MESSAGE = CASE WHEN v_limited THEN 'tenant' ELSE 'tenant_lock' END;
    END IF;
    IF v_queue_id IS NOT NULL
       AND NOT pgtask.try_slot(pgtask.slot_class(p_namespace, 1024), v_queue_id, v_queue_n) THEN
      RAISE EXCEPTION USING MESSAGE = 'queue';
    END IF;
    IF v_kind_id IS NOT NULL
       AND NOT pgtask.try_slot(pgtask.slot_class(p_namespace, 1024), v_kind_id, v_kind_n) THEN
      RAISE EXCEPTION USING MESSAGE = 'kind';
    END IF;
  EXCEPTION WHEN raise_exception THEN
    RETURN SQLERRM;
  END;
  RETURN NULL;
END
$$;

-- Takes rate tokens for one claim (GCRA, db/V8__flow_limits.sql): for each rate limit p_ids[i]
-- (in id order), up to p_wanted[i] starts now, on the database clock (p_now: a test's clock).
-- Returns what each granted. A bucket another claim holds grants nothing (SKIP LOCKED: that claim
-- is spending its tokens, and nobody waits). p_refunds: limits whose token a task gave back
-- without starting (put back for a full slot); each moves its bucket back one token, never below
-- now (a refund never adds more than a full burst); one whose bucket is locked is dropped (a
-- token unused, never one too many). next_ms: when the bucket is empty after this claim, the
-- milliseconds until its next token (the claim's worker arms its due timer with it), else NULL.
SET LOCAL client_min_messages = warning;
DROP FUNCTION IF EXISTS pgtask.take_tokens(integer[], integer[], integer[], timestamptz);
CREATE OR REPLACE FUNCTION pgtask.take_tokens(p_ids integer[], p_wanted integer[], p_refunds integer[] DEFAULT NULL,
  p_now timestamptz DEFAULT NULL) RETURNS TABLE (limit_id integer, granted integer, next_ms bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_refund integer;
  r record;
  v_t double precision;
  v_base timestamptz;
  v_grant integer;
BEGIN
  FOREACH v_refund IN ARRAY coalesce(p_refunds, '{}') LOOP
    SELECT b.tat, l.per_second INTO r FROM pgtask.limit_bucket b JOIN pgtask.flow_limit l ON l.id = b.limit_id
    WHERE b.limit_id = v_refund FOR UPDATE OF b SKIP LOCKED;
    IF FOUND AND r.per_second IS NOT NULL THEN
      UPDATE pgtask.limit_bucket b SET tat = greatest(r.tat - make_interval(secs => 1.0 / r.per_second), v_now)
      WHERE b.limit_id = v_refund;
    END IF;
  END LOOP;
  FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
    limit_id := p_ids[i];
    granted := 0;
    next_ms := NULL;
    SELECT b.tat, l.per_second, l.burst INTO r FROM pgtask.limit_bucket b JOIN pgtask.flow_limit l ON l.id = b.limit_id
    WHERE b.limit_id = p_ids[i] FOR UPDATE OF b SKIP LOCKED;
    IF FOUND AND r.per_second IS NOT NULL THEN
      v_t := 1.0 / r.per_second;
      v_base := greatest(r.tat, v_now);
      v_grant := floor((extract(epoch FROM v_now - v_base) + r.burst * v_t) / v_t + 1e-9)::integer;
      granted := greatest(0, least(p_wanted[i], v_grant));
      IF granted > 0 THEN
        UPDATE pgtask.limit_bucket b SET tat = v_base + make_interval(secs => granted * v_t) WHERE b.limit_id = p_ids[i];
      END IF;
      -- empty now: the next token is due at tat - (burst - 1) / per_second
      IF v_grant <= granted THEN
        next_ms := greatest(0, ceil((extract(epoch FROM v_base - v_now) + granted * v_t - (r.burst - 1) * v_t) * 1000))::bigint;
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;

-- Starts a rate limit admits now (GCRA, without taking any): a bucket read without locking it.
CREATE OR REPLACE FUNCTION pgtask.tokens_now(p_tat timestamptz, p_per_second numeric, p_burst integer,
  p_now timestamptz) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT greatest(0, floor((extract(epoch FROM p_now - greatest(p_tat, p_now)) + p_burst / p_per_second)
                           * p_per_second + 1e-9))::integer
$$;

-- NULL when a limit's input is acceptable, else "<constraint>|<message>" (the names of
-- pgtask.flow_limit's constraints, so Java and SQL callers see the same names whichever refused).
CREATE OR REPLACE FUNCTION pgtask.limit_input_error(p_scope text, p_key text, p_max_running integer,
  p_per_second numeric, p_burst integer, p_weight numeric) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN p_scope IS NULL OR p_scope NOT IN ('tenant', 'queue', 'kind') THEN
      'limit_scope|scope must be ''tenant'', ''queue'' or ''kind'', not ' || coalesce('''' || p_scope || '''', 'NULL')
    WHEN p_key IS NULL OR p_key = '' THEN 'limit_key_length|key must not be empty'
    WHEN char_length(p_key) > 255 THEN 'limit_key_length|key must be at most 255 characters'
    WHEN p_scope = 'queue' AND (char_length(p_key) > 128 OR p_key !~ '^[A-Za-z0-9_.:-]+$') THEN
      'task_queue_format|queue may contain only letters, digits and _ . : - (at most 128)'
    WHEN p_max_running IS NOT NULL AND (p_max_running < 1 OR p_max_running > 1024) THEN
      'limit_max_running|max_running must be between 1 and 1024, not ' || p_max_running::text
    WHEN p_per_second IS NOT NULL AND (p_per_second <= 0 OR p_per_second > 1000000 OR p_per_second = 'NaN') THEN
      'limit_per_second|per_second must be above 0 and at most 1000000, not ' || p_per_second::text
    WHEN p_burst IS NOT NULL AND p_per_second IS NULL THEN 'limit_burst_needs_rate|burst needs per_second'
    WHEN p_burst IS NOT NULL AND (p_burst < 1 OR p_burst > 1000000) THEN
      'limit_burst|burst must be between 1 and 1000000, not ' || p_burst::text
    WHEN p_weight IS NOT NULL AND p_scope <> 'tenant' THEN
      'limit_weight_tenant_only|weight applies to tenants only, not to a ' || p_scope
    WHEN p_weight IS NOT NULL AND (p_weight <= 0 OR p_weight > 1000 OR p_weight = 'NaN') THEN
      'limit_weight|weight must be above 0 and at most 1000, not ' || p_weight::text
    WHEN p_max_running IS NULL AND p_per_second IS NULL AND p_weight IS NULL THEN
      'limit_not_empty|give max_running, per_second or weight (pgtask.clear_limit removes a limit)'
  END
$$;

-- Sets the limit of one tenant, queue or kind, replacing the whole of any limit it had: NULL
-- means unlimited (a tenant: one task at a time). Returns 'created' or 'changed'. Refuses bad
-- input with SQLSTATE 23514 and the constraint's name, storing nothing. Takes effect for every
-- task that starts after the transaction commits, on every worker; a lowered limit never stops a
-- running task (new starts wait until fewer run than the limit). Wakes the workers' queues, so a
-- raised limit is used at once, and gives a tenant whose limit rose the extra heads it may run.
CREATE OR REPLACE FUNCTION pgtask.set_limit(scope text, key text, max_running integer DEFAULT NULL,
  per_second numeric DEFAULT NULL, burst integer DEFAULT NULL, weight numeric DEFAULT NULL) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_variable
DECLARE
  v_error text := pgtask.limit_input_error(scope, key, max_running, per_second, burst, weight);
  v_tenant_id integer;
  v_created boolean;
  v_id integer;
  v_old_weight numeric;
BEGIN
  IF v_error IS NOT NULL THEN
    RAISE EXCEPTION 'pgtask: invalid limit: %', split_part(v_error, '|', 2)
      USING ERRCODE = 'check_violation', CONSTRAINT = split_part(v_error, '|', 1);
  END IF;
  IF scope = 'tenant' THEN
    v_tenant_id := pgtask.tenant_id(key);
    SELECT l.weight INTO v_old_weight FROM pgtask.flow_limit l WHERE l.scope = 'tenant' AND l.tenant_id = v_tenant_id;
  END IF;
  INSERT INTO pgtask.flow_limit AS l (scope, key, tenant_id, max_running, per_second, burst, weight)
  VALUES (scope, key, v_tenant_id, max_running, per_second,
          CASE WHEN per_second IS NOT NULL THEN coalesce(burst, 1) END, weight)
  ON CONFLICT ON CONSTRAINT limit_scope_key DO UPDATE
    SET max_running = EXCLUDED.max_running, per_second = EXCLUDED.per_second, burst = EXCLUDED.burst,
        weight = EXCLUDED.weight, updated_at = clock_timestamp(), updated_by = session_user
  RETURNING (xmax = 0), l.id INTO v_created, v_id;
  -- a rate keeps its bucket (a changed rate does not refill it); no rate, no bucket
  IF per_second IS NOT NULL THEN
    INSERT INTO pgtask.limit_bucket AS b (limit_id) VALUES (v_id) ON CONFLICT (limit_id) DO NOTHING;
  ELSE
    DELETE FROM pgtask.limit_bucket b WHERE b.limit_id = v_id;
  END IF;
  IF v_tenant_id IS NOT NULL THEN
    PERFORM pgtask.promote_parallel(ARRAY[v_tenant_id],
      ARRAY(SELECT DISTINCT t.queue FROM pgtask.task t
            WHERE t.tenant_id = v_tenant_id AND t.blocked));
  END IF;
  -- weighted fair share (db/R__02b_fair_share.sql): the tasks queued before the first weight keep
  -- no pass (taken first); a weight taken away may have been the last one
  IF v_old_weight IS NOT NULL AND weight IS NULL THEN
    PERFORM pgtask.clear_passes_unless_weighted();
  END IF;
  PERFORM pg_notify('pgtask', q) FROM (SELECT DISTINCT unnest(w.queues) AS q FROM pgtask.worker w) s;
  RETURN CASE WHEN v_created THEN 'created' ELSE 'changed' END;
END
$$;

-- Removes the limit of one tenant, queue or kind (a tenant then runs one task at a time again):
-- true when there was one. Refuses an unknown scope by name.
CREATE OR REPLACE FUNCTION pgtask.clear_limit(scope text, key text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  -- the scope's and the key's checks (a max_running of 1 passes the others)
  v_error text := pgtask.limit_input_error(scope, key, 1, NULL, NULL, NULL);
  v_old_weight numeric;
BEGIN
  IF v_error IS NOT NULL THEN
    RAISE EXCEPTION 'pgtask: invalid limit: %', split_part(v_error, '|', 2)
      USING ERRCODE = 'check_violation', CONSTRAINT = split_part(v_error, '|', 1);
  END IF;
  DELETE FROM pgtask.flow_limit l WHERE l.scope = clear_limit.scope AND l.key = clear_limit.key
  RETURNING l.weight INTO v_old_weight;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_old_weight IS NOT NULL THEN
    PERFORM pgtask.clear_passes_unless_weighted();  -- db/R__02b_fair_share.sql
  END IF;
  PERFORM pg_notify('pgtask', q) FROM (SELECT DISTINCT unnest(w.queues) AS q FROM pgtask.worker w) s;
  RETURN true;
END
$$;

REVOKE EXECUTE ON FUNCTION pgtask.take_tokens(integer[], integer[], integer[], timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.set_limit(text, text, integer, numeric, integer, numeric) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pgtask.clear_limit(text, text) FROM PUBLIC;
