-- Vacuuming the task table when autovacuum does not (it is off, or too slow for a busy queue):
-- workers take turns through this timestamp. VACUUM cannot run inside a transaction, so the turn
-- is claimed by a short UPDATE (the one worker whose UPDATE changes the row goes ahead) and the
-- VACUUM follows in autocommit. No advisory lock outlives a transaction.
ALTER TABLE pgtask.settings ADD COLUMN vacuum_turn_at timestamptz NOT NULL DEFAULT '-infinity';
