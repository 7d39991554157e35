/*
 * budget.h — a replica's view of the deployment's Batch mutation budget
 * (SPEC §8 "Batch footprint"): per region, the tokens this process has
 * leased from the shared bucket in PostgreSQL (db/budget.c), spent one per
 * Batch mutation without a database round trip.
 *
 * A leased token is spendable for BUDGET_VALID_MS only, then dropped:
 * so the mutations of any window of W seconds were granted within W +
 * BUDGET_VALID_MS / 1000 seconds, at most burst + rate × (W + 0.25) for the
 * whole deployment. Thread-safe; one per process, shared by its workers.
 */
#ifndef GPUGATE_SERVER_BUDGET_H
#define GPUGATE_SERVER_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

#include "db/db.h"

#define BUDGET_VALID_MS 250
#define BUDGET_REGION_MAX 64 /* bytes of a region name, NUL included */

struct budget;

/* A budget of rate mutations a second per region, burst held at most.
 * NULL when out of memory. */
struct budget *budget_new(double rate, long burst);
void budget_free(struct budget *b);

/*
 * Take one token for a mutation in region, leasing a few from the shared
 * bucket through c (no transaction open) when none is held. Returns true
 * with a token; false when the deployment's budget is spent (then
 * *wait_ms says when to look again: when a whole lease has refilled) or
 * the database failed.
 */
bool budget_take(struct budget *b, struct db_conn *c, const char *region,
                 long *wait_ms);

/*
 * Make sure that, when the bucket allows, want (at most a lease) tokens of
 * region are held, leasing the missing ones in one round trip: a caller
 * about to spend several, e.g. on the rows of one claim, leases what it
 * will spend rather than a whole lease that may lapse unspent. Tokens are
 * still taken one by one with budget_take().
 */
void budget_prefetch(struct budget *b, struct db_conn *c, const char *region,
                     int want);

/*
 * The regions that have no leased token left and whose shared bucket,
 * when last leased from, held less than a whole lease: until a whole
 * lease has refilled there, a claim skips them. Up to max names into
 * regions; *next_ms (ms from now) until the first refills, 0 when none.
 * Returns the count.
 */
size_t budget_exhausted(struct budget *b, char (*regions)[BUDGET_REGION_MAX],
                        size_t max, long *next_ms);

#endif
