-- Validation shared by every way in (SQL function, Java single and batch), the tenant registry,
-- and the lock namespace as pg_locks shows it. Repeatable: each function is defined here once, in
-- its final form.

-- The limits of what a worker can read in a payload: the stream-read limits its Jackson parser is
-- configured with (dev.pgtask.PayloadLimits holds the same numbers, PayloadLimitsTest compares
-- them). A payload beyond one of them would pass enqueue and be discarded at its first attempt, so
-- enqueue refuses it (pgtask.payload_limit_error). Lengths as Jackson counts them, on the JSON text
-- PostgreSQL gives the worker: max_depth, nesting of objects and arrays (the payload object itself
-- is depth 1); max_number_length, the digits of one number (not the sign, the point, nor the 0
-- before the point of a number below 1); max_name_length and
-- max_string_length, the UTF-16 code units of one property name or string value once unescaped.
-- Jackson's own default name limit (50,000) is raised to the string limit: a payload is bounded by
-- pgtask.settings.max_payload_bytes anyway, and below 20 MB no name or string can break a limit, so
-- enqueue never walks the names of an ordinary payload (a walk of every key costs tens of ms per
-- 100 kB). Immutable and constant, so a call in a query is evaluated once, when the query is planned.
CREATE OR REPLACE FUNCTION pgtask.payload_limits(
  OUT max_depth integer, OUT max_number_length integer, OUT max_name_length integer, OUT max_string_length integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT 1000, 1000, 20000000, 20000000
$$;

-- The longest JSON text (in bytes, which are never fewer than characters) that cannot break any of
-- the payload limits: nesting deeper than max_depth takes 2 * (max_depth + 1) brackets, a longer
-- number, name or string more characters than its limit. Enqueue looks into longer payloads only.
CREATE OR REPLACE FUNCTION pgtask.payload_limits_walk_above() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT least(2 * l.max_depth + 1, l.max_number_length, l.max_name_length, l.max_string_length)
  FROM pgtask.payload_limits() l
$$;

-- The length of a string in UTF-16 code units, as Java counts it: characters beyond the Basic
-- Multilingual Plane (4 bytes in UTF-8) count twice. The regular expression that counts them runs
-- only when the bytes leave room for one.
CREATE OR REPLACE FUNCTION pgtask.utf16_length(p text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT char_length(p) + CASE WHEN octet_length(p) - char_length(p) < 3 THEN 0
    ELSE char_length(regexp_replace(p, '[^\U00010000-\U0010FFFF]', '', 'g')) END
$$;

-- Whether a string may be longer than p_limit UTF-16 code units: each character is at most two
-- units, and only a 4-byte one (3 bytes more than a character's one) is two.
CREATE OR REPLACE FUNCTION pgtask.utf16_may_exceed(p text, p_limit integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT char_length(p) + (octet_length(p) - char_length(p)) / 3 > p_limit
$$;

-- NULL when a worker can read the payload, else "<constraint>|<message>" naming the limit it breaks
-- (pgtask.payload_limits). p_text: p_payload::text, which the caller has. Walks the payload
-- (jsonpath, in C) once per kind of limit the text is long enough to break, after a cheaper test
-- that rules most payloads out. Never mentions the payload's contents.
CREATE OR REPLACE FUNCTION pgtask.payload_limit_error(p_payload jsonb, p_text text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  l record;
  v_len bigint;
  p_text_bytes integer := octet_length(p_text);
BEGIN
  SELECT * INTO l FROM pgtask.payload_limits();
  -- The payload object is depth 1, so a container at jsonpath level max_depth is one too deep. An
  -- unfiltered .** costs a few ms per MB; with a filter it costs a hundred times more, so the
  -- filter runs only when something lies at level max_depth: too deep for sure when something lies
  -- deeper, else when an (empty) container lies there.
  IF p_text_bytes > 2 * l.max_depth + 1
     AND jsonb_path_exists(p_payload, ('strict $.**{' || l.max_depth::text || ' to last}')::jsonpath) THEN
    BEGIN
      IF jsonb_path_exists(p_payload, ('strict $.**{' || (l.max_depth + 1)::text || ' to last}')::jsonpath)
         OR jsonb_path_exists(p_payload, ('strict $.**{' || l.max_depth::text
                              || '} ? (@.type() == "object" || @.type() == "array")')::jsonpath) THEN
        RETURN 'task_payload_depth|payload nests objects and arrays more than ' || l.max_depth::text
               || ' deep, the limit is ' || l.max_depth::text || ' (pgtask.payload_limits().max_depth)';
      END IF;
    EXCEPTION WHEN statement_too_complex THEN
      -- too deep for the server's own stack: far too deep for a worker
      RETURN 'task_payload_depth|payload nests objects and arrays more than ' || l.max_depth::text
             || ' deep, the limit is ' || l.max_depth::text || ' (pgtask.payload_limits().max_depth)';
    END;
  END IF;
  -- A number of more digits than the limit has a run of more than half the limit of them (before
  -- or after its point): a regular expression finds such a run in a few ms per MB, and only then are
  -- the numbers taken out and counted.
  IF p_text_bytes > l.max_number_length
     AND p_text ~ (repeat('[0-9]{250}', (l.max_number_length / 2 + 1) / 250)
                  || '[0-9]{' || ((l.max_number_length / 2 + 1) % 250)::text || '}') THEN
    -- digits as Jackson counts them: not the sign, not the point, not the 0 before the point of
    -- a number below 1 (PostgreSQL prints numbers without an exponent)
    SELECT max(length(translate(regexp_replace(n::text, '^-?0\.', ''), '-.', ''))) INTO v_len
    FROM jsonb_path_query(p_payload, 'strict $.** ? (@.type() == "number")') n;
    IF v_len > l.max_number_length THEN
      RETURN 'task_payload_number_length|payload holds a number of ' || v_len::text || ' digits, the limit is '
             || l.max_number_length::text || ' (pgtask.payload_limits().max_number_length)';
    END IF;
  END IF;
  IF p_text_bytes > l.max_name_length THEN
    SELECT max(pgtask.utf16_length(k.name)) INTO v_len
    FROM jsonb_path_query(p_payload, 'strict $.** ? (@.type() == "object").keyvalue().key') n,
         LATERAL (SELECT n #>> '{}' AS name) k
    WHERE pgtask.utf16_may_exceed(k.name, l.max_name_length);
    IF v_len > l.max_name_length THEN
      RETURN 'task_payload_name_length|payload has a property name of ' || v_len::text
             || ' characters, the limit is ' || l.max_name_length::text || ' (pgtask.payload_limits().max_name_length)';
    END IF;
  END IF;
  IF p_text_bytes > l.max_string_length THEN
    SELECT max(pgtask.utf16_length(k.value)) INTO v_len
    FROM jsonb_path_query(p_payload, 'strict $.** ? (@.type() == "string")') n,
         LATERAL (SELECT n #>> '{}' AS value) k
    WHERE pgtask.utf16_may_exceed(k.value, l.max_string_length);
    IF v_len > l.max_string_length THEN
      RETURN 'task_payload_string_length|payload has a string of ' || v_len::text
             || ' characters, the limit is ' || l.max_string_length::text || ' (pgtask.payload_limits().max_string_length)';
    END IF;
  END IF;
  RETURN NULL;
END
$$;

-- NULL when a task's run_at is acceptable (NULL means now), else "<constraint>|<message>". The
-- task table sorts and subtracts run times: an infinite one would sort before or after every task
-- and break every view that measures a delay.
CREATE OR REPLACE FUNCTION pgtask.run_at_error(p_run_at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN NOT isfinite(p_run_at)
    THEN 'task_run_at_finite|run_at must be a finite time, not '
         || CASE WHEN p_run_at > '2000-01-01 00:00+00'::timestamptz THEN 'infinity' ELSE '-infinity' END
  END
$$;

-- NULL when the task is acceptable, else "<constraint>|<message>". Never mentions the payload's
-- contents. SQL-language and simple, so it is inlined into the callers' queries: keep every
-- function and operator in it immutable (text || integer is only stable: cast to text first),
-- or PostgreSQL calls it per row instead, which costs enqueue_batch a third of its time.
CREATE OR REPLACE FUNCTION pgtask.task_input_error(
  p_kind text, p_payload jsonb, p_queue text, p_tenant text, p_max_attempts integer,
  p_dedupe_key text, p_max_payload_bytes integer
) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN p_kind IS NULL OR p_kind = '' THEN 'task_kind_length|kind must not be empty'
    WHEN char_length(p_kind) > 255 THEN 'task_kind_length|kind must be at most 255 characters'
    WHEN p_queue IS NULL OR p_queue = '' THEN 'task_queue_format|queue must not be empty'
    WHEN char_length(p_queue) > 128 THEN 'task_queue_format|queue must be at most 128 characters'
    WHEN p_queue !~ '^[A-Za-z0-9_.:-]+$' THEN 'task_queue_format|queue may contain only letters, digits and _ . : -'
    WHEN p_payload IS NULL THEN 'task_payload_object|payload must be a JSON object, not NULL'
    WHEN jsonb_typeof(p_payload) <> 'object' THEN 'task_payload_object|payload must be a JSON object, not ' || jsonb_typeof(p_payload)
    WHEN octet_length(p_payload::text) > p_max_payload_bytes THEN
      'task_payload_size|payload is ' || octet_length(p_payload::text)::text || ' bytes, the limit is ' || p_max_payload_bytes::text
    WHEN p_max_attempts IS NULL OR p_max_attempts < 1 THEN 'task_max_attempts_positive|max_attempts must be at least 1'
    WHEN p_tenant = '' THEN 'tenant_name_length|tenant must not be empty'
    WHEN char_length(p_tenant) > 255 THEN 'tenant_name_length|tenant must be at most 255 characters'
    WHEN p_dedupe_key = '' THEN 'task_dedupe_key_length|dedupe_key must not be empty'
    WHEN char_length(p_dedupe_key) > 255 THEN 'task_dedupe_key_length|dedupe_key must be at most 255 characters'
    -- last, as its NULL ends the checks: what a worker cannot read (pgtask.payload_limit_error),
    -- looked for only in a payload long enough to break a limit (the threshold is folded into a
    -- constant when the caller's query is planned)
    WHEN octet_length(p_payload::text) > pgtask.payload_limits_walk_above() THEN
      pgtask.payload_limit_error(p_payload, p_payload::text)
  END
$$;

-- NULL when an enqueue's debounce is acceptable (NULL: no debounce), else "<constraint>|<message>"
-- (task_debounce). A debounced task is found by its key, so it needs one (dedupe_key, which for it
-- names a key space of its own: docs/how-it-works.md, "Debounce"); its run_at is now() + debounce,
-- so it takes no run_at besides; and the interval is above zero and at most a day (a debounce is a
-- short quiet period, not a schedule; a longer delay is run_at's job).
CREATE OR REPLACE FUNCTION pgtask.debounce_error(p_dedupe_key text, p_debounce interval, p_run_at timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE -- stable: an interval prints as IntervalStyle says
AS $$
  SELECT CASE
    WHEN p_debounce IS NULL THEN NULL
    WHEN p_dedupe_key IS NULL THEN
      'task_debounce|debounce needs a dedupe_key: the key of the pending task a new enqueue replaces'
    WHEN p_debounce <= interval '0' THEN
      'task_debounce|debounce must be above zero, not ' || p_debounce::text
    WHEN p_debounce > interval '1 day' THEN
      'task_debounce|debounce must be at most 1 day, not ' || p_debounce::text
    WHEN p_run_at IS NOT NULL THEN
      'task_debounce|a debounced task runs at now() + debounce: give debounce or run_at, not both'
  END
$$;
-- nothing for PUBLIC, also where R__06_privileges does not run after this (see R__03_enqueue.sql)
REVOKE EXECUTE ON FUNCTION pgtask.debounce_error(text, interval, timestamptz) FROM PUBLIC;

-- Raises the error produced by task_input_error as SQLSTATE 23514 (check_violation) with the
-- constraint name set, so drivers can report it by name.
CREATE OR REPLACE FUNCTION pgtask.raise_input_error(p_error text, p_context text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  RAISE EXCEPTION 'pgtask: invalid task%: %', coalesce(' (' || p_context || ')', ''), split_part(p_error, '|', 2)
    USING ERRCODE = 'check_violation', CONSTRAINT = split_part(p_error, '|', 1);
END
$$;

-- The registry id of a tenant, registering it on first use. Never burns identity values for
-- names that already exist.
CREATE OR REPLACE FUNCTION pgtask.tenant_id(p_name text) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_id integer;
BEGIN
  IF p_name IS NULL THEN
    RETURN NULL;
  END IF;
  LOOP
    SELECT id INTO v_id FROM pgtask.tenant WHERE name = p_name;
    IF FOUND THEN
      RETURN v_id;
    END IF;
    INSERT INTO pgtask.tenant (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END LOOP;
END
$$;

-- The lock namespace as pg_locks shows it (classid is an unsigned oid).
CREATE OR REPLACE FUNCTION pgtask.lock_namespace_oid() RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT ((s.lock_namespace::bigint + 4294967296) % 4294967296)::text::oid FROM pgtask.settings s
$$;
