-- The maintenance lease: one row, naming the worker that runs the cluster's maintenance passes
-- (rescue, tenant repair, retention, vacuum, unhandled-kind warnings) until lease_until, on the
-- database's clock. Workers take or renew it with pgtask.maintenance_turn (one UPDATE: it changes
-- the row only when the caller holds the lease or the lease has expired), at each heartbeat and at
-- the start of each pass's transaction; a pass runs only when that statement returned the lease,
-- and the row stays locked by the pass's transaction until it ends. A session-level advisory lock
-- would leak through pools and vanish with a frozen connection's session only when the server
-- notices; a row with an expiry is visible, survives nothing it should not, and needs no session.
CREATE TABLE pgtask.maintenance_lease (
  id          boolean     PRIMARY KEY DEFAULT true CHECK (id),  -- one row
  holder      text,                                  -- worker id of the last holder (NULL: never held)
  term        bigint      NOT NULL DEFAULT 0,        -- +1 each time the lease is taken (not renewed)
  acquired_at timestamptz,                           -- start of the current term
  renewed_at  timestamptz,                           -- last renewal by the holder
  lease_until timestamptz NOT NULL DEFAULT '-infinity' -- held until then; released at shutdown
);

INSERT INTO pgtask.maintenance_lease DEFAULT VALUES;
