-- 0043: raced copies (issue 34, defect 6).
--
-- A raced copy's end is recorded. A raced job without a winner is
-- cancelled or evicted by cancelling every copy, and its quota goes back
-- only when every copy that may exist has been reported ended or absent
-- (db/batch.c, the invariant); before, the first copy's end (even its
-- CANCELLATION_IN_PROGRESS) ended the job while the others could still
-- run. ended_at: when Batch reported this copy CANCELLED, SUCCEEDED,
-- FAILED, DELETION_IN_PROGRESS or absent.
ALTER TABLE batch_copies ADD COLUMN ended_at timestamptz;

-- A raced job's copies are created at once (README: one Batch job per
-- allowed region at once). A job's rows go out in (next_at, id) order and
-- none is claimed while an earlier one of the job is in the outbox, so
-- that a cancel never overtakes its create; the copies' creates, one
-- attempt's, were held behind each other by the same rule and reached
-- Batch one after another. An earlier create of the same attempt no longer
-- holds a create back: every other row still waits for all earlier ones
-- (a cancel for every create before it, a next attempt's create for the
-- previous attempt's cancel).
--
-- A lease is live while its holder renews it (claimed_until ahead; the
-- dispatcher renews the leases of its calls under way, db/batch.c
-- db_batch_renew), not while a backend with its claimed_pid exists: a
-- dispatcher that reconnected has another pid, and looked dead while its
-- call was at Batch (its row retaken, its create withdrawn as if no Batch
-- job could exist); a dead dispatcher's pid reused by a new session looked
-- alive until the lease ran out. claimed_pid stays, for diagnosis only.
CREATE OR REPLACE FUNCTION batch_ops_claim(skip text[], claimer text,
                                           lease_s int, lim int,
                                           lapsed boolean)
RETURNS TABLE (id bigint, job_id text, attempt int, op text, region text,
               batch_job_id text, request_id uuid, tries int, team text,
               queue text, flavor text, cost_center text,
               max_run_duration_s bigint, spec json, flavor_spec json,
               job_state text, job_attempt int, settled boolean,
               age_s numeric)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $$
#variable_conflict use_column
DECLARE
  ids bigint[];
BEGIN
  IF lapsed THEN
    ids := ARRAY(SELECT b.id FROM batch_ops b
                 WHERE b.claimed_by IS NOT NULL
                   AND b.claimed_until < clock_timestamp()
                   AND b.next_at <= now() AND b.region <> ALL (skip)
                   AND NOT EXISTS (SELECT 1 FROM batch_ops p
                                   WHERE p.job_id = b.job_id
                                     AND (p.next_at < b.next_at
                                          OR (p.next_at = b.next_at
                                              AND p.id < b.id))
                                     AND NOT (b.op = 'create'
                                              AND p.op = 'create'
                                              AND p.attempt = b.attempt)
                                   OFFSET 0)
                 ORDER BY b.next_at LIMIT lim FOR UPDATE SKIP LOCKED);
  ELSE
    ids := ARRAY(SELECT b.id FROM batch_ops b
                 WHERE b.claimed_by IS NULL
                   AND b.next_at <= now() AND b.region <> ALL (skip)
                   AND NOT EXISTS (SELECT 1 FROM batch_ops p
                                   WHERE p.job_id = b.job_id
                                     AND (p.next_at < b.next_at
                                          OR (p.next_at = b.next_at
                                              AND p.id < b.id))
                                     AND NOT (b.op = 'create'
                                              AND p.op = 'create'
                                              AND p.attempt = b.attempt)
                                   OFFSET 0)
                 ORDER BY b.next_at LIMIT lim FOR UPDATE SKIP LOCKED);
  END IF;
  RETURN QUERY
  WITH c AS (UPDATE batch_ops b SET claimed_by = claimer,
                    claimed_pid = pg_backend_pid(),
                    claimed_until = clock_timestamp()
                                    + lease_s * interval '1 second'
             WHERE b.id = ANY (ids)
             RETURNING b.id, b.job_id, b.attempt, b.op, b.region,
                       b.batch_job_id, b.request_id, b.tries, b.created_at)
  SELECT c.id, c.job_id, c.attempt, c.op, c.region, c.batch_job_id,
         c.request_id, c.tries, j.team, j.queue, coalesce(j.flavor, ''),
         coalesce(t.spec->>'cost_center', ''), j.max_run_duration_s, j.spec,
         coalesce(f.spec, '{}'), j.state::text, j.attempt,
         j.batch_job_name IS NOT NULL OR j.cancel_requested,
         extract(epoch FROM clock_timestamp() - c.created_at)
  FROM c JOIN jobs j ON j.id = c.job_id
  LEFT JOIN flavors f ON f.name = j.flavor
  LEFT JOIN teams t ON t.name = j.team;
END
$$;
