-- 0032: FOCUS PricingQuantity and PricingUnit of every usage row, not only
-- GPU usage (FOCUS 1.2: PricingQuantity MUST NOT be null on a Usage row
-- that is not a Correction). A row keeps usage.amount_in_pricing_units as
-- pricing_quantity and usage.pricing_unit as pricing_unit; a rollup sums
-- the quantities of one pricing unit (the unit joins its key, so that
-- gibibyte months are never added to requests).
--
-- Rows stored before are read from their JSON. A rollup of them takes the
-- sum of its key's rows when those are exactly the rows it counts (no
-- correction of a closed month holds some of them, and one pricing unit);
-- any other keeps quantity 0 and unit '' (the export then writes none).

ALTER TABLE billing_rows
    ADD COLUMN pricing_quantity numeric NOT NULL DEFAULT 0,
    ADD COLUMN pricing_unit     text    NOT NULL DEFAULT '';

UPDATE billing_rows b
SET pricing_quantity = CASE jsonb_typeof(j->'usage'->'amount_in_pricing_units')
                       WHEN 'number'
                       THEN (j->'usage'->>'amount_in_pricing_units')::numeric
                       ELSE 0 END,
    pricing_unit = CASE jsonb_typeof(j->'usage'->'pricing_unit')
                   WHEN 'string' THEN j->'usage'->>'pricing_unit'
                   ELSE '' END
FROM (SELECT usage_day AS d, row_hash AS h, row::jsonb AS j
      FROM billing_rows WHERE row LIKE '%"usage"%') x
WHERE b.usage_day = x.d AND b.row_hash = x.h
  AND jsonb_typeof(j->'usage') = 'object';

ALTER TABLE cost_rollups
    ADD COLUMN pricing_quantity numeric NOT NULL DEFAULT 0,
    ADD COLUMN pricing_unit     text    NOT NULL DEFAULT '';

WITH s AS (
    SELECT team, usage_day, invoice_month, service, sku, flavor, location,
           currency,
           coalesce(nullif(j->>'cost_type', ''), 'regular') AS cost_type,
           coalesce(j->>'billing_account_id', '') AS billing_account,
           min(pricing_unit) AS unit, max(pricing_unit) AS unit_hi,
           sum(pricing_quantity) AS quantity, count(*) AS n
    FROM (SELECT b.*, b.row::jsonb AS j FROM billing_rows b) r
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
UPDATE cost_rollups r
SET pricing_quantity = s.quantity, pricing_unit = s.unit
FROM s
WHERE r.team = s.team AND r.day = s.usage_day
  AND r.invoice_month = s.invoice_month AND r.service = s.service
  AND r.sku = s.sku AND r.flavor = s.flavor AND r.location = s.location
  AND r.currency = s.currency AND r.cost_type = s.cost_type
  AND r.billing_account = s.billing_account
  AND r.charge_class = '' AND r.rows = s.n AND s.unit = s.unit_hi;

ALTER TABLE cost_rollups
    DROP CONSTRAINT cost_rollups_pkey,
    ADD PRIMARY KEY (team, day, invoice_month, service, sku, flavor, location,
                     currency, cost_type, billing_account, pricing_unit,
                     charge_class, month);
