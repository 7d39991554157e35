/*
 * billing_sync_internal.h — what db/billing_sync.c and
 * db/billing_partitions.c share: the read of a per-day table from a day
 * on into an array. Not part of db/'s interface (billing_sync.h); nothing
 * else includes it.
 */
#ifndef GPUGATE_DB_BILLING_SYNC_INTERNAL_H
#define GPUGATE_DB_BILLING_SYNC_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

#include "db/db.h"

/* Fill the element at elem from row of res. */
typedef void (*db_billing_sync_fill)(void *elem, const PGresult *res, int row);

/*
 * Run sql with $1 = from ("YYYY-MM-DD"; NULL or "": every row) and fill
 * one element of size bytes a row: *out a new array of *n elements (and
 * one zeroed more; free()), NULL and 0 on failure.
 */
enum gg_code db_billing_sync_read(struct db_conn *c, const char *sql,
                                  const char *from, size_t size,
                                  db_billing_sync_fill fill, void **out,
                                  size_t *n);

#endif
