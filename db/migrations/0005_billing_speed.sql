-- 0005: billing rows are kept as text. billing_rows.row was jsonb, whose
-- input parses and re-encodes every row: most of the time PostgreSQL spent
-- loading a billing export. The engine has already validated each row as
-- JSON (and hashed its canonical form), so the column now holds the row
-- exactly as it was received: every field kept, unknown ones included, in
-- its own key order and spacing. Query it as JSON with row::jsonb.

ALTER TABLE billing_rows ALTER COLUMN row TYPE text USING row::text;
