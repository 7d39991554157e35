-- 0029: a pulled billing day is committed only when it reconciles with the
-- export (SPEC §10 "Finance"), and a re-read replaces only the rows of the
-- billing accounts the export holds.
--
-- billing_sync_days gains the accounts of the day's rows as the export gave
-- them when it was read (a later re-read deletes the rows of these and of
-- the export's accounts then, never another account's uploaded rows), and
-- the export's own count and exact sums of cost and credits, which what
-- was stored equalled when the day was committed.
--
-- billing_unreconciled holds, per usage day whose last read did not
-- reconcile (its replacement rolled back), what the export said and what
-- was stored: GET /v1/billing/status shows it, the gauge
-- gpugate_billing_days_unreconciled counts it, and a later read that
-- reconciles removes it.
ALTER TABLE billing_sync_days
    ADD COLUMN accounts text[] NOT NULL DEFAULT '{}',
    ADD COLUMN cost     numeric,
    ADD COLUMN credits  numeric;

CREATE TABLE billing_unreconciled (
    day            date PRIMARY KEY,
    export_time    text NOT NULL,
    source_rows    bigint NOT NULL,
    source_cost    numeric NOT NULL,
    source_credits numeric NOT NULL,
    stored_rows    bigint NOT NULL,
    stored_cost    numeric NOT NULL,
    stored_credits numeric NOT NULL,
    seen_at        timestamptz NOT NULL DEFAULT now()
);

-- the sync's bytes processed (totalBytesProcessed of its queries)
ALTER TABLE billing_sync_state ADD COLUMN bytes_processed bigint NOT NULL DEFAULT 0;
