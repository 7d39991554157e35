-- 0013: the console's job summary (GET /v1/teams/{team}/jobs/summary)
-- counts a team's jobs by state and queue with their GPUs from this index
-- alone (an index-only scan within the team), never reading other teams'
-- rows or the jobs' specs.
CREATE INDEX jobs_team_state_queue ON jobs (team, state, queue) INCLUDE (gpu);
