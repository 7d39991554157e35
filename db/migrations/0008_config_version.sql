-- 0008: a version of the administrator's configuration, so that every
-- replica may cache what a submission is checked against (queue, cluster
-- queue, flavors, cohort, priority class) and still never act on a stale
-- copy.
--
-- Every statement that changes one of those tables bumps the version in
-- the same transaction and notifies `gpugate_config` (delivered at
-- commit): replicas flush their caches on the notification, and a
-- submission's INSERT stores the job only while the version it was
-- validated against is still the current one, which closes the window
-- between a change's commit and the notification's arrival.
CREATE TABLE config_version (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    v   bigint NOT NULL
);
INSERT INTO config_version (one, v) VALUES (true, 1);

CREATE FUNCTION gpugate_config_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE config_version SET v = v + 1;
    PERFORM pg_notify('gpugate_config', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER flavors_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON flavors
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
CREATE TRIGGER cohorts_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cohorts
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
CREATE TRIGGER cluster_queues_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cluster_queues
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
CREATE TRIGGER cluster_queue_flavors_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cluster_queue_flavors
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
CREATE TRIGGER priority_classes_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON priority_classes
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
CREATE TRIGGER team_queues_config_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_queues
    FOR EACH STATEMENT EXECUTE FUNCTION gpugate_config_changed();
