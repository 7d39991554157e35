-- 0007: what lets the admission leader keep its state in memory and learn
-- only what changed (SPEC §8 "Admission state").
--
-- Change feed on jobs. Every write of a job row records the id of the
-- transaction that wrote it: the column default for an INSERT, the trigger
-- for an UPDATE, so no writer has to remember it. The leader reads
--   WHERE change_xid >= <xmin of the snapshot of its previous read>
-- A transaction that was still in flight at that read (invisible then) has
-- an id at or above that xmin, whatever order the commits came in, so its
-- rows are read once it has committed; rows read twice are recognised by
-- their unchanged change_xid and skipped.
ALTER TABLE jobs ADD COLUMN change_xid xid8 DEFAULT pg_current_xact_id();
CREATE INDEX jobs_change_xid ON jobs (change_xid);

CREATE FUNCTION jobs_change_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_change_stamp BEFORE UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_change_stamp();

-- The quota configuration's version: every statement that changes a table
-- the scheduler reads bumps it in the writer's transaction, so the leader,
-- holding its SHARE lock on those tables, sees exactly the version of what
-- it reads, and reloads the configuration when it moved.
CREATE TABLE admission_config_version (
    id      int PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO admission_config_version VALUES (1, 1);

CREATE FUNCTION admission_config_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE admission_config_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON flavors FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON cluster_queues FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON cluster_queue_flavors FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON teams FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
-- not read by the scheduler today (jobs keep the priority and cluster queue
-- they were submitted with), but administrator objects all the same
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON cohorts FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON priority_classes FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();
CREATE TRIGGER admission_config_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON team_queues FOR EACH STATEMENT EXECUTE FUNCTION admission_config_bump();

-- Queue positions as the leader computed them, written only for the jobs
-- whose position changed; requests read one row by key instead of counting
-- the pending jobs ahead. Shown only while the job is PENDING.
CREATE TABLE job_positions (
    job_id                    text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    position_in_queue         int NOT NULL,
    position_in_cluster_queue int NOT NULL,
    ahead_gpus                bigint NOT NULL
);

-- Pending and admitted (holding quota) jobs per team queue and cluster
-- queue, as the leader last published them: a queue's or a cluster queue's
-- status sums a handful of rows instead of counting its jobs.
CREATE TABLE admission_counts (
    team          text NOT NULL,
    queue         text NOT NULL,
    cluster_queue text NOT NULL,
    pending       bigint NOT NULL,
    admitted      bigint NOT NULL,
    PRIMARY KEY (team, queue, cluster_queue)
);
CREATE INDEX admission_counts_cq ON admission_counts (cluster_queue);
