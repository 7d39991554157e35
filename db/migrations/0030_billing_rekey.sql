-- 0030: billing rows re-keyed by their meaning. A row's key was the
-- SHA-256 of its JSON as given (sorted, compact); it is now the SHA-256 of
-- its meaning (handlers/billing_key.h), so that a row pulled
-- (TO_JSON_STRING) and the same row uploaded (BigQuery's NDJSON export)
-- are one row. Rows stored before keep their old key until
-- billing_rekey (server/billing_rekey.c, run by `gpugate migrate` and at
-- start after the migrations) computes the new one with the same C key
-- function as an upload, once: this table records that it ran.
CREATE TABLE billing_rekey (
    version    int PRIMARY KEY,       -- 1: the key of billing_key.h
    rekeyed    bigint NOT NULL,       -- rows given their new key
    left_old   bigint NOT NULL,       -- rows whose meaning another row
                                      -- already had (a double stored
                                      -- before): kept with their old key
                                      -- until a re-read of their day
    unparsed   bigint NOT NULL,       -- rows the parser refuses now
    done_at    timestamptz NOT NULL DEFAULT now()
);
