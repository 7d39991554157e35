-- 0002: jobs (Kueue workloads), their event history, and idempotency keys.

CREATE TABLE jobs (
    id                 text PRIMARY KEY,         -- "j-" + 14 random base32 chars
    seq                bigserial UNIQUE,          -- tie-breaker and list cursor
    team               text NOT NULL REFERENCES teams (name),
    queue              text NOT NULL,
    cluster_queue      text NOT NULL,
    name               text NOT NULL,
    priority_class     text NOT NULL,
    priority           int NOT NULL,
    can_preempt        boolean NOT NULL,
    state              text NOT NULL CHECK (state IN ('PENDING', 'ADMITTED',
                           'QUEUED', 'RUNNING', 'EVICTING', 'SUCCEEDED',
                           'FAILED', 'CANCELLED')),
    reason             text,
    attempt            int NOT NULL DEFAULT 1,
    gpu                bigint NOT NULL,           -- the whole request:
    cpu_milli          bigint NOT NULL,           -- parallelism × per task
    memory_mib         bigint NOT NULL,
    flavor             text,                      -- while holding quota
    location           text,
    borrowed           boolean,
    admitted_at        timestamptz,
    run_started_at     timestamptz,
    finished_at        timestamptz,
    cancel_requested   boolean NOT NULL DEFAULT false,
    max_run_duration_s bigint NOT NULL,
    estimated_cost_usd numeric,
    labels             jsonb NOT NULL DEFAULT '{}',
    spec               json NOT NULL,             -- the submission as validated
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_team_seq ON jobs (team, seq);
CREATE INDEX jobs_active ON jobs (cluster_queue, priority DESC, created_at, seq)
    WHERE state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING');
CREATE INDEX jobs_labels ON jobs USING gin (labels);

CREATE TABLE job_events (
    id          bigserial PRIMARY KEY,
    job_id      text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    team        text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state  text,
    to_state    text NOT NULL,
    reason      text,
    attempt     int NOT NULL,
    message     text
);
CREATE INDEX job_events_job ON job_events (job_id, id);

-- Idempotency-Key: one row per (team, key) for 24 h. A row without a
-- status is a request still in flight.
CREATE TABLE idempotency_keys (
    team         text NOT NULL,
    key          text NOT NULL,
    request_hash text NOT NULL,
    status       int,
    location     text,
    response     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, key)
);
