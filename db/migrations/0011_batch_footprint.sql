-- 0011: Batch footprint. An outbox row is claimed with a lease (claimed_by,
-- claimed_until) in a short transaction of its own, the Batch call runs with
-- no transaction open, and the result is recorded in another short one: no
-- row lock is held across a network call, so a cancel never waits behind
-- Batch. A lease ends when it runs out or when the claiming session
-- (claimed_pid) is gone — its dispatcher died mid-call — and the row is
-- claimable again; the deterministic Batch job id keeps the call
-- exactly-once.

ALTER TABLE batch_ops
    ADD COLUMN claimed_by    text,
    ADD COLUMN claimed_pid   int,
    ADD COLUMN claimed_until timestamptz;

-- One Batch mutation budget per region for the whole deployment: a token
-- bucket (Batch allows 6,000 mutations a minute per region) from which
-- every replica leases a few tokens at a time, so there is no database
-- round trip per mutation and no replica owns the budget.
CREATE TABLE batch_budget (
    region      text PRIMARY KEY,
    tokens      double precision NOT NULL,
    refilled_at timestamptz NOT NULL,
    last_grant  int NOT NULL DEFAULT 0   -- tokens the latest lease took
);

-- Race mode (Flex Start): one Batch job per allowed region and attempt,
-- gpugate-<job>-a<attempt>-r<k>, created at once. The first that Batch
-- reports SCHEDULED or RUNNING wins (it becomes the job's batch_job_name
-- and location); the others are cancelled in the same transaction.
-- overlap_since: when a loser was seen running beside the winner.
CREATE TABLE batch_copies (
    job_id        text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt       int NOT NULL,
    k             int NOT NULL,
    region        text NOT NULL,
    batch_job_id  text NOT NULL,
    overlap_since timestamptz,
    PRIMARY KEY (job_id, attempt, k)
);

-- A raced attempt has one create (and maybe one cancel) per copy.
ALTER TABLE batch_ops DROP CONSTRAINT batch_ops_job_id_attempt_op_key;
ALTER TABLE batch_ops ADD CONSTRAINT batch_ops_job_attempt_op_batch_job
    UNIQUE (job_id, attempt, op, batch_job_id);
