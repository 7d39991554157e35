/*
 * tokencache.c — verified bearer tokens by the SHA-256 of the token (see
 * tokencache.h).
 *
 * Set-associative: a key's first bytes pick a set of WAYS entries; a set
 * is searched linearly and, when full, its oldest insertion is replaced.
 * Each lock guards the sets whose index is congruent to it, so eight
 * HTTP workers rarely wait for one another.
 */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "identity/tokencache.h"

#define WAYS 4
#define STRIPES 64

struct entry {
  bool used;
  unsigned char key[TOKENCACHE_KEY_LEN];
  long long from, exp;     /* usable in [from, exp) */
  unsigned long long born; /* insertion order, for eviction */
  struct auth_principal p;
};

struct tokencache {
  EVP_MD *sha256; /* fetched once: an implicit fetch per digest costs */
  size_t nsets;
  struct entry *entries; /* nsets × WAYS */
  pthread_mutex_t locks[STRIPES];
  unsigned long long clock[STRIPES];
};

struct tokencache *tokencache_new(size_t capacity)
{
  struct tokencache *c = calloc(1, sizeof(*c));
  int i;

  if (!c)
    return NULL;
  c->nsets = capacity / WAYS + (capacity % WAYS != 0);
  if (c->nsets == 0)
    c->nsets = 1;
  c->entries = calloc(c->nsets * WAYS, sizeof(*c->entries));
  c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  if (!c->entries || !c->sha256) {
    EVP_MD_free(c->sha256);
    free(c->entries);
    free(c);
    return NULL;
  }
  for (i = 0; i < STRIPES; i++)
    pthread_mutex_init(&c->locks[i], NULL);
  return c;
}

void tokencache_free(struct tokencache *c)
{
  int i;

  if (!c)
    return;
  for (i = 0; i < STRIPES; i++)
    pthread_mutex_destroy(&c->locks[i]);
  EVP_MD_free(c->sha256);
  free(c->entries);
  free(c);
}

int tokencache_key(const struct tokencache *c, const char *token, size_t len,
                   unsigned char key[TOKENCACHE_KEY_LEN])
{
  unsigned n = 0;

  if (!EVP_Digest(token, len, key, &n, c->sha256, NULL) ||
      n != TOKENCACHE_KEY_LEN)
    return -1;
  return 0;
}

static size_t set_of(const struct tokencache *c,
                     const unsigned char key[TOKENCACHE_KEY_LEN])
{
  uint64_t h;

  memcpy(&h, key, sizeof(h));
  return (size_t)(h % c->nsets);
}

bool tokencache_get(struct tokencache *c,
                    const unsigned char key[TOKENCACHE_KEY_LEN], time_t now,
                    struct auth_principal *out)
{
  size_t set = set_of(c, key), i;
  struct entry *e = &c->entries[set * WAYS];
  bool hit = false;

  pthread_mutex_lock(&c->locks[set % STRIPES]);
  for (i = 0; i < WAYS && !hit; i++)
    if (e[i].used && (long long)now >= e[i].from && (long long)now < e[i].exp &&
        !memcmp(e[i].key, key, TOKENCACHE_KEY_LEN)) {
      *out = e[i].p;
      hit = true;
    }
  pthread_mutex_unlock(&c->locks[set % STRIPES]);
  return hit;
}

void tokencache_put(struct tokencache *c,
                    const unsigned char key[TOKENCACHE_KEY_LEN],
                    time_t verified_at, long long exp,
                    const struct auth_principal *p)
{
  size_t set = set_of(c, key), i, victim = 0;
  struct entry *e = &c->entries[set * WAYS];

  pthread_mutex_lock(&c->locks[set % STRIPES]);
  for (i = 0; i < WAYS; i++) {
    if (!e[i].used || !memcmp(e[i].key, key, TOKENCACHE_KEY_LEN)) {
      victim = i;
      break;
    }
    if (e[i].born < e[victim].born)
      victim = i;
  }
  e[victim].used = true;
  memcpy(e[victim].key, key, TOKENCACHE_KEY_LEN);
  e[victim].from = (long long)verified_at;
  e[victim].exp = exp;
  e[victim].born = ++c->clock[set % STRIPES];
  e[victim].p = *p;
  pthread_mutex_unlock(&c->locks[set % STRIPES]);
}

void tokencache_flush(struct tokencache *c)
{
  size_t s;
  int i;

  for (i = 0; i < STRIPES; i++)
    pthread_mutex_lock(&c->locks[i]);
  for (s = 0; s < c->nsets * WAYS; s++)
    c->entries[s].used = false;
  for (i = STRIPES - 1; i >= 0; i--)
    pthread_mutex_unlock(&c->locks[i]);
}

size_t tokencache_count(struct tokencache *c)
{
  size_t s, n = 0;
  int i;

  for (i = 0; i < STRIPES; i++)
    pthread_mutex_lock(&c->locks[i]);
  for (s = 0; s < c->nsets * WAYS; s++)
    n += c->entries[s].used;
  for (i = STRIPES - 1; i >= 0; i--)
    pthread_mutex_unlock(&c->locks[i]);
  return n;
}
