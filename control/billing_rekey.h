/*
 * billing_rekey.h — the one-time re-key of billing rows stored before a
 * row's key was its meaning (db/migrations/0030_billing_rekey.sql).
 */
#ifndef GPUGATE_BILLING_REKEY_H
#define GPUGATE_BILLING_REKEY_H

#include <stddef.h>

#include <libpq-fe.h>

/*
 * Give every stored billing row the key an upload or a pull computes now
 * (billing_parse_row_with: billing/billing_key.h), in one transaction,
 * once: done when billing_rekey holds version 2, else recorded there. A
 * row whose meaning another stored row already has (the same row stored
 * twice under the old keys) is counted (left_old), deleted, and its sums
 * taken back out of the rollups (in its open month, or as a correction in
 * the first open month when its own is closed), so that reports count the
 * meaning once (version 1 kept it, counted twice, until a re-read of its
 * day; a database where version 1 ran is re-keyed again for that). Uploads
 * and month closes wait (the day lock, taken exclusively; month_closes in
 * SHARE mode). Run after db_migrate, on pg (borrowed). 0, or -1 with a
 * message in err.
 */
int billing_rekey(PGconn *pg, char *err, size_t errlen);

#endif
