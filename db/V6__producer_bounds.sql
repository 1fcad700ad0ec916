-- Bounds the owner sets on what a producer role may choose at enqueue (pgtask.set_producer_bounds
-- writes them; pgtask.enqueue and pgtask.enqueue_batch read them; pgtask.producer_bounds shows
-- them). A row bounds the role it names and every role that inherits that role's privileges: a
-- priority outside [min_priority, max_priority] (NULL: no bound on that side), or with past_run_at
-- false a run_at before now(), is refused with a named error and nothing is stored. No row: no
-- bounds. Keyed by name, not oid, so that a dump and restore (which gives roles new oids) keeps
-- each bound with its role; renaming a role leaves its bounds under the old name. Private like the
-- other tables.
CREATE TABLE pgtask.producer_bound (
  role_name    name        PRIMARY KEY,
  min_priority integer,                              -- lowest priority the role may set (NULL: none)
  max_priority integer,                              -- highest priority the role may set (NULL: none)
  past_run_at  boolean     NOT NULL DEFAULT true,    -- false: run_at must not be before now()
  set_at       timestamptz NOT NULL DEFAULT now(),
  set_by       name        NOT NULL DEFAULT current_user,
  CONSTRAINT producer_bound_priority_range CHECK (min_priority <= max_priority),
  -- a row that bounds nothing is no row (pgtask.set_producer_bounds deletes it)
  CONSTRAINT producer_bound_bounds_something CHECK (min_priority IS NOT NULL OR max_priority IS NOT NULL OR NOT past_run_at)
);

-- Whether pgtask.producer_bound has a row, kept by its trigger (R__03a_producer_bounds.sql). The
-- enqueue functions read it with the payload limit, in the one read of this row they make anyway:
-- where the owner set no bounds, they cost enqueue nothing.
ALTER TABLE pgtask.settings ADD COLUMN producer_bounds boolean NOT NULL DEFAULT false;
