-- Dependencies (docs/how-it-works.md, "Dependencies"; the tables in V10__dependencies.sql).
--
-- A child names its parents at enqueue (pgtask.enqueue(..., depends_on => ARRAY[...]),
-- pgtask.enqueue_batch(..., depends_on => ...), both through pgtask.insert_child below). It is
-- inserted 'pending' with parents_pending = the parents that have not completed, and one
-- pgtask.task_dependency row per parent. When a parent reaches a final state (or is deleted
-- before it had one), a row trigger on that parent resolves its children in the same statement,
-- so in the transaction that finishes the parent:
--   completed                 each child's parents_pending goes down by one; at 0 the child
--                             becomes queued (available), with its tenant's head rule applied,
--                             and its queue is woken;
--   discarded, cancelled,     by the dependency's policy: 'cancel' cancels the child (and, through
--   deleted                   the same trigger on the child, its own children), 'run' counts the
--                             parent as met, 'wait' leaves the child pending for an operator
--                             (pgtask.release_task), and a parent retried and completed later
--                             still releases it.
-- A parent that fails and is retried (retryable) has not finished: only its final state counts.
--
-- The race between an enqueue naming a parent and that parent finishing is closed by the parent's
-- row lock: pgtask.insert_child locks its parents (FOR NO KEY UPDATE, in id order) and sets their
-- has_children flag before it reads their states. A finishing statement that ran first holds the
-- row until its transaction ends, and the enqueue then reads the final state (and counts the
-- parent as met); an enqueue that ran first holds the row until it commits, and the finishing
-- UPDATE waits for it, then sees the flag and, in its trigger's statements, the child's rows.
-- The cost: an enqueue naming a parent that runs in a transactional worker waits for that
-- attempt's transaction to end (the worker holds the row while the handler runs).


-- Inserts one task with parents (called by pgtask.enqueue and pgtask.enqueue_batch after their
-- validation; p_id: an id drawn by the caller, or NULL). See the head of this file for the lock.
-- Errors (SQLSTATE 23514, nothing stored): task_parent_missing (a parent that does not exist),
-- task_parent_policy (a policy other than cancel, run, wait), task_parents_count (more than
-- 10,000 parents).
CREATE OR REPLACE FUNCTION pgtask.insert_child(p_kind text, p_payload jsonb, p_queue text, p_tenant_id integer,
  p_run_at timestamptz, p_priority integer, p_max_attempts integer, p_parents bigint[], p_policy text,
  p_id bigint DEFAULT NULL, p_context text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_parents bigint[];
  v_policy text := coalesce(p_policy, 'cancel');
  v_found integer;
  v_missing text;
  v_pending integer;
  v_failed record;
  v_state pgtask.task_state;
  v_id bigint;
BEGIN
  IF v_policy NOT IN ('cancel', 'run', 'wait') THEN
    PERFORM pgtask.raise_input_error('task_parent_policy|on_parent_failure must be cancel, run or wait, not '
      || left(v_policy, 50), p_context);
  END IF;
  IF array_position(p_parents, NULL) IS NOT NULL THEN
    PERFORM pgtask.raise_input_error('task_parent_missing|depends_on must not contain NULL', p_context);
  END IF;
  v_parents := ARRAY(SELECT DISTINCT x FROM unnest(p_parents) AS x ORDER BY x);
  IF cardinality(v_parents) > 10000 THEN
    PERFORM pgtask.raise_input_error('task_parents_count|a task may depend on at most 10000 tasks, not '
      || cardinality(v_parents), p_context);
  END IF;
  -- lock the parents in id order (two enqueues naming the same parents never deadlock), then flag
  -- them; a parent running in a worker's transaction is waited for
  PERFORM 1 FROM pgtask.task t WHERE t.id = ANY (v_parents) ORDER BY t.id FOR NO KEY UPDATE;
  GET DIAGNOSTICS v_found = ROW_COUNT;
  IF v_found < cardinality(v_parents) THEN
    SELECT string_agg(x::text, ', ' ORDER BY x) INTO v_missing
    FROM unnest(v_parents) AS x WHERE NOT EXISTS (SELECT 1 FROM pgtask.task t WHERE t.id = x);
    PERFORM pgtask.raise_input_error('task_parent_missing|depends on task(s) that do not exist: ' || v_missing, p_context);
  END IF;
  UPDATE pgtask.task t SET has_children = true WHERE t.id = ANY (v_parents) AND NOT t.has_children;

  SELECT count(*) FILTER (WHERE t.state NOT IN ('completed', 'cancelled', 'discarded')
                             OR (v_policy = 'wait' AND t.state <> 'completed'))::integer
  INTO v_pending
  FROM pgtask.task t WHERE t.id = ANY (v_parents);
  SELECT t.id, t.state INTO v_failed FROM pgtask.task t
  WHERE t.id = ANY (v_parents) AND t.state IN ('cancelled', 'discarded') ORDER BY t.id LIMIT 1;
  v_state := CASE WHEN v_policy = 'cancel' AND v_failed.id IS NOT NULL THEN 'cancelled'
                  WHEN v_pending > 0 THEN 'pending'
                  ELSE 'available' END;

  INSERT INTO pgtask.task (id, kind, payload, queue, tenant_id, run_at, priority, max_attempts, state,
                           parents_pending, finished_at, errors)
  VALUES (coalesce(p_id, nextval('pgtask.task_id_seq'::regclass)), p_kind, p_payload, p_queue, p_tenant_id,
          coalesce(p_run_at, now()), p_priority, p_max_attempts, v_state,
          CASE WHEN v_state = 'cancelled' THEN 0 ELSE v_pending END,
          CASE WHEN v_state = 'cancelled' THEN clock_timestamp() END,
          CASE WHEN v_state = 'cancelled' THEN jsonb_build_array(jsonb_build_object('attempt', 0,
            'at', clock_timestamp(), 'worker', NULL,
            'error', format('cancelled: parent task %s was %s', v_failed.id, v_failed.state))) END)
  RETURNING id INTO v_id;

  INSERT INTO pgtask.task_dependency (child_id, parent_id, on_failure, parent_state)
  SELECT v_id, t.id, v_policy,
         CASE WHEN t.state IN ('completed', 'cancelled', 'discarded') THEN t.state::text END
  FROM pgtask.task t WHERE t.id = ANY (v_parents);

  -- a claim that passed over a parent while this held it found nothing else: wake its queue
  PERFORM pg_notify('pgtask', q.queue)
  FROM (SELECT DISTINCT t.queue FROM pgtask.task t
        WHERE t.id = ANY (v_parents) AND t.state IN ('available', 'retryable') AND NOT t.blocked
          AND t.run_at <= clock_timestamp()) q;
  RETURN v_id;
END
$$;
REVOKE EXECUTE ON FUNCTION pgtask.insert_child(text, jsonb, text, integer, timestamptz, integer, integer, bigint[], text, bigint, text) FROM PUBLIC;

-- Resolves the children of a parent that reached a final state (p_outcome: completed, cancelled,
-- discarded) or was deleted before it had one ('deleted'). Called by the row triggers below, in
-- the statement that finished the parent. One probe of task_dependency_parent_idx, then one
-- UPDATE per kind of action, over this parent's children only: a child's other parents are never
-- read (fan-in of N parents costs each completion O(1)). Children are locked in id order.
-- Weighted fair share (db/R__02b_fair_share.sql): a released child takes its place as an inserted
-- task would (one probe of pgtask.flow_limit without weights).
CREATE OR REPLACE FUNCTION pgtask.passes_for_released(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
    PERFORM pgtask.assign_passes_untenanted(p_ids);
    PERFORM pgtask.assign_passes(x.tenants, x.queues, NULL)
    FROM (SELECT array_agg(t.tenant_id) AS tenants, array_agg(t.queue) AS queues FROM pgtask.task t
          WHERE t.id = ANY (p_ids) AND t.tenant_id IS NOT NULL AND NOT t.blocked
            AND t.state IN ('available', 'retryable') AND t.pass IS NULL) x
    WHERE x.tenants IS NOT NULL;
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION pgtask.passes_for_released(bigint[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION pgtask.resolve_children(p_parent bigint, p_outcome text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_met bigint[];
  v_cancel bigint[];
  v_woken record;
BEGIN
  -- the dependencies this outcome settles: unsettled ones, and (on completion) those a failure
  -- left holding their child under policy 'wait' (the parent was retried and has now completed)
  WITH settled AS (
    UPDATE pgtask.task_dependency d SET parent_state = p_outcome
    WHERE d.parent_id = p_parent
      AND (d.parent_state IS NULL
           OR (p_outcome = 'completed' AND d.on_failure = 'wait' AND d.parent_state <> 'completed'))
    RETURNING d.child_id, d.on_failure
  )
  SELECT array_agg(s.child_id ORDER BY s.child_id) FILTER (WHERE p_outcome = 'completed' OR s.on_failure = 'run'),
         array_agg(s.child_id ORDER BY s.child_id) FILTER (WHERE p_outcome <> 'completed' AND s.on_failure = 'cancel')
  INTO v_met, v_cancel
  FROM settled s;

  IF v_met IS NOT NULL THEN
    -- one parent fewer; the last one releases the child as an insert would queue it (tenant
    -- heads), due no earlier than now. The wake-up ignores pgtask.worker_queues: the completing
    -- worker's in-process hand-off wake (HandOffWake) covers tenant hand-offs, not releases.
    FOR v_woken IN
      WITH locked AS (
        SELECT c.id FROM pgtask.task c WHERE c.id = ANY (v_met) AND c.state = 'pending' ORDER BY c.id FOR NO KEY UPDATE
      ), changed AS (
        UPDATE pgtask.task c
        SET parents_pending = c.parents_pending - 1,
            state = CASE WHEN c.parents_pending <= 1 THEN 'available'::pgtask.task_state ELSE c.state END,
            run_at = CASE WHEN c.parents_pending <= 1 THEN greatest(c.run_at, clock_timestamp()) ELSE c.run_at END,
            blocked = c.parents_pending <= 1
                      AND pgtask.tenant_waits(c.tenant_id, c.queue, greatest(c.run_at, clock_timestamp()))
        FROM locked l WHERE c.id = l.id
        RETURNING c.queue, c.run_at, c.state, c.blocked
      )
      SELECT ch.queue, min(ch.run_at) AS run_at FROM changed ch
      WHERE ch.state = 'available' AND NOT ch.blocked GROUP BY ch.queue
    LOOP
      IF v_woken.run_at <= clock_timestamp() THEN
        PERFORM pg_notify('pgtask', v_woken.queue);
      ELSE
        PERFORM pg_notify('pgtask', v_woken.queue || ' '
          || ceil(extract(epoch FROM v_woken.run_at - clock_timestamp()) * 1000)::bigint);
      END IF;
    END LOOP;
    PERFORM pgtask.passes_for_released(v_met);
  END IF;

  IF v_cancel IS NOT NULL THEN
    -- cancelled with the reason; a cancelled child with children of its own resolves them through
    -- the same trigger (recursively)
    UPDATE pgtask.task c
    SET state = 'cancelled', finished_at = clock_timestamp(),
        errors = coalesce(c.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
          'attempt', c.attempt, 'at', clock_timestamp(), 'worker', NULL,
          'error', format('cancelled: parent task %s was %s', p_parent, p_outcome)))
    WHERE c.id IN (SELECT x.id FROM pgtask.task x WHERE x.id = ANY (v_cancel) AND x.state = 'pending'
                   ORDER BY x.id FOR NO KEY UPDATE);
  END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION pgtask.resolve_children(bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION pgtask.task_after_parent_finished() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pgtask.resolve_children(OLD.id, 'deleted');
  ELSE
    PERFORM pgtask.resolve_children(NEW.id, NEW.state::text);
  END IF;
  RETURN NULL;
END
$$;

-- Row triggers whose WHEN clause the server evaluates without calling a function: a task nobody
-- named as a parent (has_children false) costs its completion nothing here.
SET LOCAL client_min_messages = warning;
DROP TRIGGER IF EXISTS task_after_parent_finished ON pgtask.task;
CREATE TRIGGER task_after_parent_finished
  AFTER UPDATE ON pgtask.task
  FOR EACH ROW WHEN (
    OLD.has_children AND OLD.state IS DISTINCT FROM NEW.state
    AND NEW.state IN ('completed', 'cancelled', 'discarded'))
  EXECUTE FUNCTION pgtask.task_after_parent_finished();

DROP TRIGGER IF EXISTS task_after_parent_deleted ON pgtask.task;
CREATE TRIGGER task_after_parent_deleted
  AFTER DELETE ON pgtask.task
  FOR EACH ROW WHEN (OLD.has_children AND OLD.state NOT IN ('completed', 'cancelled', 'discarded'))
  EXECUTE FUNCTION pgtask.task_after_parent_finished();

-- Runs a pending task now, whatever its parents: for an operator releasing a child that a failed
-- parent holds (policy 'wait'), or one they decide need not wait. Queued as an insert would queue
-- it (its tenant's head rule), due now or at its run_at if later. Errors: P0002 (no such task),
-- 55000 (not pending), 55P03 (locked right now).
CREATE OR REPLACE FUNCTION pgtask.release_task(task_id bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v_task pgtask.task;
BEGIN
  v_task := pgtask.lock_task_nowait(release_task.task_id, 'release');
  IF v_task.state <> 'pending' THEN
    RAISE EXCEPTION 'pgtask: cannot release task %: it is %; only a pending task (waiting for its parents) can be released',
      release_task.task_id, v_task.state
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  UPDATE pgtask.task c
  SET state = 'available', parents_pending = 0, run_at = greatest(c.run_at, now()),
      blocked = pgtask.tenant_waits(c.tenant_id, c.queue, greatest(c.run_at, now()))
  WHERE c.id = release_task.task_id;
  PERFORM pgtask.passes_for_released(ARRAY[release_task.task_id]);
END
$$;

-- The results of a task's parents (one row per parent: its id, its state as pgtask.tasks names
-- it, or 'deleted' when it is gone, and its result, NULL unless it completed with one).
CREATE OR REPLACE FUNCTION pgtask.parent_results(task_id bigint)
RETURNS TABLE (parent_id bigint, state text, result jsonb)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT d.parent_id, coalesce(p.state::text, 'deleted'), p.result
  FROM pgtask.task_dependency d
  LEFT JOIN pgtask.task p ON p.id = d.parent_id
  WHERE d.child_id = parent_results.task_id
  ORDER BY d.parent_id
$$;

-- explain_task's part for a pending task (db/R__05b_queue_control.sql): the parents it waits for
-- with their states (the first 20 unfinished ones, then the failed ones holding it), and a sentence.
CREATE OR REPLACE FUNCTION pgtask.explain_parents_json(p_task pgtask.task) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_parents jsonb;
  v_held jsonb;
  v_total integer;
  v_text text;
BEGIN
  SELECT count(*)::integer INTO v_total FROM pgtask.task_dependency d WHERE d.child_id = p_task.id;
  SELECT coalesce(jsonb_agg(jsonb_build_object('task_id', x.parent_id, 'state', x.state, 'on_failure', x.on_failure)
                            ORDER BY x.parent_id), '[]')
  INTO v_parents
  FROM (SELECT d.parent_id, d.on_failure,
               CASE WHEN p.id IS NULL THEN coalesce(d.parent_state, 'deleted')
                    WHEN p.blocked THEN 'waiting'
                    WHEN p.state = 'available' AND p.run_at > now() THEN 'scheduled'
                    ELSE p.state::text END AS state
        FROM pgtask.task_dependency d LEFT JOIN pgtask.task p ON p.id = d.parent_id
        WHERE d.child_id = p_task.id AND coalesce(d.parent_state, '') <> 'completed'
        ORDER BY d.parent_id LIMIT 20) x;
  SELECT jsonb_agg(jsonb_build_object('task_id', d.parent_id, 'state', d.parent_state) ORDER BY d.parent_id)
  INTO v_held
  FROM pgtask.task_dependency d
  WHERE d.child_id = p_task.id AND d.on_failure = 'wait' AND d.parent_state IN ('cancelled', 'discarded', 'deleted');
  SELECT string_agg(format('task %s (%s)', e ->> 'task_id', e ->> 'state'), ', ') INTO v_text
  FROM jsonb_array_elements(v_parents) e;
  RETURN jsonb_build_object('reason', 'waiting_for_parents', 'parents_pending', p_task.parents_pending,
    'parents_total', v_total, 'parents', v_parents, 'held_by_failed', v_held,
    'sentence', format('task %s waits for %s of its %s parent task(s): %s%s', p_task.id, p_task.parents_pending, v_total,
      coalesce(v_text, 'none'),
      CASE WHEN v_held IS NOT NULL
           THEN format('; a failed parent holds it for an operator: pgtask.release_task(%s) runs it, pgtask.cancel_task(%s) cancels it',
                       p_task.id, p_task.id)
           ELSE '' END));
END
$$;
