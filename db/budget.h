/*
 * budget.h (db) — the deployment's Batch mutation budget per region: a
 * token bucket row per region (batch_budget) that every replica leases
 * tokens from.
 */
#ifndef GPUGATE_DB_BUDGET_H
#define GPUGATE_DB_BUDGET_H

#include "db/db.h"

/*
 * Lease up to want tokens of region's bucket (rate tokens a second, at
 * most burst held; the row is made full on first use), in one statement
 * of its own (no transaction may be open on c). *granted gets the tokens
 * taken (0..want); *wait_ms how long until the bucket holds a whole token
 * again (0 when it still does). Returns 0, or -1 with err.
 */
int db_budget_lease(struct db_conn *c, const char *region, int want,
                    double rate, long burst, int *granted, long *wait_ms,
                    char *err, size_t errlen);

#endif
