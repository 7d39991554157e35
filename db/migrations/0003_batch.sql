-- 0003: Cloud Batch dispatch. An outbox row is written in the same
-- transaction as the decision that needs a Batch call (admission: create;
-- eviction or cancel: cancel); dispatchers on any replica claim rows with
-- FOR UPDATE SKIP LOCKED and delete them once Batch has accepted the call.

ALTER TABLE jobs
    ADD COLUMN batch_job_name text,           -- projects/…/jobs/gpugate-…-aN
    ADD COLUMN batch_state    text,           -- last state Batch reported
    ADD COLUMN location_index int NOT NULL DEFAULT 0,
    ADD COLUMN queued_at      timestamptz,    -- Batch accepted the job
    ADD COLUMN backoff_until  timestamptz,    -- PENDING/Backoff until then
    ADD COLUMN backoffs       int NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX jobs_batch_job_name ON jobs (batch_job_name)
    WHERE batch_job_name IS NOT NULL;

CREATE TABLE batch_ops (
    id           bigserial PRIMARY KEY,
    job_id       text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt      int NOT NULL,
    op           text NOT NULL CHECK (op IN ('create', 'cancel')),
    region       text NOT NULL,
    batch_job_id text NOT NULL,               -- deterministic: gpugate-<id>-a<n>
    request_id   uuid NOT NULL DEFAULT gen_random_uuid(),
    tries        int NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_id, attempt, op)
);
CREATE INDEX batch_ops_due ON batch_ops (next_at);
