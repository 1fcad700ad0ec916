-- Trace context: the W3C traceparent of the code that enqueued a task, so that its executions can
-- join that trace (OpenTelemetry; see docs/tracing.md). NULL for a task enqueued without one.
--
-- It is taken from the transaction-local setting pgtask.trace_parent at insert, by a trigger, so
-- pgtask.enqueue and pgtask.enqueue_batch keep their signatures: the Java client sets the setting
-- in the enqueue statement itself when tracing is configured, and any SQL caller may do the same
-- (SET LOCAL pgtask.trace_parent = '00-<trace id>-<span id>-<flags>') before enqueuing. Like SET
-- LOCAL, it applies to every task the transaction enqueues after it, until set again. A value that
-- is not a traceparent is rejected with an error that names the setting, and nothing is stored.
-- The WHEN clause keeps the trigger's function from running at all when the setting is empty or
-- unset, which is the case for every enqueue without tracing.
ALTER TABLE pgtask.task ADD COLUMN trace_parent text;

CREATE FUNCTION pgtask.task_trace_parent() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  tp text := current_setting('pgtask.trace_parent', true);
BEGIN
  IF tp !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR tp ~ '^ff-'
     OR tp ~ '^..-0{32}-' OR tp ~ '-0{16}-..$' THEN
    RAISE EXCEPTION 'pgtask.trace_parent is not a W3C traceparent (version-traceid-parentid-flags in lower-case hex, e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01): %', left(tp, 100)
      USING ERRCODE = '22023';
  END IF;
  NEW.trace_parent := tp;
  RETURN NEW;
END
$$;

CREATE TRIGGER task_trace_parent BEFORE INSERT ON pgtask.task
  FOR EACH ROW
  WHEN (NEW.trace_parent IS NULL AND current_setting('pgtask.trace_parent', true) <> '')
  EXECUTE FUNCTION pgtask.task_trace_parent();
