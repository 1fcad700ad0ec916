-- Schedules: recurring tasks declared by name (pgtask.schedule), fired by the workers through
-- pgtask.fire_schedules. Private like every table: use the functions and the view pgtask.schedules.

-- A cron expression parsed once (at declaration and when a schedule fires): the values each field
-- allows, and how day-of-month and day-of-week combine. 'either': five-field (Unix) expressions
-- with both day fields restricted fire on a day matching either; six-field (Spring) expressions
-- need both.
CREATE TYPE pgtask.cron_spec AS (
  seconds      integer[],
  minutes      integer[],
  hours        integer[],
  days         integer[],   -- 1..31
  months       integer[],   -- 1..12
  weekdays     integer[],   -- 0..6, 0 = Sunday
  days_any     boolean,     -- day-of-month was * or ?
  weekdays_any boolean,     -- day-of-week was * or ?
  either       boolean      -- both restricted: a day matching either field fires (Unix)
);

CREATE TABLE pgtask.schedule (
  name          text        PRIMARY KEY,
  cron          text        NOT NULL,
  kind          text        NOT NULL,
  payload       jsonb       NOT NULL DEFAULT '{}',
  queue         text        NOT NULL DEFAULT 'default',
  tenant        text,
  time_zone     text        NOT NULL DEFAULT 'UTC',
  priority      integer     NOT NULL DEFAULT 0,
  max_attempts  integer     NOT NULL DEFAULT 25,
  -- missed fires (no worker up, or the queue paused at the fire time): 0 = skip them; N > 0 =
  -- enqueue at most the N latest of them
  catch_up      integer     NOT NULL DEFAULT 0,
  -- false: a fire is skipped while the schedule's previous task is unfinished
  allow_overlap boolean     NOT NULL DEFAULT false,
  -- each fire is enqueued up to this much after its fire time (a random delay drawn per fire)
  jitter        interval    NOT NULL DEFAULT '0',
  paused        boolean     NOT NULL DEFAULT false,
  -- the next fire instant by the cron expression (the identity of the task it will make), and
  -- when it is due: next_fire_at plus that fire's jitter
  next_fire_at  timestamptz NOT NULL,
  next_due_at   timestamptz NOT NULL,
  -- missed fires waiting to be caught up (their queue was paused), oldest first, at most catch_up
  missed_fires  timestamptz[] NOT NULL DEFAULT '{}',
  last_fire_at  timestamptz,               -- the fire instant of the last task it enqueued
  last_task_id  bigint,                    -- pgtask.task(id); no FK: retention deletes tasks
  fired         bigint      NOT NULL DEFAULT 0,   -- tasks it enqueued
  last_missed_at timestamptz,              -- the latest fire instant dropped as missed
  overlapped    bigint      NOT NULL DEFAULT 0,   -- fires skipped: the previous task was unfinished
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT schedule_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
  CONSTRAINT schedule_catch_up_range CHECK (catch_up BETWEEN 0 AND 1000),
  CONSTRAINT schedule_jitter_range CHECK (jitter >= interval '0' AND jitter <= interval '1 day'),
  CONSTRAINT schedule_max_attempts_positive CHECK (max_attempts >= 1)
);

-- The scheduler's read: the earliest due time of the schedules that are not paused.
CREATE INDEX schedule_due_idx ON pgtask.schedule (next_due_at) WHERE NOT paused;

-- A task made by a schedule: its schedule and fire instant. One task per (schedule, fire instant),
-- ever, whatever the workers do: the unique index is the database's guarantee, beside the
-- advance of next_fire_at under the schedule's row lock in the same transaction.
ALTER TABLE pgtask.task ADD COLUMN schedule_name text, ADD COLUMN schedule_fire_at timestamptz;
CREATE UNIQUE INDEX task_schedule_fire_idx ON pgtask.task (schedule_name, schedule_fire_at)
  WHERE schedule_name IS NOT NULL;
