-- Flow control (docs/how-it-works.md, "Limits"): durable limits per tenant, queue or kind, set by
-- the owner through pgtask.set_limit and pgtask.clear_limit (db/R__05d_limits.sql).
--
-- A concurrency limit of N is N transaction-scoped advisory-lock slots, taken in the task's own
-- transaction: a slot lives exactly as long as the transaction that runs the task, so a dead,
-- frozen or partitioned worker frees it with its backend, and the count cannot drift. Nothing
-- here stores a slot. The keys, with ns = pgtask.settings.lock_namespace:
--   tenant slot 0          (ns,            tenant id)     the tenant lock every task with a tenant takes
--   tenant slot i, 1..1023 (ns + i,        tenant id)
--   queue/kind slot i      (ns + 1024 + i, flow_limit.id) i in 0..1023
-- (classids wrap around at 2^31 like pg_locks' unsigned classid does). Applications must not take
-- advisory locks in the classids ns .. ns + 2047.
CREATE TABLE pgtask.flow_limit (
  -- the second key of a queue's or kind's slots: an identity, never reused
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  scope       text    NOT NULL CONSTRAINT limit_scope CHECK (scope IN ('tenant', 'queue', 'kind')),
  key         text    NOT NULL CONSTRAINT limit_key_length CHECK (char_length(key) BETWEEN 1 AND 255),
  -- scope 'tenant': pgtask.tenant(id), registered by set_limit
  tenant_id   integer,
  max_running integer CONSTRAINT limit_max_running CHECK (max_running BETWEEN 1 AND 1024),
  per_second  numeric CONSTRAINT limit_per_second CHECK (per_second > 0 AND per_second <= 1000000),
  burst       integer CONSTRAINT limit_burst CHECK (burst BETWEEN 1 AND 1000000),
  weight      numeric CONSTRAINT limit_weight CHECK (weight > 0 AND weight <= 1000),
  updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_by  name        NOT NULL DEFAULT session_user,
  CONSTRAINT limit_scope_key UNIQUE (scope, key),
  CONSTRAINT limit_tenant_id CHECK ((scope = 'tenant') = (tenant_id IS NOT NULL)),
  CONSTRAINT limit_burst_needs_rate CHECK (burst IS NULL OR per_second IS NOT NULL),
  CONSTRAINT limit_weight_tenant_only CHECK (weight IS NULL OR scope = 'tenant'),
  CONSTRAINT limit_not_empty CHECK (num_nonnulls(max_running, per_second, weight) > 0)
);
CREATE UNIQUE INDEX flow_limit_tenant_idx ON pgtask.flow_limit (tenant_id) WHERE scope = 'tenant';

-- The state of a rate limit (per_second, burst): GCRA's theoretical arrival time, on the database
-- clock. A start at t is admitted when t >= tat - (burst - 1) / per_second, and then tat becomes
-- max(tat, t) + 1 / per_second: at most burst + per_second * w starts in any window of w seconds,
-- with no window to keep. Apart from the limit's row so that the claim's update touches a tiny row
-- with no index on what it changes (HOT updates), locked by one claim at a time for milliseconds
-- (others pass over it, SKIP LOCKED), never for a task's length.
CREATE TABLE pgtask.limit_bucket (
  limit_id integer PRIMARY KEY REFERENCES pgtask.flow_limit (id) ON DELETE CASCADE,
  tat      timestamptz NOT NULL DEFAULT '-infinity'
) WITH (fillfactor = 50);
