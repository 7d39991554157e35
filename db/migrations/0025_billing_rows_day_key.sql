-- 0025: billing_rows is keyed by (usage_day, row_hash) in one index, in
-- place of the primary key on row_hash and 0023's index on usage_day.
-- Uniqueness is the same: usage_day is the UTC day of the row's
-- usage_start_time, which the hashed canonical JSON holds, so one hash
-- always comes with one day. The one index serves the re-read of a day
-- (DELETE ... WHERE usage_day = $1, its leading column) and the look-up of
-- a known row (by its day and hash), and a load of one day after another
-- inserts into that day's part of the index only, instead of at random
-- places all over a hash index and into a date index of long runs of
-- equal keys: a million-row pull spent about 6 of its 13 s of COPY in the
-- two indexes, and 2.4 s in this one (bench/ingest.sh).
ALTER TABLE billing_rows DROP CONSTRAINT billing_rows_pkey,
    ADD PRIMARY KEY (usage_day, row_hash);
DROP INDEX billing_rows_usage_day;
