-- 0019: fair share over time (SPEC §9). The admission leader keeps each
-- team queue's decayed usage in memory and writes it here, valued at
-- as_of, so that a restart or a new leader resumes it decayed over the
-- time in between. One row per team queue and resource (gpu in
-- GPU-seconds, cpu in CPU-seconds, memory in GiB-seconds); no foreign
-- key: a deleted team queue's row is harmless and a recreated one
-- resumes it.
CREATE TABLE fair_share_usage (
    team     text NOT NULL,
    queue    text NOT NULL,
    resource text NOT NULL CHECK (resource IN ('gpu', 'cpu', 'memory')),
    usage    float8 NOT NULL CHECK (usage >= 0),
    as_of    timestamptz NOT NULL,
    PRIMARY KEY (team, queue, resource)
);
