-- 0018: what the Flex Start step left of jobs whose cancel was pending
-- (issue 22). Before this release a job whose cancel had not reached
-- Batch yet was moved on after max_wait_s: failover created its next
-- attempt, which nothing then cancelled (it ran and was billed while the
-- job showed QUEUED); race mode backed it off to PENDING, and admitted it
-- again with creates that were dropped, so it held its quota ADMITTED with
-- no Batch job. Today no statement moves such a job (db/batch.c); these
-- two finish the cancels the users asked for.

-- A PENDING job has no Batch job to wait for: its cancel is complete.
WITH u AS (
    UPDATE jobs SET state = 'CANCELLED', reason = 'CancelledByUser',
           finished_at = now(), updated_at = now()
     WHERE state = 'PENDING' AND cancel_requested
 RETURNING id, team, attempt)
INSERT INTO job_events (job_id, team, from_state, to_state, reason, attempt,
                        message)
SELECT id, team, 'PENDING', 'CANCELLED', 'CancelledByUser', attempt,
       'its cancel was pending when it was backed off (migration 0018)'
  FROM u;

-- An active job with its cancel pending and nothing in the outbox: cancel
-- the Batch jobs of its current attempt (as db/batch.c sql_request_cancel:
-- the one it names, else its raced copies, else the one id). A Batch job
-- that does not exist answers 404, which completes the cancel.
INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id)
SELECT j.id, j.attempt, 'cancel', x.region, x.batch_job_id
  FROM jobs j
 CROSS JOIN LATERAL (
       SELECT j.location AS region,
              regexp_replace(j.batch_job_name, '^.*/', '') AS batch_job_id
        WHERE j.batch_job_name IS NOT NULL
       UNION ALL
       SELECT c.region, c.batch_job_id FROM batch_copies c
        WHERE j.batch_job_name IS NULL AND c.job_id = j.id
          AND c.attempt = j.attempt
       UNION ALL
       SELECT j.location, 'gpugate-' || j.id || '-a' || j.attempt
        WHERE j.batch_job_name IS NULL AND NOT EXISTS (
              SELECT 1 FROM batch_copies c
               WHERE c.job_id = j.id AND c.attempt = j.attempt)) x
 WHERE j.cancel_requested AND j.location IS NOT NULL
   AND j.state IN ('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')
   AND NOT EXISTS (SELECT 1 FROM batch_ops o WHERE o.job_id = j.id)
    ON CONFLICT DO NOTHING;
