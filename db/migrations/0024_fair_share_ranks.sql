-- 0023: fair share over time (SPEC §9), the standing of each team queue
-- of a cluster queue that orders by usage, as the admission leader wrote
-- it with its usage (0019): its score valued at as_of (decayed at read
-- with half_life_s) and its rank among its cluster queue's team queues
-- (1 = first). A pending job's status reads its team queue's row in the
-- job's own statement: no query of its own. Rows of team queues no longer
-- ordered by usage are deleted by the leader's next write.
CREATE TABLE fair_share_ranks (
    team        text NOT NULL,
    queue       text NOT NULL,
    score       float8 NOT NULL CHECK (score >= 0),
    rank        int NOT NULL CHECK (rank >= 1),
    half_life_s float8 NOT NULL CHECK (half_life_s > 0),
    as_of       timestamptz NOT NULL,
    PRIMARY KEY (team, queue)
);
