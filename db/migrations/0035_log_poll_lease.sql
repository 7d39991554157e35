-- 0035: one Cloud Logging poller per project for the whole deployment
-- (server/logpoll.c, SPEC §10 "Live views").
--
-- Cloud Logging allows 60 entries:list calls a minute per project. One
-- replica at a time holds the project's lease (a row it renews; another
-- takes it once it has expired, e.g. after a kill -9) and polls for the
-- followers of every replica.
CREATE TABLE log_poll_leases (
    project    text PRIMARY KEY,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- What each replica's followers want: per followed job, the earliest
-- position (Cloud Logging timestamp, ns since the epoch) any of them has
-- not yet seen. Renewed by the replica every poll interval; a row not
-- renewed (its replica died) is ignored, then deleted by the holder.
CREATE TABLE log_follows (
    replica  text NOT NULL,
    job      text NOT NULL,
    since_ns bigint NOT NULL,
    seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (replica, job)
);

-- Each poll the holder made: the jobs it asked for from since_ns, the
-- page of entries Logging answered (oldest first), whether that page was
-- all there was (complete), and the jobs that had ended (with the
-- ingestion margin) before the call, whose followers end with a complete
-- round. Every replica reads the rounds in seq order (the holder writes
-- them under a transaction-level advisory lock, so seq order is commit
-- order) and hands each of its followers what it has not seen; NOTIFY
-- gpugate_logs wakes them. Rounds older than a few minutes are deleted by
-- the holder: a replica that missed one only re-reads (its followers'
-- positions did not move, so the next rounds ask from there).
CREATE TABLE log_rounds (
    seq      bigserial PRIMARY KEY,
    project  text NOT NULL,
    made_at  timestamptz NOT NULL DEFAULT now(),
    since_ns bigint NOT NULL,
    jobs     jsonb NOT NULL,
    ended    jsonb NOT NULL,
    complete boolean NOT NULL,
    last_ns  bigint NOT NULL,
    last_id  text NOT NULL,
    entries  jsonb NOT NULL
);
CREATE INDEX log_rounds_made_at ON log_rounds (made_at);
