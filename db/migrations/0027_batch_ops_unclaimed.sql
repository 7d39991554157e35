-- 0027: the outbox's claimable rows in an index of their own (issue 22:
-- the Kueue shape at a real Batch's latency). A claim takes the due rows
-- no dispatcher holds, in next_at order. Under load most due rows are
-- held: their calls are at Batch, a few hundred at 300 ms a create, and
-- they are the oldest, so a claim walking batch_ops_due passed all of
-- them (a heap visit each, and a look at pg_stat_activity) before the
-- first it could take: 0.8 ms a claim, a third of PostgreSQL's time in
-- the shape (pg_stat_statements, 2026-11-27). Rows held under a lease
-- that ran out, or by a session that is gone, are looked for apart
-- (db/batch.c, sql_claim_lapsed), about once a second.
CREATE INDEX batch_ops_unclaimed ON batch_ops (next_at)
    WHERE claimed_by IS NULL;
