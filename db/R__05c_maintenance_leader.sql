-- The elected maintenance leader (see V5__maintenance_leader.sql and docs/how-it-works.md).

-- Takes or renews the maintenance lease for p_worker for p_lease_ms milliseconds of the database's
-- clock; returns the term when p_worker holds the lease now, NULL when another worker does. One
-- UPDATE: a caller that does not hold an unexpired lease changes nothing and waits for nothing
-- (the row it reads is not locked unless the lease looks expired). Concurrent takers of an expired
-- lease queue on the row lock; the first wins and the others re-check the new row and get NULL.
-- A new term starts when the holder changes or the holder's own lease had expired. With
-- p_heartbeat, the same transaction refreshes the worker's heartbeat (pgtask.worker.last_seen);
-- p_registered tells whether the worker's row was there (false: the caller registers again).
CREATE OR REPLACE FUNCTION pgtask.maintenance_turn(p_worker text, p_lease_ms integer, p_heartbeat boolean)
RETURNS TABLE (term bigint, registered boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
BEGIN
  IF p_worker IS NULL OR p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    RAISE EXCEPTION 'pgtask.maintenance_turn: worker must not be null and the lease must be positive (got %, % ms)',
      p_worker, p_lease_ms USING ERRCODE = '22023';
  END IF;
  IF p_heartbeat THEN
    UPDATE pgtask.worker w SET last_seen = now() WHERE w.id = p_worker;
    registered := FOUND;
  END IF;
  UPDATE pgtask.maintenance_lease l
     SET term = CASE WHEN l.holder IS DISTINCT FROM p_worker OR l.lease_until < v_now THEN l.term + 1 ELSE l.term END,
         acquired_at = CASE WHEN l.holder IS DISTINCT FROM p_worker OR l.lease_until < v_now THEN v_now ELSE l.acquired_at END,
         holder = p_worker,
         renewed_at = v_now,
         lease_until = v_now + make_interval(secs => p_lease_ms / 1000.0)
   WHERE l.id AND (l.holder = p_worker OR l.lease_until < v_now)
  RETURNING l.term INTO term;
  IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM pgtask.maintenance_lease) THEN
    -- the row was deleted by hand: the first caller puts it back, holding it
    INSERT INTO pgtask.maintenance_lease AS l (id, holder, term, acquired_at, renewed_at, lease_until)
    VALUES (true, p_worker, 1, v_now, v_now, v_now + make_interval(secs => p_lease_ms / 1000.0))
    ON CONFLICT (id) DO NOTHING
    RETURNING l.term INTO term;
  END IF;
  RETURN NEXT;
END
$$;

-- Gives the lease up at once (a worker stopping): another worker takes it at its next heartbeat
-- instead of after the lease expires. Returns whether p_worker held it.
CREATE OR REPLACE FUNCTION pgtask.release_maintenance_lease(p_worker text) RETURNS boolean
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
  WITH released AS (
    UPDATE pgtask.maintenance_lease l SET lease_until = '-infinity'
    WHERE l.holder = p_worker AND l.lease_until >= clock_timestamp()
    RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM released)
$$;

-- Who leads maintenance: the holder of the lease (or the last one), its host and pid while it is
-- registered, since when (this term), its last renewal, and whether the lease is live (false:
-- expired or released; a worker takes it at its next heartbeat).
CREATE OR REPLACE VIEW pgtask.maintenance_leader AS
SELECT l.holder AS worker, w.host, w.pid, l.term, l.acquired_at, l.renewed_at, l.lease_until,
       l.lease_until > clock_timestamp() AS live,
       greatest(clock_timestamp() - l.renewed_at, interval '0') AS renewed_ago
FROM pgtask.maintenance_lease l
LEFT JOIN pgtask.worker w ON w.id = l.holder;
