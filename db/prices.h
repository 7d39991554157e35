/*
 * prices.h — the per-process copy of every flavor's GPU-hour price, for a
 * job read to price its accrued cost without joining flavors (issue 22: the
 * join was a fifth of PostgreSQL's CPU per GET of a job).
 *
 * The copy is two PostgreSQL array literals of the same length, the flavor
 * names and their `price_per_gpu_hour_usd` as text (NULL where a flavor has
 * none), which the read passes as parameters and indexes with
 * array_position(): the price arrives as the same text `spec->>` gave,
 * so the cost is the same numeric expression as before.
 *
 * It is reloaded, with one statement, on the first read after the targets
 * cache was flushed (db_targets_generation() moved): every change of the
 * configuration, flavors included, flushes it through the `gpugate_config`
 * notification (control/configwatch.c). Between a change's commit and the
 * notification's arrival a read may price with the old figure.
 */
#ifndef GPUGATE_DB_PRICES_H
#define GPUGATE_DB_PRICES_H

#include "db/db.h"

struct db_prices {
  char *names;  /* text[] literal, e.g. {a,b} */
  char *prices; /* text[] literal of the same length, e.g. {0.71,NULL} */
};

/*
 * Fill *out with new copies of the current arrays (free with
 * db_prices_free), loading them on db when the copy is stale. 0, or -1
 * with the request's problem recorded (db_fail) or out of memory.
 */
int db_prices_get(struct db_conn *db, struct gg_err *err,
                  struct db_prices *out);

void db_prices_free(struct db_prices *p);

#endif
