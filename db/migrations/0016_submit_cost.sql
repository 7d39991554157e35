-- 0016: what a submission and its admission cost PostgreSQL, per job
-- (perf of the backends under bench/http.sh's submit run: executor set-up,
-- index insertions, after-trigger checks and the generated column were
-- most of it). Every write of a jobs row that is not a HOT update inserts
-- into every index of the table, and the admission of a job is such a
-- write (its state changes).
--
-- locations: a stored generated column is computed again on every UPDATE
-- of the row, whatever the update sets, which parsed the job's whole json
-- spec on every admission, eviction and status update. The spec never
-- changes after the INSERT, so the submission now writes the column with
-- the job (db/jobs.c), and the rows already there keep their values.
ALTER TABLE jobs ALTER COLUMN locations DROP EXPRESSION;

-- seq (a bigserial) is unique by construction, and every statement that
-- looks a job up by seq names its team too (jobs_team_seq): the unique
-- index only cost each insertion and each non-HOT update one more.
ALTER TABLE jobs DROP CONSTRAINT jobs_seq_key;

-- One partial index over the active jobs instead of two: the full read of
-- the active jobs (the leader's load and its reconciliation) needs only
-- the predicate, and the capacity-window eviction (db/window.c) looks the
-- holders of a flavor up by its key. jobs_active's key (cluster queue and
-- admission order) had no reader since queue positions moved to the
-- leader.
CREATE INDEX jobs_active_flavor ON jobs (flavor)
    WHERE state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING');
DROP INDEX jobs_active;
DROP INDEX jobs_holding_flavor;

-- job_events.job_id referred to jobs (id) ON DELETE CASCADE. Every event
-- is inserted by a statement that takes its job_id and team from the jobs
-- row it writes or reads (db/jobs.c, db/sched.c, db/batch.c), and no
-- statement deletes jobs, so the constraint never had anything to refuse
-- or cascade; its check locked the job's row (FOR KEY SHARE: a tuple lock
-- and its WAL record) for every event written.
ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_fkey;
