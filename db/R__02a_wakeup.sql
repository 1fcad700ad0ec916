-- The wake-up protocol's database side: every notification on channel pgtask that pgtask's SQL
-- sends when a task becomes claimable (now or later), and the triggers that send them. Its Java
-- side is the package dev.pgtask.internal.wakeup (the payload format, decoded by the worker's
-- listener: WakePayload; the spill after a worker's own hand-offs and its hold-back: Spills,
-- SpillPolicy; the due-time timer: DueTimer). Outside this file only these notify: a worker's
-- claim after its own hand-offs (the spill, ClaimStatements) and its owed spill
-- (IdleQueries.notifyIfClaimable); pgtask.resume_queue ("<queue>", R__05b); and, on channel
-- pgtask_control, pgtask.cancel_task ("cancel <task id> <attempt>", R__04) and
-- pgtask.notify_schedules ("schedules", R__05a). The tenant hand-offs (R__02) call
-- pgtask.wake_queues and pgtask.wake_due_heads from here.
--
-- Payloads (WakePayload's format; keep the two alike):
--   "<queue>"       a task of that queue is due now;
--   "<queue> <ms>"  the earliest of the statement's tasks in that queue is due in <ms>
--                   milliseconds (by the database clock; queue names have no spaces).
--
-- A "<queue> <ms>" payload sets a worker's one due-time timer, so a delayed task starts on time, not at the next poll. The delay is relative,
-- so a worker whose clock differs from the server's still fires no earlier than the task is due
-- (the notification arrives after the trigger ran). PostgreSQL folds identical (channel,
-- payload) pairs of one transaction into one notification.
--
-- A worker's own hand-offs wake only itself. The statement with which a worker completes its
-- tasks sets the transaction-local pgtask.worker_queues to its queues (',q1,q2,'), and wakes its
-- own claim in-process after the commit. A tenant's next task, or a head its running task held
-- back, that such a completion makes claimable in one of those queues sends no "<queue>"
-- notification: every listening session of the database would be signalled, and every idle
-- worker would claim, for one task that its own worker takes anyway (with 64 workers, a quarter
-- of the server's CPU went to delivering them). Every other path still notifies: other queues,
-- "due later" payloads, and every statement without the setting that makes a task claimable (a
-- task put back or rescued, a retry due at once, an operator's retry or update, a tenant's head
-- handed on by a failure or a cancellation, SQL by hand; see pgtask.task_after_put_back). A
-- running task whose retry, snooze or deferral is due later is claimed by its own worker's timer,
-- and by the others' polls if that worker stops first. A claim that comes back full notifies its
-- queues (ClaimStatements, the spill), so a worker that cannot take all it made claimable calls the
-- others in.


-- Wakes the queues of tasks that became claimable (parallel arrays): one notification per queue
-- with a task due now (none for a queue of the completing worker, see above), and one per queue
-- for its earliest later task.
CREATE OR REPLACE FUNCTION pgtask.wake_queues(p_queues text[], p_run_ats timestamptz[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v record;
  v_own text := current_setting('pgtask.worker_queues', true);
BEGIN
  FOR v IN SELECT x.queue, bool_or(x.run_at <= clock_timestamp()) AS due_now,
                  min(x.run_at) FILTER (WHERE x.run_at > clock_timestamp() AND isfinite(x.run_at)) AS next_at
           FROM unnest(p_queues, p_run_ats) AS x(queue, run_at)
           GROUP BY x.queue LOOP
    IF v.due_now AND NOT coalesce(strpos(v_own, ',' || v.queue || ',') > 0, false) THEN
      PERFORM pg_notify('pgtask', v.queue);
    END IF;
    IF v.next_at IS NOT NULL THEN
      PERFORM pg_notify('pgtask', v.queue || ' '
                        || ceil(extract(epoch FROM v.next_at - clock_timestamp()) * 1000)::bigint);
    END IF;
  END LOOP;
END
$$;

-- Wakes the queues in which the tenants whose running task stopped (p_tenants) have a head due
-- now: the claim passed over them while the task ran (in other queues, or a failed head whose
-- retry came due). None for a queue of the completing worker (see above). "Due" by the clock, not
-- by now(): the statement runs in the task's transaction, which began before the heads enqueued
-- while the task ran. Called by pgtask.heads_ended (R__02); pgtask.task_after_update_heads runs
-- the same query inline (keep the two alike).
CREATE OR REPLACE FUNCTION pgtask.wake_due_heads(p_tenants integer[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  PERFORM pg_notify('pgtask', d.queue)
  FROM (SELECT DISTINCT h.queue FROM pgtask.task h
        WHERE h.tenant_id = ANY (p_tenants) AND NOT h.blocked
          AND h.state IN ('available', 'retryable') AND h.run_at <= clock_timestamp()) d
  WHERE NOT coalesce(strpos(current_setting('pgtask.worker_queues', true), ',' || d.queue || ',') > 0, false);
END
$$;

-- Quiet for the rest of this migration's transaction: a first migration's DROP TRIGGER IF EXISTS
-- would otherwise send a "does not exist, skipping" notice that Flyway logs at INFO.
SET LOCAL client_min_messages = warning;

-- The insert statement's wake-ups, as pgtask.wake_queues sends them, grouped straight from the
-- transition table: building two arrays of every inserted row to unnest them again cost a batch
-- of 10,000 tasks about as much as the rest of the trigger's work. One clock reading decides
-- which tasks are due now. A task inserted pending (waiting for its parents, R__03b) or already
-- cancelled (a failed parent) wakes nobody.
CREATE OR REPLACE FUNCTION pgtask.task_after_insert_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
  v record;
  v_now timestamptz := clock_timestamp();
BEGIN
  FOR v IN SELECT n.queue, bool_or(n.run_at <= v_now) AS due_now,
                  min(n.run_at) FILTER (WHERE n.run_at > v_now AND isfinite(n.run_at)) AS next_at
           FROM new_tasks n
           WHERE NOT n.blocked AND n.state IN ('available', 'retryable')
           GROUP BY n.queue LOOP
    IF v.due_now THEN
      PERFORM pg_notify('pgtask', v.queue);
    END IF;
    IF v.next_at IS NOT NULL THEN
      PERFORM pg_notify('pgtask', v.queue || ' '
                        || ceil(extract(epoch FROM v.next_at - clock_timestamp()) * 1000)::bigint);
    END IF;
  END LOOP;
  -- weighted fair share (db/R__02b_fair_share.sql): the new claimable tasks' places; one probe of
  -- a table that is empty without limits
  IF EXISTS (SELECT 1 FROM pgtask.flow_limit l WHERE l.weight IS NOT NULL) THEN
    PERFORM pgtask.assign_passes_untenanted(
      ARRAY(SELECT n.id FROM new_tasks n WHERE n.tenant_id IS NULL AND NOT n.blocked AND n.pass IS NULL));
    PERFORM pgtask.assign_passes(x.tenants, x.queues, NULL)
    FROM (SELECT array_agg(n.tenant_id) AS tenants, array_agg(n.queue) AS queues FROM new_tasks n
          WHERE n.tenant_id IS NOT NULL AND NOT n.blocked AND n.pass IS NULL) x
    WHERE x.tenants IS NOT NULL;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_after_insert_notify ON pgtask.task;
CREATE TRIGGER task_after_insert_notify
  AFTER INSERT ON pgtask.task
  REFERENCING NEW TABLE AS new_tasks
  FOR EACH STATEMENT
  EXECUTE FUNCTION pgtask.task_after_insert_notify();

-- Tasks an UPDATE put (back) in a queue wake it, as pgtask.wake_queues wakes promoted heads: a
-- running task due again now (put back by a stopping worker, rescued, retried at once), or a
-- queued one that was not waiting in that queue by then (retried by an operator, moved earlier by
-- pgtask.update_task, moved to another queue). A running task due later (a retry's backoff, a
-- snooze, a deferral) sends nothing: its worker's own timer claims it then, and a notification to
-- every session for each failure would cost more than the next poll saves. A row trigger whose
-- WHEN clause the server evaluates without calling any function: claims, completions and lease
-- renewals leave no row claimable and make no call. Measured on a drain of tasks without a tenant
-- in batches of 32 (a claim and a completion per batch): about 0.5 us per updated row, within
-- the noise of the machine; the same test as a query in the statement trigger cost 21 us per
-- statement. A promotion (blocked to head, inside the hand-off triggers) has pgtask.wake_queues
-- called for it already, and a task put back by an UPDATE inside a trigger of an application is
-- found by the next poll.
CREATE OR REPLACE FUNCTION pgtask.task_after_put_back() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
  PERFORM pgtask.wake_queues(ARRAY[NEW.queue], ARRAY[NEW.run_at]);
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_after_put_back ON pgtask.task;
CREATE TRIGGER task_after_put_back
  AFTER UPDATE ON pgtask.task
  FOR EACH ROW WHEN (
    NEW.state IN ('available', 'retryable') AND NOT NEW.blocked
    AND CASE WHEN OLD.state = 'running' THEN NEW.run_at <= clock_timestamp()
             ELSE OLD.state NOT IN ('available', 'retryable') OR OLD.blocked OR OLD.queue <> NEW.queue
                  OR OLD.run_at > NEW.run_at END
    AND (pg_trigger_depth() = 0 OR NOT OLD.blocked))
  EXECUTE FUNCTION pgtask.task_after_put_back();
