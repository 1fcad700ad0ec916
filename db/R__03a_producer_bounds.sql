-- Producer bounds: what the owner lets a producer role choose at enqueue. The owner sets them per
-- role (pgtask.set_producer_bounds) and reads them (pgtask.producer_bounds); pgtask.enqueue and
-- pgtask.enqueue_batch refuse a task outside them with a named error (23514, constraint
-- task_priority_bound or task_run_at_bound) and store nothing. Everything here is for the owner:
-- no grants (R__06_privileges revokes EXECUTE from PUBLIC).
--
-- Who is bounded: the role that called enqueue. Inside the enqueue functions (SECURITY DEFINER)
-- current_user is their owner, so the caller is the role set by SET ROLE, else the session's
-- login role. It is bounded by the bounds of every role whose privileges it uses (its own, and
-- those of the roles it inherits from, as pg_has_role(..., 'USAGE') says): all of them apply at
-- once. The owner, and every role that may act as the owner (a member of it, a superuser), is
-- never bounded. Enqueue looks here only when pgtask.settings.producer_bounds says that
-- pgtask.producer_bound has a row (the trigger at the end keeps it so).

-- The bounds that apply to the caller of the enqueue function running now: the caller's name, the
-- lowest and highest priority it may set and whether it may set a run_at in the past (NULLs and
-- true: no bound); a row of NULLs for the owner. Run inside pgtask.enqueue / enqueue_batch, where
-- current_user is their owner. No SET clause of its own: it runs under the callers' pinned
-- search_path, and a SET clause would cost every bounded enqueue a change of search_path and back
-- (measured: two thirds of what the bounds added to an enqueue); every name here is schema-qualified.
CREATE OR REPLACE FUNCTION pgtask.caller_producer_bound(
  OUT caller name, OUT min_priority integer, OUT max_priority integer, OUT past_run_at boolean)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
  v_role text := pg_catalog.current_setting('role');
BEGIN
  caller := CASE WHEN v_role OPERATOR(pg_catalog.=) 'none' THEN session_user ELSE v_role::pg_catalog.name END;
  IF caller OPERATOR(pg_catalog.=) current_user OR pg_catalog.pg_has_role(caller, current_user, 'MEMBER') THEN
    caller := NULL;
    RETURN;
  END IF;
  -- rows naming a role that no longer exists bound nobody (pg_has_role would raise on their name;
  -- to_regrole gives NULL, and pg_has_role NULL for it)
  SELECT pg_catalog.max(b.min_priority), pg_catalog.min(b.max_priority), coalesce(pg_catalog.bool_and(b.past_run_at), true)
  INTO min_priority, max_priority, past_run_at
  FROM pgtask.producer_bound b
  WHERE pg_catalog.pg_has_role(caller, pg_catalog.to_regrole(pg_catalog.quote_ident(b.role_name))::pg_catalog.oid, 'USAGE');
END
$$;

-- NULL when a task's priority and run_at are within the caller's bounds (the OUT values of
-- pgtask.caller_producer_bound), else "<constraint>|<message>" naming the bound and the value.
-- p_priority is the task's priority (NULL elements already taken as 0), p_run_at its run_at as
-- given (NULL: now(), which no bound refuses). A run_at is in the past when it is before now(), the
-- start of the enqueueing transaction and the run_at a task given none gets: no tolerance.
CREATE OR REPLACE FUNCTION pgtask.producer_bound_error(
  p_caller name, p_min_priority integer, p_max_priority integer, p_past_run_at boolean,
  p_priority integer, p_run_at timestamptz
) RETURNS text
LANGUAGE sql STABLE
AS $$
  SELECT CASE
    WHEN p_priority < p_min_priority THEN
      'task_priority_bound|priority ' || p_priority::text || ' is below ' || p_min_priority::text
      || ', the lowest priority role ' || p_caller::text || ' may set (pgtask.producer_bounds)'
    WHEN p_priority > p_max_priority THEN
      'task_priority_bound|priority ' || p_priority::text || ' is above ' || p_max_priority::text
      || ', the highest priority role ' || p_caller::text || ' may set (pgtask.producer_bounds)'
    WHEN NOT p_past_run_at AND p_run_at < now() THEN
      'task_run_at_bound|run_at ' || p_run_at::text || ' is before now() (' || now()::text
      || '): role ' || p_caller::text || ' may not set a run_at in the past (pgtask.producer_bounds)'
  END
$$;

-- Sets the bounds of a producer role, replacing any it had: the lowest and highest priority it may
-- set (NULL: no bound on that side) and whether it may set a run_at in the past. All three left
-- unbounded (NULL, NULL, true) removes the role's bounds. Applies to enqueues that start after this
-- transaction commits. Refuses (23514) a role that does not exist (producer_bound_role_exists), one
-- that acts as the owner and so is never bounded (producer_bound_role_owner), and a lowest priority
-- above the highest (producer_bound_priority_range). Independent of pgtask.grant_producer: granting
-- leaves bounds as they are, and bounds may be set before the grant.
CREATE OR REPLACE FUNCTION pgtask.set_producer_bounds(
  role_name name,
  min_priority integer DEFAULT NULL,
  max_priority integer DEFAULT NULL,
  past_run_at boolean DEFAULT true
) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  v_owner oid;
BEGIN
  IF role_name IS NULL OR NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name) THEN
    RAISE EXCEPTION 'pgtask: cannot set producer bounds: role % does not exist', coalesce(quote_ident(role_name), 'NULL')
      USING ERRCODE = 'check_violation', CONSTRAINT = 'producer_bound_role_exists';
  END IF;
  SELECT p.proowner INTO v_owner FROM pg_proc p
  WHERE p.oid = 'pgtask.enqueue(text, jsonb, text, text, timestamptz, integer, integer, text, interval, bigint[], text)'::regprocedure;
  IF pg_has_role(role_name, v_owner, 'MEMBER') THEN
    RAISE EXCEPTION 'pgtask: cannot set producer bounds: role % acts as the owner of pgtask (%), which is never bounded',
      quote_ident(role_name), v_owner::regrole
      USING ERRCODE = 'check_violation', CONSTRAINT = 'producer_bound_role_owner';
  END IF;
  IF min_priority > max_priority THEN
    RAISE EXCEPTION 'pgtask: cannot set producer bounds: min_priority % is above max_priority %', min_priority, max_priority
      USING ERRCODE = 'check_violation', CONSTRAINT = 'producer_bound_priority_range';
  END IF;
  IF min_priority IS NULL AND max_priority IS NULL AND coalesce(past_run_at, true) THEN
    DELETE FROM pgtask.producer_bound b WHERE b.role_name = set_producer_bounds.role_name;
    RETURN;
  END IF;
  INSERT INTO pgtask.producer_bound AS b (role_name, min_priority, max_priority, past_run_at)
  VALUES (set_producer_bounds.role_name, set_producer_bounds.min_priority, set_producer_bounds.max_priority,
          coalesce(set_producer_bounds.past_run_at, true))
  ON CONFLICT ON CONSTRAINT producer_bound_pkey DO UPDATE
  SET min_priority = excluded.min_priority, max_priority = excluded.max_priority,
      past_run_at = excluded.past_run_at, set_at = now(), set_by = current_user;
END
$$;

-- The bounds the owner has set, one row per bounded role (a role without a row is unbounded).
-- role_exists is false for a row whose role was dropped or renamed: it bounds nobody.
CREATE OR REPLACE VIEW pgtask.producer_bounds AS
SELECT b.role_name, b.min_priority, b.max_priority, b.past_run_at, b.set_at, b.set_by,
       EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = b.role_name) AS role_exists
FROM pgtask.producer_bound b;

-- Keeps pgtask.settings.producer_bounds equal to "pgtask.producer_bound has a row", whoever
-- changes the table (set_producer_bounds or the owner's own DML). The settings row is locked in a
-- statement of its own first: a concurrent change of the bounds commits before the next
-- statement's snapshot is taken, so that snapshot sees every committed row and the flag is never
-- left false while a bound exists (a flag computed while waiting for the lock could miss it).
CREATE OR REPLACE FUNCTION pgtask.producer_bound_after_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM FROM pgtask.settings s FOR UPDATE;
  UPDATE pgtask.settings s SET producer_bounds = EXISTS (SELECT FROM pgtask.producer_bound)
  WHERE s.producer_bounds IS DISTINCT FROM EXISTS (SELECT FROM pgtask.producer_bound);
  RETURN NULL;
END
$$;

-- Quiet for the rest of this migration's transaction: a first migration's DROP TRIGGER IF EXISTS
-- would otherwise send a "does not exist, skipping" notice that Flyway logs at INFO.
SET LOCAL client_min_messages = warning;

DROP TRIGGER IF EXISTS producer_bound_after_change ON pgtask.producer_bound;
CREATE TRIGGER producer_bound_after_change
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pgtask.producer_bound
FOR EACH STATEMENT EXECUTE FUNCTION pgtask.producer_bound_after_change();
