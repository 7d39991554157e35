-- 0021: month close, corrections, cost types and freshness.
--
-- cost_rollups gains the row's cost_type (regular, tax, adjustment,
-- rounding_error) and billing account, and where a row is reported:
--   month        the invoice month it counts in ('YYYY-MM'): its own invoice
--                month (else its usage month) — or, for a row that arrived
--                after that month (or its usage month) was closed, the first
--                open month from the later of the two on;
--   charge_class '' for a regular row, 'Correction' for such a late one;
--   report_day   the day reports select and group it by: its usage day, or
--                for a correction the first day of the month it counts in.
-- A closed month's rollups therefore never change again: the rows that come
-- later for it land in rollups of an open month.
--
-- The rollups are rebuilt from billing_rows (the rows keep their JSON, so
-- cost_type and billing_account_id are read from it); no month is closed
-- yet, so every row is regular.

ALTER TABLE cost_rollups
    ADD COLUMN cost_type       text NOT NULL DEFAULT 'regular',
    ADD COLUMN billing_account text NOT NULL DEFAULT '',
    ADD COLUMN charge_class    text NOT NULL DEFAULT '',
    ADD COLUMN month           text NOT NULL DEFAULT '',
    ADD COLUMN report_day      date;

DELETE FROM cost_rollups;

INSERT INTO cost_rollups (team, day, invoice_month, service, sku, flavor,
                          location, currency, cost_type, billing_account,
                          charge_class, month, report_day, cost, credits,
                          gpu_hours, rows)
SELECT team, usage_day, invoice_month, service, sku, flavor, location,
       currency, cost_type, billing_account, '',
       CASE WHEN invoice_month <> '' THEN invoice_month
            ELSE to_char(usage_day, 'YYYY-MM') END,
       usage_day, sum(cost), sum(credits), sum(gpu_hours), count(*)
FROM (SELECT b.*,
             coalesce(nullif(j->>'cost_type', ''), 'regular') AS cost_type,
             coalesce(j->>'billing_account_id', '') AS billing_account
      FROM billing_rows b, LATERAL (SELECT b.row::jsonb AS j) x) r
GROUP BY team, usage_day, invoice_month, service, sku, flavor, location,
         currency, cost_type, billing_account;

ALTER TABLE cost_rollups
    ALTER COLUMN report_day SET NOT NULL,
    ALTER COLUMN month DROP DEFAULT,
    DROP CONSTRAINT cost_rollups_pkey,
    ADD PRIMARY KEY (team, day, invoice_month, service, sku, flavor, location,
                     currency, cost_type, billing_account, charge_class,
                     month);

-- reports select by report_day; the months list and the invoice-month
-- basis by month
DROP INDEX cost_rollups_day;
CREATE INDEX cost_rollups_report_day ON cost_rollups (report_day);
CREATE INDEX cost_rollups_month ON cost_rollups (month);

-- A closed invoice month: who closed it, when, and how far the data had
-- been loaded then (the data_through its reports keep answering).
CREATE TABLE month_closes (
    month        text PRIMARY KEY
                 CHECK (month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
    closed_at    timestamptz NOT NULL DEFAULT now(),
    closed_by    text NOT NULL,
    data_through timestamptz
);

-- The latest usage_start loaded: one row, raised by every load.
CREATE TABLE billing_freshness (
    id                 boolean PRIMARY KEY DEFAULT true CHECK (id),
    latest_usage_start timestamptz NOT NULL
);
INSERT INTO billing_freshness (latest_usage_start)
SELECT max(usage_start) FROM billing_rows HAVING count(*) > 0;
