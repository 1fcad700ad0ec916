-- Validation shared by every way in (SQL function, Java single and batch), the tenant registry,
-- and the lock namespace as pg_locks shows it. Repeatable: each function is defined here once, in
-- its final form.

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
  END
$$;

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
