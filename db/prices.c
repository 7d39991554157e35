/*
 * prices.c — the per-process copy of the flavors' GPU-hour prices (see
 * prices.h), stamped with the targets cache's flush generation.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/prices.h"
#include "db/targets.h"

static const char sql_load[] =
    "SELECT coalesce(array_agg(name ORDER BY name), '{}')::text, "
    "coalesce(array_agg(spec->>'price_per_gpu_hour_usd' ORDER BY name), "
    "'{}')::text FROM flavors";

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static uint64_t loaded_gen; /* db_targets_generation() it was read at */
static char *names, *prices;

static int copy_out(struct gg_err *err, const char *n, const char *p,
                    struct db_prices *out)
{
  out->names = strdup(n);
  out->prices = strdup(p);
  if (out->names && out->prices)
    return 0;
  db_prices_free(out);
  err_fail(err, GG_INTERNAL, "Out of memory.");
  return -1;
}

int db_prices_get(struct db_conn *db, struct gg_err *err, struct db_prices *out)
{
  uint64_t gen = db_targets_generation();
  PGresult *res;
  bool hit;
  int rc = -1;

  out->names = out->prices = NULL;
  pthread_mutex_lock(&lock);
  hit = loaded && loaded_gen == gen;
  if (hit)
    rc = copy_out(err, names, prices, out);
  pthread_mutex_unlock(&lock);
  if (hit)
    return rc;
  /* read after the generation: a flush that follows it is seen next time */
  if (!(res = db_err_exec(db, err, sql_load, 0, NULL)))
    return -1;
  rc = copy_out(err, PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), out);
  if (rc == 0) {
    pthread_mutex_lock(&lock);
    if (!loaded || loaded_gen != gen) {
      char *n = strdup(out->names), *p = strdup(out->prices);

      if (n && p) {
        free(names);
        free(prices);
        names = n;
        prices = p;
        loaded = true;
        loaded_gen = gen;
      } else {
        free(n);
        free(p);
      }
    }
    pthread_mutex_unlock(&lock);
  }
  PQclear(res);
  return rc;
}

void db_prices_free(struct db_prices *p)
{
  free(p->names);
  free(p->prices);
  p->names = p->prices = NULL;
}
