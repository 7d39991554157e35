-- 0028: a dispatcher's claim keeps one plan whatever the outbox's
-- statistics say (issue 22: dispatch at a real Batch's rate).
--
-- A dispatcher looks at the outbox every half second while it is empty,
-- and its prepared claim took a generic plan after five runs, made for an
-- empty batch_ops: sequential scans, the "no earlier operation of the same
-- job" test a nested loop over the whole table for each row, and the
-- update joined to the claimed ids by another pass over the table. When
-- admissions then filled the outbox, every claim was quadratic in its rows
-- until autovacuum analyzed the table and the plan was made again: 875 ms
-- a claim with 2,000 rows, ~20 s with 10,000; in the bench's release of
-- 2,000 jobs the first claims took 165-300 ms, and the regions' creates
-- ran below their budget for the first half second. A plan made for the
-- rows at hand did no better without statistics (150 ms: bitmap scans and
-- a sort of every due row).
--
-- The claim is a function whose planner settings leave one shape: the
-- claimable rows in next_at order from batch_ops_unclaimed (0027) until
-- the limit, each checked by a probe of its job's operations (a subquery
-- kept per row by OFFSET 0, whose only index condition is the job's id:
-- turned into an anti-join, the probe had been a pass over the whole
-- index for each row, 96,000 rows read for a claim of 32 with 3,000 in
-- the outbox); the claimed rows updated by their ids (= ANY, an index
-- condition). With 3,000 or 10,000 rows in the outbox, after a plan made
-- on an empty table: a claim of 32 reads ~100 rows of batch_ops, 0.5-1.2
-- ms (tests/integration/it_cancel.c, claim_reads_do_not_grow_with_the_
-- outbox: 9,006,000 rows before). The look for lapsed leases (about once
-- a second) passes over the rows as before, with the same update.
--
-- The function returns each claimed row with its job, read by its own
-- last statement: its statements see rows committed after the calling
-- statement began, and a caller that joined the jobs itself read them as
-- of its start. An admission committed in between gave a create whose job
-- was still PENDING to that reading, so the claim dropped it as stale and
-- the job waited with no create (in loaded test runs: 3 of 3,000 jobs
-- never created in it_footprint's budget case; one job's create 359 s
-- late in the soak).
CREATE FUNCTION batch_ops_claim(skip text[], claimer text, lease_s int,
                                lim int, lapsed boolean)
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
  -- none is claimed while an earlier operation of the same job is in the
  -- outbox, claimed or not (db/batch.c: a cancel never overtakes the
  -- create it cancels)
  IF lapsed THEN
    ids := ARRAY(SELECT b.id FROM batch_ops b
                 WHERE b.claimed_by IS NOT NULL
                   AND (b.claimed_until < clock_timestamp()
                        OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                                       WHERE a.pid = b.claimed_pid))
                   AND b.next_at <= now() AND b.region <> ALL (skip)
                   AND NOT EXISTS (SELECT 1 FROM batch_ops p
                                   WHERE p.job_id = b.job_id
                                     AND (p.next_at < b.next_at
                                          OR (p.next_at = b.next_at
                                              AND p.id < b.id))
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
                                   OFFSET 0)
                 ORDER BY b.next_at LIMIT lim FOR UPDATE SKIP LOCKED);
  END IF;
  -- the claimed rows with their jobs as this statement sees them: a
  -- caller joining the result read the jobs as of its own start, before
  -- rows this function saw had committed (an admission's job still
  -- PENDING beside its create), and dropped the create as stale
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
