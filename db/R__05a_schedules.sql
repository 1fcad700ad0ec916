-- Schedules (recurring tasks): the cron evaluator, declaration (pgtask.schedule and friends), the
-- firing pass the workers call (pgtask.fire_schedules), and the view pgtask.schedules.
--
-- The database is the one evaluator of fire times: it validates an expression at declaration,
-- returns its next fire time, and advances it under the schedule's row lock when it fires, on the
-- database clock. Java parses expressions with cron-utils too (to reject them before a round
-- trip), and the test suite holds both to the same syntax and, away from DST changes, to the same
-- fire times. See docs/how-it-works.md, "Recurring tasks".
--
-- Errors: 23514 (check_violation) with a constraint name schedule_* for an invalid declaration.

-- ---------------------------------------------------------------------------------------------
-- The cron evaluator
-- ---------------------------------------------------------------------------------------------

-- One field of a cron expression: the sorted values it allows, or an error message
-- ("<field> field: ..."). p_names: the field's names (JAN..DEC, SUN..SAT), the first meaning p_base.
CREATE OR REPLACE FUNCTION pgtask.cron_field(p_field text, p_label text, p_lo integer, p_hi integer,
                                             p_names text[], p_base integer, OUT vals integer[], OUT error text)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_item text;
  v_range text;
  v_step integer;
  v_parts text[];
  v_a integer;
  v_b integer;
  v_bounds text[];
  v_i integer;
  v_set integer[] := '{}';
BEGIN
  IF p_field IS NULL OR p_field = '' THEN
    error := p_label || ' field is empty';
    RETURN;
  END IF;
  FOREACH v_item IN ARRAY string_to_array(p_field, ',') LOOP
    IF v_item = '' THEN
      error := p_label || ' field "' || p_field || '" has an empty list item';
      RETURN;
    END IF;
    v_parts := string_to_array(v_item, '/');
    IF cardinality(v_parts) > 2 THEN
      error := p_label || ' field: "' || v_item || '" has more than one /';
      RETURN;
    END IF;
    v_range := v_parts[1];
    v_step := 1;
    IF cardinality(v_parts) = 2 THEN
      IF v_parts[2] !~ '^[0-9]{1,4}$' OR v_parts[2]::integer < 1 THEN
        error := p_label || ' field: step "' || v_parts[2] || '" in "' || v_item || '" must be a positive number';
        RETURN;
      END IF;
      v_step := v_parts[2]::integer;
      IF v_step > p_hi - p_lo + 1 THEN
        error := p_label || ' field: step ' || v_step || ' in "' || v_item || '" is larger than the field''s range '
                 || p_lo || '-' || p_hi;
        RETURN;
      END IF;
    END IF;
    IF v_range = '*' THEN
      v_a := p_lo;
      v_b := p_hi;
    ELSE
      v_bounds := string_to_array(v_range, '-');
      IF cardinality(v_bounds) > 2 OR v_bounds[1] = '' OR v_bounds[cardinality(v_bounds)] = '' THEN
        error := p_label || ' field: "' || v_item || '" is not a value, a range a-b, or * (with an optional /step)';
        RETURN;
      END IF;
      FOR v_i IN 1 .. cardinality(v_bounds) LOOP
        IF v_bounds[v_i] ~ '^[0-9]{1,4}$' THEN
          v_bounds[v_i] := v_bounds[v_i]::integer::text;
        ELSIF p_names IS NOT NULL AND upper(v_bounds[v_i]) = ANY (p_names) THEN
          v_bounds[v_i] := (array_position(p_names, upper(v_bounds[v_i])) - 1 + p_base)::text;
        ELSE
          error := p_label || ' field: "' || v_bounds[v_i] || '" is not a number'
                   || CASE WHEN p_names IS NOT NULL THEN ' or a name (' || array_to_string(p_names, ' ') || ')' ELSE '' END
                   || CASE WHEN v_bounds[v_i] ~ '[LW#]' THEN ' (L, W and # are not supported)' ELSE '' END;
          RETURN;
        END IF;
        IF v_bounds[v_i]::integer NOT BETWEEN p_lo AND p_hi THEN
          error := p_label || ' field: ' || v_bounds[v_i] || ' is out of range ' || p_lo || '-' || p_hi;
          RETURN;
        END IF;
      END LOOP;
      v_a := v_bounds[1]::integer;
      IF cardinality(v_bounds) = 2 THEN
        v_b := v_bounds[2]::integer;
        IF v_b < v_a THEN
          error := p_label || ' field: range "' || v_item || '" goes backwards';
          RETURN;
        END IF;
      ELSIF cardinality(v_parts) = 2 THEN
        v_b := p_hi; -- a/n: from a to the end of the range
      ELSE
        v_b := v_a;
      END IF;
    END IF;
    v_set := v_set || ARRAY(SELECT generate_series(v_a, v_b, v_step));
  END LOOP;
  vals := ARRAY(SELECT DISTINCT x FROM unnest(v_set) x ORDER BY x);
END
$$;

-- The six-field form of a macro, or NULL.
CREATE OR REPLACE FUNCTION pgtask.cron_macro(p_expr text) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE lower(p_expr)
    WHEN '@yearly' THEN '0 0 0 1 1 *'
    WHEN '@annually' THEN '0 0 0 1 1 *'
    WHEN '@monthly' THEN '0 0 0 1 * *'
    WHEN '@weekly' THEN '0 0 0 * * 0'
    WHEN '@daily' THEN '0 0 0 * * *'
    WHEN '@midnight' THEN '0 0 0 * * *'
    WHEN '@hourly' THEN '0 0 * * * *'
  END
$$;

-- Parses a cron expression: five fields (minute hour day-of-month month day-of-week, as Unix cron
-- writes them), six with seconds first (as Spring writes them), or a macro (@yearly, @annually,
-- @monthly, @weekly, @daily, @midnight, @hourly). Raises 23514 (constraint schedule_cron) naming
-- what is wrong.
CREATE OR REPLACE FUNCTION pgtask.cron_parse(p_cron text) RETURNS pgtask.cron_spec
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c_months constant text[] := ARRAY['JAN','FEB','MAR','APR','MAY','JUN','JUL','AUG','SEP','OCT','NOV','DEC'];
  c_days constant text[] := ARRAY['SUN','MON','TUE','WED','THU','FRI','SAT'];
  v_expr text := btrim(regexp_replace(coalesce(p_cron, ''), '\s+', ' ', 'g'));
  v_fields text[];
  v_spec pgtask.cron_spec;
  v_f record;
  v_six boolean;
BEGIN
  IF v_expr = '' THEN
    PERFORM pgtask.raise_schedule_error('schedule_cron', 'cron expression must not be empty');
  END IF;
  IF left(v_expr, 1) = '@' THEN
    IF pgtask.cron_macro(v_expr) IS NULL THEN
      PERFORM pgtask.raise_schedule_error('schedule_cron', 'cron expression "' || left(v_expr, 100)
        || '": unknown macro (known: @yearly @annually @monthly @weekly @daily @midnight @hourly)');
    END IF;
    v_expr := pgtask.cron_macro(v_expr);
  END IF;
  v_fields := string_to_array(v_expr, ' ');
  IF cardinality(v_fields) NOT IN (5, 6) THEN
    PERFORM pgtask.raise_schedule_error('schedule_cron', 'cron expression "' || left(v_expr, 100) || '" has '
      || cardinality(v_fields) || ' fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (second first)');
  END IF;
  v_six := cardinality(v_fields) = 6;
  IF NOT v_six THEN
    v_fields := ARRAY['0'] || v_fields;
  END IF;
  -- ? means "any" in a day field of a six-field expression (as Spring and Quartz write it)
  v_spec.days_any := v_fields[4] = '*' OR (v_six AND v_fields[4] = '?');
  v_spec.weekdays_any := v_fields[6] = '*' OR (v_six AND v_fields[6] = '?');
  v_spec.either := NOT v_six;
  IF v_six AND v_fields[4] = '?' THEN v_fields[4] := '*'; END IF;
  IF v_six AND v_fields[6] = '?' THEN v_fields[6] := '*'; END IF;
  FOR v_f IN
    SELECT i, r.vals, r.error
    FROM (VALUES (1, 'second', 0, 59, NULL::text[], 0), (2, 'minute', 0, 59, NULL, 0), (3, 'hour', 0, 23, NULL, 0),
                 (4, 'day-of-month', 1, 31, NULL, 0), (5, 'month', 1, 12, c_months, 1),
                 (6, 'day-of-week', 0, 7, c_days, 0)) AS d(i, label, lo, hi, names, base)
    CROSS JOIN LATERAL pgtask.cron_field(v_fields[d.i], d.label, d.lo, d.hi, d.names, d.base) r
    ORDER BY i
  LOOP
    IF v_f.error IS NOT NULL THEN
      PERFORM pgtask.raise_schedule_error('schedule_cron', 'cron expression "' || left(p_cron, 100) || '": ' || v_f.error);
    END IF;
    CASE v_f.i
      WHEN 1 THEN v_spec.seconds := v_f.vals;
      WHEN 2 THEN v_spec.minutes := v_f.vals;
      WHEN 3 THEN v_spec.hours := v_f.vals;
      WHEN 4 THEN v_spec.days := v_f.vals;
      WHEN 5 THEN v_spec.months := v_f.vals;
      ELSE v_spec.weekdays := ARRAY(SELECT DISTINCT x % 7 FROM unnest(v_f.vals) x ORDER BY 1);
    END CASE;
  END LOOP;
  RETURN v_spec;
END
$$;

-- Raises an invalid-declaration error as 23514 with the constraint name set.
CREATE OR REPLACE FUNCTION pgtask.raise_schedule_error(p_constraint text, p_message text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  RAISE EXCEPTION 'pgtask: invalid schedule: %', p_message
    USING ERRCODE = 'check_violation', CONSTRAINT = p_constraint;
END
$$;

-- The first fire instant strictly after p_after, in the time zone p_zone; NULL if there is none
-- within 50 years. The search runs on local (wall-clock) time, and a local time maps to an
-- instant thus:
--   * a local time skipped by a DST change (02:30 on the night clocks go forward) fires once,
--     shifted forward by the gap (03:30 summer time), as PostgreSQL reads such a time;
--   * a local time repeated by a DST change (02:30 on the night clocks go back) fires once, at its
--     first occurrence (summer time); the repeated hour's second pass fires nothing that the
--     first pass fired.
CREATE OR REPLACE FUNCTION pgtask.cron_next(p_spec pgtask.cron_spec, p_after timestamptz, p_zone text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_lt timestamp := date_trunc('second', p_after AT TIME ZONE p_zone) + interval '1 second';
  v_end timestamp := v_lt + interval '50 years';
  v_dom integer;
  v_dow integer;
  v_day boolean;
  v_next integer;
  v_at timestamptz;
  v_back interval;
BEGIN
  LOOP
    IF v_lt > v_end THEN
      RETURN NULL;
    END IF;
    IF NOT extract(month FROM v_lt)::integer = ANY (p_spec.months) THEN
      v_lt := date_trunc('month', v_lt) + interval '1 month';
      CONTINUE;
    END IF;
    v_dom := extract(day FROM v_lt)::integer;
    v_dow := extract(dow FROM v_lt)::integer;
    v_day := CASE
      WHEN p_spec.days_any AND p_spec.weekdays_any THEN true
      WHEN p_spec.days_any THEN v_dow = ANY (p_spec.weekdays)
      WHEN p_spec.weekdays_any THEN v_dom = ANY (p_spec.days)
      WHEN p_spec.either THEN v_dom = ANY (p_spec.days) OR v_dow = ANY (p_spec.weekdays)
      ELSE v_dom = ANY (p_spec.days) AND v_dow = ANY (p_spec.weekdays)
    END;
    IF NOT v_day THEN
      v_lt := date_trunc('day', v_lt) + interval '1 day';
      CONTINUE;
    END IF;
    IF NOT extract(hour FROM v_lt)::integer = ANY (p_spec.hours) THEN
      SELECT min(h) INTO v_next FROM unnest(p_spec.hours) h WHERE h > extract(hour FROM v_lt);
      v_lt := CASE WHEN v_next IS NULL THEN date_trunc('day', v_lt) + interval '1 day'
                   ELSE date_trunc('day', v_lt) + v_next * interval '1 hour' END;
      CONTINUE;
    END IF;
    IF NOT extract(minute FROM v_lt)::integer = ANY (p_spec.minutes) THEN
      SELECT min(m) INTO v_next FROM unnest(p_spec.minutes) m WHERE m > extract(minute FROM v_lt);
      v_lt := CASE WHEN v_next IS NULL THEN date_trunc('hour', v_lt) + interval '1 hour'
                   ELSE date_trunc('hour', v_lt) + v_next * interval '1 minute' END;
      CONTINUE;
    END IF;
    IF NOT floor(extract(second FROM v_lt))::integer = ANY (p_spec.seconds) THEN
      SELECT min(s) INTO v_next FROM unnest(p_spec.seconds) s WHERE s > floor(extract(second FROM v_lt));
      v_lt := CASE WHEN v_next IS NULL THEN date_trunc('minute', v_lt) + interval '1 minute'
                   ELSE date_trunc('minute', v_lt) + v_next * interval '1 second' END;
      CONTINUE;
    END IF;
    -- v_lt matches: its instant (PostgreSQL reads a repeated local time as the later one; take
    -- the earlier, and a skipped one as shifted forward by the gap)
    v_at := v_lt AT TIME ZONE p_zone;
    FOREACH v_back IN ARRAY ARRAY[interval '1 hour', interval '30 minutes', interval '2 hours'] LOOP
      IF ((v_at - v_back) AT TIME ZONE p_zone) = v_lt THEN
        v_at := v_at - v_back;
        EXIT;
      END IF;
    END LOOP;
    IF v_at > p_after THEN
      RETURN v_at;
    END IF;
    v_lt := v_lt + interval '1 second'; -- the second pass of a repeated hour: already fired
  END LOOP;
END
$$;

-- The latest (at most p_count) fire instants in [p_from, p_until], oldest first. Searches backwards
-- from p_until in growing windows, so a schedule far behind costs a few searches, not one per fire
-- it missed.
CREATE OR REPLACE FUNCTION pgtask.cron_latest(p_spec pgtask.cron_spec, p_zone text, p_from timestamptz,
                                              p_until timestamptz, p_count integer)
RETURNS timestamptz[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_window interval := interval '2 seconds';
  v_start timestamptz;
  v_at timestamptz;
  v_found timestamptz[];
BEGIN
  IF p_from > p_until THEN
    RETURN '{}';
  END IF;
  LOOP
    v_start := greatest(p_from, p_until - v_window);
    v_found := '{}';
    v_at := pgtask.cron_next(p_spec, v_start - interval '1 microsecond', p_zone);
    WHILE v_at IS NOT NULL AND v_at <= p_until LOOP
      v_found := v_found || v_at;
      IF cardinality(v_found) > p_count THEN
        v_found := v_found[2:];
      END IF;
      v_at := pgtask.cron_next(p_spec, v_at, p_zone);
    END LOOP;
    IF cardinality(v_found) >= p_count OR v_start = p_from THEN
      RETURN v_found;
    END IF;
    v_window := v_window * 8;
  END LOOP;
END
$$;

-- The next p_count fire instants of a cron expression after p_after (default: now) in a time zone:
-- to see what a declaration would do before making it. Validates like pgtask.schedule.
CREATE OR REPLACE FUNCTION pgtask.cron_fire_times(cron text, time_zone text DEFAULT 'UTC',
                                                  after timestamptz DEFAULT NULL, count integer DEFAULT 5)
RETURNS SETOF timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_spec pgtask.cron_spec;
  v_at timestamptz := coalesce(cron_fire_times.after, now());
  v_i integer;
BEGIN
  PERFORM pgtask.check_time_zone(cron_fire_times.time_zone);
  v_spec := pgtask.cron_parse(cron_fire_times.cron);
  FOR v_i IN 1 .. least(coalesce(cron_fire_times.count, 5), 10000) LOOP
    v_at := pgtask.cron_next(v_spec, v_at, cron_fire_times.time_zone);
    EXIT WHEN v_at IS NULL;
    RETURN NEXT v_at;
  END LOOP;
END
$$;

-- Rejects anything but a time zone name the server knows (pg_timezone_names: 'UTC',
-- 'Europe/Berlin', ...). Abbreviations ('CET') and POSIX offsets ('UTC+3', whose sign PostgreSQL
-- reads the POSIX way, the opposite of ISO 8601) are refused: they have no DST rules, or surprise.
CREATE OR REPLACE FUNCTION pgtask.check_time_zone(p_zone text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_zone IS NULL OR p_zone = '' THEN
    PERFORM pgtask.raise_schedule_error('schedule_time_zone', 'time zone must not be empty');
  END IF;
  -- pg_timezone_names reads the whole time zone database (a quarter of a second here): skip it for
  -- UTC and for a zone some schedule already uses
  IF p_zone = 'UTC' OR EXISTS (SELECT 1 FROM pgtask.schedule s WHERE s.time_zone = p_zone) THEN
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_timezone_names z WHERE z.name = p_zone) THEN
    PERFORM pgtask.raise_schedule_error('schedule_time_zone', 'time zone "' || left(p_zone, 100)
      || '" is not a time zone name this server knows (e.g. UTC, Europe/Berlin; see pg_timezone_names)');
  END IF;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- Declaration
-- ---------------------------------------------------------------------------------------------

-- Tells the workers' schedulers that the schedules changed (a hint: they re-read the next due
-- time; anyone may send it, and it changes nothing by itself). Sent at commit, once per transaction.
-- Payload as dev.pgtask.internal.wakeup.WakePayload decodes it.
CREATE OR REPLACE FUNCTION pgtask.notify_schedules() RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT pg_notify('pgtask_control', 'schedules');
$$;

-- Declares a schedule, or changes the one of that name (an idempotent upsert): every fire of the
-- cron expression in time_zone enqueues one task of kind with payload into queue (for tenant).
-- Returns the next fire time.
--   catch_up: missed fires (no worker up, or the queue paused at the fire time) are skipped (0,
--     the default), or at most this many of the latest are enqueued late;
--   allow_overlap: false (default) skips a fire while the schedule's previous task is unfinished;
--   jitter: each fire is enqueued after a random delay of up to this much;
--   priority, max_attempts: those of the tasks it enqueues.
-- Declaring again with the same cron and zone keeps the next fire time; a changed cron or zone
-- recomputes it from now. Either way last_fire_at, last_task_id and the counters stay, and a
-- paused schedule stays paused. Invalid input raises 23514 naming the rule; nothing is stored.
CREATE OR REPLACE FUNCTION pgtask.schedule(
  name text,
  cron text,
  kind text,
  payload jsonb DEFAULT '{}',
  queue text DEFAULT 'default',
  tenant text DEFAULT NULL,
  time_zone text DEFAULT 'UTC',
  catch_up integer DEFAULT 0,
  allow_overlap boolean DEFAULT false,
  jitter interval DEFAULT '0',
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 25
) RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_spec pgtask.cron_spec;
  v_error text;
  v_max_payload integer;
  v_old pgtask.schedule;
  v_exists boolean;
  v_next timestamptz;
  v_cron text := btrim(regexp_replace(coalesce(schedule.cron, ''), '\s+', ' ', 'g'));
BEGIN
  IF schedule.name IS NULL OR schedule.name = '' THEN
    PERFORM pgtask.raise_schedule_error('schedule_name_length', 'name must not be empty');
  END IF;
  IF char_length(schedule.name) > 255 THEN
    PERFORM pgtask.raise_schedule_error('schedule_name_length', 'name must be at most 255 characters');
  END IF;
  PERFORM pgtask.check_time_zone(schedule.time_zone);
  v_spec := pgtask.cron_parse(v_cron);
  SELECT s.max_payload_bytes INTO v_max_payload FROM pgtask.settings s;
  v_error := pgtask.task_input_error(schedule.kind, schedule.payload, schedule.queue, schedule.tenant,
    schedule.max_attempts, NULL, v_max_payload);
  IF v_error IS NOT NULL THEN
    PERFORM pgtask.raise_schedule_error(split_part(v_error, '|', 1), split_part(v_error, '|', 2));
  END IF;
  IF schedule.catch_up IS NULL OR schedule.catch_up NOT BETWEEN 0 AND 1000 THEN
    PERFORM pgtask.raise_schedule_error('schedule_catch_up_range', 'catch_up must be between 0 and 1000');
  END IF;
  IF schedule.jitter IS NULL OR schedule.jitter < interval '0' OR schedule.jitter > interval '1 day' THEN
    PERFORM pgtask.raise_schedule_error('schedule_jitter_range', 'jitter must be between 0 and 1 day');
  END IF;
  IF schedule.allow_overlap IS NULL THEN
    PERFORM pgtask.raise_schedule_error('schedule_allow_overlap', 'allow_overlap must not be NULL');
  END IF;

  SELECT * INTO v_old FROM pgtask.schedule s WHERE s.name = schedule.name FOR UPDATE;
  v_exists := FOUND;
  IF v_exists AND v_old.cron = v_cron AND v_old.time_zone = schedule.time_zone THEN
    v_next := v_old.next_fire_at;
  ELSE
    v_next := pgtask.cron_next(v_spec, now(), schedule.time_zone);
    IF v_next IS NULL THEN
      PERFORM pgtask.raise_schedule_error('schedule_cron', 'cron expression "' || left(v_cron, 100)
        || '" never fires (no matching date in the next 50 years)');
    END IF;
  END IF;

  IF NOT v_exists THEN
    INSERT INTO pgtask.schedule AS s (name, cron, kind, payload, queue, tenant, time_zone, priority, max_attempts,
                                      catch_up, allow_overlap, jitter, next_fire_at, next_due_at)
    VALUES (schedule.name, v_cron, schedule.kind, schedule.payload, schedule.queue, schedule.tenant,
            schedule.time_zone, coalesce(schedule.priority, 0), schedule.max_attempts, schedule.catch_up,
            schedule.allow_overlap, schedule.jitter, v_next, v_next + random() * schedule.jitter)
    ON CONFLICT ON CONSTRAINT schedule_pkey DO NOTHING;
    IF NOT FOUND THEN -- declared concurrently: declare again over it
      RETURN pgtask.schedule(schedule.name, v_cron, schedule.kind, schedule.payload, schedule.queue,
        schedule.tenant, schedule.time_zone, schedule.catch_up, schedule.allow_overlap, schedule.jitter,
        schedule.priority, schedule.max_attempts);
    END IF;
    PERFORM pgtask.notify_schedules();
    RETURN v_next;
  END IF;

  UPDATE pgtask.schedule s
  SET cron = v_cron, kind = schedule.kind, payload = schedule.payload, queue = schedule.queue,
      tenant = schedule.tenant, time_zone = schedule.time_zone, priority = coalesce(schedule.priority, 0),
      max_attempts = schedule.max_attempts, catch_up = schedule.catch_up, allow_overlap = schedule.allow_overlap,
      jitter = schedule.jitter,
      next_fire_at = v_next,
      next_due_at = CASE WHEN v_next = s.next_fire_at AND schedule.jitter = s.jitter THEN s.next_due_at
                         ELSE v_next + random() * schedule.jitter END,
      missed_fires = CASE WHEN schedule.catch_up = 0 THEN '{}'
                          ELSE coalesce(s.missed_fires[greatest(1, cardinality(s.missed_fires) - schedule.catch_up + 1):], '{}') END,
      updated_at = now()
  WHERE s.name = schedule.name
    AND (s.cron, s.kind, s.payload, s.queue, s.tenant, s.time_zone, s.priority, s.max_attempts, s.catch_up,
         s.allow_overlap, s.jitter, s.next_fire_at)
        IS DISTINCT FROM (v_cron, schedule.kind, schedule.payload, schedule.queue, schedule.tenant, schedule.time_zone,
         coalesce(schedule.priority, 0), schedule.max_attempts, schedule.catch_up, schedule.allow_overlap,
         schedule.jitter, v_next);
  IF FOUND THEN
    PERFORM pgtask.notify_schedules();
  END IF;
  RETURN v_next;
END
$$;

-- Removes a schedule. Tasks it enqueued stay. Returns whether it existed.
CREATE OR REPLACE FUNCTION pgtask.unschedule(name text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  DELETE FROM pgtask.schedule s WHERE s.name = unschedule.name;
  IF FOUND THEN
    PERFORM pgtask.notify_schedules();
    RETURN true;
  END IF;
  RETURN false;
END
$$;

-- Pauses a schedule: it fires nothing until resumed. Returns whether it exists.
CREATE OR REPLACE FUNCTION pgtask.pause_schedule(name text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  UPDATE pgtask.schedule s SET paused = true, updated_at = now() WHERE s.name = pause_schedule.name AND NOT s.paused;
  IF FOUND THEN
    PERFORM pgtask.notify_schedules();
  END IF;
  RETURN EXISTS (SELECT 1 FROM pgtask.schedule s WHERE s.name = pause_schedule.name);
END
$$;

-- Resumes a paused schedule: it fires again from its next fire time after now. The fires that fell
-- while it was paused are not made up (that is what pausing it asked for; missed fires of a paused
-- queue are a different matter, see pgtask.schedule's catch_up). Returns whether it exists.
CREATE OR REPLACE FUNCTION pgtask.resume_schedule(name text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_s pgtask.schedule;
  v_next timestamptz;
BEGIN
  SELECT * INTO v_s FROM pgtask.schedule s WHERE s.name = resume_schedule.name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_s.paused THEN
    v_next := CASE WHEN v_s.next_fire_at > now() THEN v_s.next_fire_at
                   ELSE pgtask.cron_next(pgtask.cron_parse(v_s.cron), now(), v_s.time_zone) END;
    UPDATE pgtask.schedule s
    SET paused = false, missed_fires = '{}', updated_at = now(), next_fire_at = v_next,
        next_due_at = CASE WHEN v_next = s.next_fire_at THEN s.next_due_at ELSE v_next + random() * s.jitter END
    WHERE s.name = v_s.name;
    PERFORM pgtask.notify_schedules();
  END IF;
  RETURN true;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- Firing
-- ---------------------------------------------------------------------------------------------

-- How late a fire may be enqueued and still count as on time (beyond it, it is missed).
CREATE OR REPLACE FUNCTION pgtask.schedule_grace() RETURNS interval
LANGUAGE sql IMMUTABLE
AS $$ SELECT interval '1 minute' $$;

-- Fires every schedule that is due (next_due_at passed, not paused), and every schedule holding
-- missed fires to catch up whose queue is no longer paused. Each schedule row is locked (SKIP
-- LOCKED: a schedule another worker is firing right now is left to it) and, in this one
-- transaction, its tasks are inserted and its next fire time advanced: a worker that dies before
-- the commit fires nothing, and the next caller fires it; one that commits has advanced it, so
-- no one fires that instant again. The unique index task_schedule_fire_idx refuses a second task
-- for one (schedule, fire instant) whatever happens.
--
-- For each schedule: the due fire instants are those from next_fire_at to now. The latest is on
-- time if it is less than pgtask.schedule_grace() old and its queue is not paused; the others are
-- missed. Missed fires are dropped (catch_up = 0) or kept, the latest catch_up of them, and
-- enqueued as soon as the queue is not paused. The on-time fire is skipped (counted in
-- overlapped) when allow_overlap is false and the schedule's previous task is unfinished. Each
-- task runs at once (run_at = now()): the jitter delays the fire itself (next_due_at).
--
-- Returns the number of tasks enqueued and how long until the next schedule is due (NULL: no
-- schedule is), measured on the database clock after the firing.
CREATE OR REPLACE FUNCTION pgtask.fire_schedules(OUT fired integer, OUT next_due_in interval)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_s pgtask.schedule;
  v_spec pgtask.cron_spec;
  v_due timestamptz[];
  v_missed timestamptz[];
  v_pending timestamptz[];
  v_keep integer;
  v_dropped timestamptz;
  v_fires timestamptz[];
  v_on_time timestamptz;
  v_paused boolean;
  v_at timestamptz;
  v_id bigint;
  v_last_id bigint;
  v_last_at timestamptz;
  v_tenant_id integer;
  v_n integer;
  v_overlapped integer;
  v_next timestamptz;
BEGIN
  fired := 0;
  FOR v_s IN
    SELECT * FROM pgtask.schedule s
    WHERE NOT s.paused
      AND (s.next_due_at <= now()
           OR (cardinality(s.missed_fires) > 0 AND NOT EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = s.queue)))
    ORDER BY s.next_due_at
    FOR UPDATE SKIP LOCKED
  LOOP
    v_spec := pgtask.cron_parse(v_s.cron);
    v_paused := EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = v_s.queue);
    v_on_time := NULL;
    v_missed := '{}';
    IF v_s.next_due_at <= now() THEN
      -- the on-time fire, the catch_up missed fires before it, and one more to see if any is dropped
      v_due := pgtask.cron_latest(v_spec, v_s.time_zone, v_s.next_fire_at, now(), v_s.catch_up + 2);
      IF cardinality(v_due) > 0 THEN
        IF NOT v_paused AND now() - v_due[cardinality(v_due)] < pgtask.schedule_grace() THEN
          v_on_time := v_due[cardinality(v_due)];
          v_missed := v_due[1:cardinality(v_due) - 1];
        ELSE
          v_missed := v_due;
        END IF;
      END IF;
      v_next := pgtask.cron_next(v_spec, now(), v_s.time_zone);
    ELSE
      v_next := v_s.next_fire_at;
    END IF;

    -- keep the latest catch_up missed fires; the older ones are dropped
    v_missed := v_s.missed_fires || v_missed;
    v_keep := greatest(0, cardinality(v_missed) - v_s.catch_up);
    v_pending := v_missed[v_keep + 1:];
    v_dropped := CASE WHEN v_keep > 0 THEN v_missed[v_keep] END;
    v_fires := '{}';
    IF NOT v_paused THEN
      v_fires := v_pending;
      v_pending := '{}';
    END IF;
    v_overlapped := 0;
    IF v_on_time IS NOT NULL THEN
      IF NOT v_s.allow_overlap AND EXISTS (
           SELECT 1 FROM pgtask.task t
           WHERE t.id = v_s.last_task_id AND t.state IN ('available', 'retryable', 'running')) THEN
        v_overlapped := 1;
      ELSE
        v_fires := v_fires || v_on_time;
      END IF;
    END IF;

    v_last_id := v_s.last_task_id;
    v_last_at := v_s.last_fire_at;
    v_n := 0;
    IF cardinality(v_fires) > 0 AND v_s.tenant IS NOT NULL THEN
      v_tenant_id := pgtask.tenant_id(v_s.tenant);
    END IF;
    FOREACH v_at IN ARRAY v_fires LOOP
      INSERT INTO pgtask.task (kind, payload, queue, tenant_id, priority, max_attempts, schedule_name, schedule_fire_at)
      VALUES (v_s.kind, v_s.payload, v_s.queue, v_tenant_id, v_s.priority, v_s.max_attempts, v_s.name, v_at)
      ON CONFLICT (schedule_name, schedule_fire_at) WHERE schedule_name IS NOT NULL DO NOTHING
      RETURNING id INTO v_id;
      IF v_id IS NOT NULL THEN
        v_n := v_n + 1;
        v_last_id := v_id;
        v_last_at := v_at;
      END IF;
    END LOOP;
    fired := fired + v_n;

    UPDATE pgtask.schedule s
    SET next_fire_at = coalesce(v_next, 'infinity'),
        next_due_at = CASE WHEN v_next IS NULL THEN 'infinity'
                           WHEN v_next = s.next_fire_at THEN s.next_due_at
                           ELSE v_next + random() * s.jitter END,
        missed_fires = v_pending,
        last_fire_at = v_last_at,
        last_task_id = v_last_id,
        fired = s.fired + v_n,
        overlapped = s.overlapped + v_overlapped,
        last_missed_at = coalesce(greatest(s.last_missed_at, v_dropped), s.last_missed_at)
    WHERE s.name = v_s.name;
  END LOOP;
  next_due_in := pgtask.schedule_next_due_in();
END
$$;

-- How long until the next schedule is due, on the database clock (zero or less: due now; NULL: no
-- schedule is active). The workers' one read between fires.
CREATE OR REPLACE FUNCTION pgtask.schedule_next_due_in() RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT least(
    (SELECT min(s.next_due_at) FROM pgtask.schedule s WHERE NOT s.paused),
    (SELECT now() FROM pgtask.schedule s
     WHERE NOT s.paused AND cardinality(s.missed_fires) > 0
       AND NOT EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = s.queue)
     LIMIT 1)) - clock_timestamp()
$$;

-- A resumed queue: schedules holding missed fires of it are due at once.
CREATE OR REPLACE FUNCTION pgtask.paused_queue_after_delete_schedules() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pgtask.schedule s WHERE s.queue = OLD.queue AND cardinality(s.missed_fires) > 0) THEN
    PERFORM pgtask.notify_schedules();
  END IF;
  RETURN NULL;
END
$$;

-- Quiet for the rest of this migration's transaction: a first migration's DROP TRIGGER IF EXISTS
-- would otherwise send a "does not exist, skipping" notice that Flyway logs at INFO.
SET LOCAL client_min_messages = warning;
DROP TRIGGER IF EXISTS paused_queue_after_delete_schedules ON pgtask.paused_queue;
CREATE TRIGGER paused_queue_after_delete_schedules
AFTER DELETE ON pgtask.paused_queue
FOR EACH ROW EXECUTE FUNCTION pgtask.paused_queue_after_delete_schedules();

-- ---------------------------------------------------------------------------------------------
-- The view
-- ---------------------------------------------------------------------------------------------

-- Every schedule with its next fire time and its last task. last_task_state as pgtask.tasks shows
-- it (NULL once retention deleted the task). missed_pending: missed fires waiting for their queue
-- to be resumed.
CREATE OR REPLACE VIEW pgtask.schedules AS
SELECT s.name, s.cron, s.kind, s.queue, s.tenant, s.time_zone, s.paused,
       CASE WHEN s.next_fire_at = 'infinity' THEN NULL ELSE s.next_fire_at END AS next_fire_at,
       s.last_fire_at, s.last_task_id, t.state AS last_task_state,
       s.payload, s.catch_up, s.allow_overlap, s.jitter, s.priority, s.max_attempts,
       s.fired, s.overlapped, s.last_missed_at, cardinality(s.missed_fires) AS missed_pending,
       EXISTS (SELECT 1 FROM pgtask.paused_queue p WHERE p.queue = s.queue) AS queue_paused,
       s.created_at, s.updated_at
FROM pgtask.schedule s
LEFT JOIN pgtask.tasks t ON t.id = s.last_task_id;

-- ---------------------------------------------------------------------------------------------
-- Privileges: the owner's, like every operation on tasks. Nothing for PUBLIC or producers
-- (R__06_privileges revokes PUBLIC's defaults in the whole schema; this says it for these objects
-- too, so that re-applying this file alone leaves them closed).
-- ---------------------------------------------------------------------------------------------
REVOKE ALL ON pgtask.schedule, pgtask.schedules FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION
  pgtask.cron_field(text, text, integer, integer, text[], integer),
  pgtask.cron_macro(text),
  pgtask.cron_parse(text),
  pgtask.raise_schedule_error(text, text),
  pgtask.cron_next(pgtask.cron_spec, timestamptz, text),
  pgtask.cron_latest(pgtask.cron_spec, text, timestamptz, timestamptz, integer),
  pgtask.cron_fire_times(text, text, timestamptz, integer),
  pgtask.check_time_zone(text),
  pgtask.notify_schedules(),
  pgtask.schedule(text, text, text, jsonb, text, text, text, integer, boolean, interval, integer, integer),
  pgtask.unschedule(text),
  pgtask.pause_schedule(text),
  pgtask.resume_schedule(text),
  pgtask.schedule_grace(),
  pgtask.fire_schedules(),
  pgtask.schedule_next_due_in(),
  pgtask.paused_queue_after_delete_schedules()
FROM PUBLIC;
