-- 0014: a jobs row's change_xid moves only when a column the admission
-- leader keeps in memory changes (db/sched_state.c, JOB_COLS). The
-- status updates that only record what Batch reported (batch_state, from
-- every Pub/Sub push and sync) used to stamp it too: change_xid is
-- indexed, so none of those updates could be HOT, each inserted into every
-- index of the table, and the leader's feed read the row again for
-- nothing. They now leave every indexed column alone, and a page with room
-- (fillfactor 80 for the pages written from now on) takes them as HOT
-- updates. (locations, which the leader reads too, is generated from
-- spec, which no update changes, and a BEFORE trigger's WHEN cannot name
-- a generated column.)
DROP TRIGGER jobs_change_stamp ON jobs;
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
ALTER TABLE jobs SET (fillfactor = 80);
