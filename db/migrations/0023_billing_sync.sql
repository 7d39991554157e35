-- 0023: the BigQuery pull of the billing export (SPEC §9 "Finance at the
-- source"). billing_sync_days holds, per usage day loaded from BigQuery, the
-- export's MAX(export_time) and row count as they were when the day was
-- read: a later sync re-reads only the days whose figures moved, and the
-- day's rows and rollups are replaced in the transaction that updates its
-- line here. billing_sync_state is one row: the last sync and its outcome.

CREATE TABLE billing_sync_days (
    day         date PRIMARY KEY,
    export_time text NOT NULL,   -- as BigQuery gave it (RFC 3339, UTC)
    rows        bigint NOT NULL,
    loaded_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE billing_sync_state (
    id              int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    last_sync_at    timestamptz,
    last_outcome    text NOT NULL DEFAULT 'never',  -- ok | failed | never
    last_success_at timestamptz,
    last_error      text NOT NULL DEFAULT '',
    days_read       int NOT NULL DEFAULT 0,
    rows_read       bigint NOT NULL DEFAULT 0
);
INSERT INTO billing_sync_state (id) VALUES (1);

-- a re-read day deletes that day's rows and the rollups of its open months:
-- found by their day, not by a scan (0021 dropped the rollups' day index,
-- reports select by report_day)
CREATE INDEX billing_rows_usage_day ON billing_rows (usage_day);
CREATE INDEX cost_rollups_day ON cost_rollups (day);
