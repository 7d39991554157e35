-- 0012: DWS Calendar-mode capacity windows on RESERVATION flavors
-- (`available_from`, `available_until` in the flavor's spec). The admission
-- leader evicts, shortly before a window ends, the jobs that hold quota in
-- its flavor; it finds them through this index instead of a scan of jobs.
CREATE INDEX jobs_holding_flavor ON jobs (flavor)
    WHERE state IN ('ADMITTED', 'QUEUED', 'RUNNING');
