-- 0006: what makes submissions and admission cycles cheap with thousands of
-- pending jobs.
--
-- A job's queue positions count the pending jobs ahead of it in its team
-- queue and in its cluster queue; a queue's pending list pages through them
-- in admission order. Without these partial indexes both read every active
-- job of the cluster queue (jobs_active) or the whole team (jobs_team_seq)
-- and check each row's state in the heap, so a submission's cost grew with
-- the backlog.
CREATE INDEX jobs_pending_queue ON jobs (team, queue, priority DESC, created_at, seq)
    WHERE state = 'PENDING';
CREATE INDEX jobs_pending_cq ON jobs (cluster_queue, priority DESC, created_at, seq)
    WHERE state = 'PENDING';

-- Every admission cycle reads the locations of every pending job; taking
-- them out of the json spec parsed the whole spec of each row each cycle.
ALTER TABLE jobs ADD COLUMN locations text
    GENERATED ALWAYS AS ((spec -> 'locations')::text) STORED;
