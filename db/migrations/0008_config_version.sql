-- 0008: the administrator's configuration announces its changes, so that
-- every replica may cache what a submission is checked against (queue,
-- cluster queue, flavors, cohort, priority class) and still never act on
-- a stale copy.
--
-- One version serves the admission leader and the submission caches:
-- admission_config_version (0007), bumped by a statement trigger on every
-- table of the configuration in the writer's transaction. Its bump now
-- also notifies `gpugate_config` (delivered at commit): replicas flush
-- their caches on the notification, and a submission's INSERT stores the
-- job only while the version it was validated against is still the
-- current one, which closes the window between a change's commit and the
-- notification's arrival.
CREATE OR REPLACE FUNCTION admission_config_bump() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE admission_config_version SET version = version + 1 WHERE id = 1;
    PERFORM pg_notify('gpugate_config', '');
    RETURN NULL;
END
$$;
