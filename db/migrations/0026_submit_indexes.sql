-- 0026: fewer index insertions per submitted job (issue 22: CPU per
-- request). A submission inserts the job into every index of jobs whose
-- predicate it meets and its first event into every index of job_events;
-- its admission (not a HOT update: the state is indexed) inserts the row
-- again and a second event. Under bench/http.sh's submit run the index
-- insertions were a fifth of PostgreSQL's CPU (perf), each b-tree about
-- as much as another.
--
-- The state's CHECK (0002) was parsed from its stored text and planned
-- again by every statement that wrote jobs (PostgreSQL builds a table's
-- CHECK expressions per statement): 10-15 µs of a submission's INSERT
-- (pgbench, an INSERT into a copy of jobs: 107-113 µs with it, 94-101
-- without). The same check as a domain's is prepared once per backend
-- and kept in its type cache (97-100 µs). The states allowed are the
-- same, and a write of any other still fails with check_violation. The
-- column's change of type rewrites the table and its indexes once, so it
-- comes before the indexes below are built.
CREATE DOMAIN job_state AS text CHECK (VALUE IN ('PENDING', 'ADMITTED',
    'QUEUED', 'RUNNING', 'EVICTING', 'SUCCEEDED', 'FAILED', 'CANCELLED'));
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
-- (a column a trigger's WHEN names cannot change its type: 0014's trigger
-- is dropped and created again as it was)
DROP TRIGGER jobs_change_stamp ON jobs;
ALTER TABLE jobs ALTER COLUMN state TYPE job_state;
CREATE TRIGGER jobs_change_stamp BEFORE UPDATE ON jobs FOR EACH ROW
    WHEN ((OLD.state, OLD.attempt, OLD.reason, OLD.team, OLD.queue,
           OLD.cluster_queue, OLD.priority, OLD.can_preempt, OLD.created_at,
           OLD.seq, OLD.gpu, OLD.cpu_milli, OLD.memory_mib, OLD.flavor,
           OLD.admitted_at, OLD.estimated_cost_usd, OLD.max_run_duration_s,
           OLD.backoff_until)
          IS DISTINCT FROM
          (NEW.state, NEW.attempt, NEW.reason, NEW.team, NEW.queue,
           NEW.cluster_queue, NEW.priority, NEW.can_preempt, NEW.created_at,
           NEW.seq, NEW.gpu, NEW.cpu_milli, NEW.memory_mib, NEW.flavor,
           NEW.admitted_at, NEW.estimated_cost_usd, NEW.max_run_duration_s,
           NEW.backoff_until))
    EXECUTE FUNCTION jobs_change_stamp();
-- jobs_team_state_queue (0013: the console's summary, an index-only scan
-- within a team; and the guards and sums by team and state) and
-- jobs_pending_queue (0006: a team queue's pending jobs in admission
-- order) become one index: (team, state, queue) leads it as before, and
-- with state = 'PENDING' and the queue given, the rest of the key is the
-- admission order, so the pending page reads it in order as it read the
-- partial index. One insertion at the submission instead of two.
DROP INDEX jobs_team_state_queue;
DROP INDEX jobs_pending_queue;
CREATE INDEX jobs_team_state_queue ON jobs
    (team, state, queue, priority DESC, created_at, seq) INCLUDE (gpu);
-- job_events was indexed twice: its primary key on id, and (job_id, id),
-- the only way it is read (a job's events, paged by id). The primary key
-- is now (job_id, id): unique as id alone was (id is a bigserial), one
-- insertion per event instead of two.
ALTER TABLE job_events DROP CONSTRAINT job_events_pkey,
    ADD PRIMARY KEY (job_id, id);
DROP INDEX job_events_job;
-- The label filter is the only reader of jobs_labels (labels @> one
-- key-value pair, db/jobs.c); jsonb_path_ops serves @> with one entry per
-- key-value pair where the default jsonb_ops holds one per key and one per
-- value, so each submission and admission adds half as many entries.
DROP INDEX jobs_labels;
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops);
