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
 * (billing_parse_row_with: handlers/billing_key.h), in one transaction,
 * once: done when billing_rekey holds version 1, else recorded there. A
 * row whose meaning another stored row already has (the same row stored
 * twice under the old keys) keeps its old key and is counted (left_old):
 * a re-read of its day replaces it. Uploads wait (the day lock, taken
 * exclusively). Run after db_migrate, on pg (borrowed). 0, or -1 with a
 * message in err.
 */
int billing_rekey(PGconn *pg, char *err, size_t errlen);

#endif
