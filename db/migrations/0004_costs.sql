-- 0004: costs. Rows of the Cloud Billing standard usage cost export, keyed by
-- the SHA-256 of their canonical JSON so that loading a file twice changes
-- nothing, and their sums kept per team × day × invoice month × service ×
-- sku × flavor × location × currency in the same transaction as the insert,
-- so that cost reports read cost_rollups and never scan billing_rows.
--
-- Money is numeric, never float: sums are exact. Currencies are never added
-- together (currency is part of every rollup key).

CREATE TABLE billing_rows (
    row_hash      bytea PRIMARY KEY,        -- SHA-256 of the canonical JSON
                                            -- (sorted keys, compact)
    team          text NOT NULL,            -- label gpugate-team, else
                                            -- '(unattributed)'
    flavor        text NOT NULL DEFAULT '', -- label gpugate-flavor
    service       text NOT NULL,            -- service.description, else .id
    sku           text NOT NULL,            -- sku.description, else .id
    location      text NOT NULL DEFAULT '', -- region, location, zone's region
    currency      text NOT NULL,            -- ISO 4217, upper case
    usage_start   timestamptz NOT NULL,
    usage_day     date NOT NULL,            -- UTC day of usage_start
    invoice_month text NOT NULL DEFAULT '', -- 'YYYY-MM' (export: 'YYYYMM')
    cost          numeric NOT NULL,
    credits       numeric NOT NULL DEFAULT 0, -- Σ credits[].amount (≤ 0)
    gpu_hours     numeric NOT NULL DEFAULT 0, -- GPU SKUs only
    row           jsonb NOT NULL,           -- the row as given
    ingested_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cost_rollups (
    team          text NOT NULL,
    day           date NOT NULL,
    invoice_month text NOT NULL,
    service       text NOT NULL,
    sku           text NOT NULL,
    flavor        text NOT NULL,
    location      text NOT NULL,
    currency      text NOT NULL,
    cost          numeric NOT NULL,
    credits       numeric NOT NULL,
    gpu_hours     numeric NOT NULL,
    rows          bigint NOT NULL,
    PRIMARY KEY (team, day, invoice_month, service, sku, flavor, location,
                 currency)
);
-- reports over every team filter on the day range
CREATE INDEX cost_rollups_day ON cost_rollups (day);
