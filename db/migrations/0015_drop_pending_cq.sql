-- 0015: jobs_pending_cq (0006) served the count of the pending jobs ahead
-- of a job in its cluster queue. Positions now come from the admission
-- leader's memory (0007's job_positions) and no statement reads pending
-- jobs by cluster queue, so the index only cost every submission and
-- every requeue one more insertion.
DROP INDEX jobs_pending_cq;
