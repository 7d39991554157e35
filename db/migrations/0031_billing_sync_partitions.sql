-- 0031: the pull keys on the export's partitions, as Koku does
-- (DATE(_PARTITIONTIME) and its MAX(export_time)): a partition is the day
-- BigQuery wrote its rows, which can be days after their usage day (a late
-- row for usage day D in partition D+5). Per partition the pull read, its
-- MAX(export_time) and the first usage day it held; a partition of the
-- window whose export_time moved has its usage days summed again from its
-- first one on, however old, so a late row is found.
CREATE TABLE billing_sync_partitions (
    partition_day   date PRIMARY KEY,
    export_time     text NOT NULL,
    first_usage_day date NOT NULL,
    seen_at         timestamptz NOT NULL DEFAULT now()
);
