-- 0017: jobs.team referred to teams (name). A submission writes a job only
-- for a team queue it found in the configuration of the version its
-- statement checks (db/jobs.c, SUBMIT_OK: admission_config_version), a
-- team queue refers to its team (team_queues_team_fkey, kept), and no
-- route or subcommand deletes a team. The constraint had nothing left to
-- refuse; its check, run at every submission's insert, was ~7 % of
-- PostgreSQL's CPU per submitted job (perf of the backends under
-- bench/http.sh's submit run).
ALTER TABLE jobs DROP CONSTRAINT jobs_team_fkey;
