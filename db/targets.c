/*
 * targets.c — the per-process cache of submission targets (see targets.h).
 *
 * A small open-addressing table keyed by "team/queue/class". Every entry
 * shares one configuration version: an entry read at another version
 * flushes the others, so a submission never mixes two versions and the
 * version check of its INSERT covers everything it was validated
 * against.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/targets.h"

#define SLOTS ((size_t)2 * DB_TARGETS_MAX) /* load factor at most 1/2 */
#define KEY_MAX 200                        /* three names of at most 63 */

struct entry {
  bool used;
  char key[KEY_MAX];
  struct db_job_target t; /* JSON members: references owned by the entry */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry table[SLOTS];
static size_t count;
static int64_t version; /* of every entry; 0 when empty */
static uint64_t generation, flushes;

static int make_key(char out[KEY_MAX], const char *team, const char *queue,
                    const char *pc)
{
  int n = snprintf(out, KEY_MAX, "%s/%s/%s", team, queue, pc ? pc : "");

  return n > 0 && n < KEY_MAX ? 0 : -1;
}

/* FNV-1a */
static size_t slot_of(const char *key)
{
  uint64_t h = 1469598103934665603ULL;

  for (; *key; key++) {
    h ^= (unsigned char)*key;
    h *= 1099511628211ULL;
  }
  return (size_t)(h % SLOTS);
}

/* The slot holding key, or the free slot where it belongs. */
static struct entry *find(const char *key)
{
  size_t i = slot_of(key);

  while (table[i].used && strcmp(table[i].key, key) != 0)
    i = (i + 1) % SLOTS;
  return &table[i];
}

/* Copy t, taking new references to its JSON. */
static void copy_target(struct db_job_target *dst,
                        const struct db_job_target *src)
{
  *dst = *src;
  json_incref(dst->cq_spec);
  json_incref(dst->flavors);
  json_incref(dst->cohort_cqs);
}

static void flush_locked(void)
{
  size_t i;

  for (i = 0; i < SLOTS; i++)
    if (table[i].used) {
      db_job_target_free(&table[i].t);
      table[i].used = false;
    }
  count = 0;
  version = 0;
  generation++;
  flushes++;
}

bool db_targets_get(const char *team, const char *queue,
                    const char *priority_class, struct db_job_target *out)
{
  char key[KEY_MAX];
  struct entry *e;
  bool hit = false;

  if (make_key(key, team, queue, priority_class))
    return false;
  pthread_mutex_lock(&lock);
  e = find(key);
  if (e->used) {
    copy_target(out, &e->t);
    hit = true;
  }
  pthread_mutex_unlock(&lock);
  return hit;
}

uint64_t db_targets_generation(void)
{
  uint64_t g;

  pthread_mutex_lock(&lock);
  g = generation;
  pthread_mutex_unlock(&lock);
  return g;
}

void db_targets_put(const char *team, const char *queue,
                    const char *priority_class, uint64_t gen,
                    const struct db_job_target *t)
{
  char key[KEY_MAX];
  struct entry *e;

  if (make_key(key, team, queue, priority_class))
    return;
  pthread_mutex_lock(&lock);
  if (gen != generation)
    goto out; /* flushed while t was being read: t may be stale */
  if (count > 0 && (version != t->config_version || count >= DB_TARGETS_MAX))
    flush_locked();
  e = find(key);
  if (e->used)
    db_job_target_free(&e->t);
  else
    count++;
  e->used = true;
  memcpy(e->key, key, sizeof(key));
  copy_target(&e->t, t);
  version = t->config_version;
out:
  pthread_mutex_unlock(&lock);
}

void db_targets_flush(void)
{
  pthread_mutex_lock(&lock);
  flush_locked();
  pthread_mutex_unlock(&lock);
}

size_t db_targets_count(void)
{
  size_t n;

  pthread_mutex_lock(&lock);
  n = count;
  pthread_mutex_unlock(&lock);
  return n;
}

uint64_t db_targets_flushes(void)
{
  uint64_t n;

  pthread_mutex_lock(&lock);
  n = flushes;
  pthread_mutex_unlock(&lock);
  return n;
}

int db_targets_listen(PGconn *pg, char *err, size_t errlen)
{
  PGresult *res = PQexec(pg, "LISTEN gpugate_config");
  int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;

  if (rc)
    snprintf(err, errlen, "%s", PQerrorMessage(pg));
  PQclear(res);
  return rc;
}
