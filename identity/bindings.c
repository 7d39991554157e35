/*
 * bindings.c — the access bindings compiled into a flat table once per
 * load, matched under a read lock: a subject matches by group (in the
 * token's groups claim), by email (the verified email, case-insensitively)
 * or by subject (sub, exactly), and only for its issuer: the one it names,
 * else the first of GPUGATE_OIDC_ISSUERS (so trusting a second issuer
 * later never widens a binding written for the first).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/bindings.h"
#include "identity/bindings.h"

enum subject_kind { SUBJ_GROUP, SUBJ_EMAIL, SUBJ_SUBJECT };

struct subject {
  enum subject_kind kind;
  char *name;   /* owned */
  char *issuer; /* owned; NULL: the first issuer */
};

struct binding {
  struct auth_grant grant;
  struct subject *subjects; /* owned */
  size_t n;
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t reload_mu = PTHREAD_MUTEX_INITIALIZER;
static struct binding *table; /* owned */
static size_t n_table;
static unsigned long generation = 1;
static char first_issuer[BINDINGS_ISSUER_MAX + 1]; /* "": none trusted */

static void free_table(struct binding *t, size_t n)
{
  size_t i, j;

  for (i = 0; i < n; i++) {
    for (j = 0; j < t[i].n; j++) {
      free(t[i].subjects[j].name);
      free(t[i].subjects[j].issuer);
    }
    free(t[i].subjects);
  }
  free(t);
}

/* Compile one stored binding (borrowed) into b; false when unusable. */
static bool compile(const json_t *spec, struct binding *b)
{
  const char *role = json_string_value(json_object_get(spec, "role"));
  const char *team = json_string_value(json_object_get(spec, "team"));
  const json_t *subjects = json_object_get(spec, "subjects"), *s;
  size_t i;

  memset(b, 0, sizeof(*b));
  b->grant.role = auth_role_parse(role);
  if (b->grant.role == AUTH_ROLE_NONE || !json_is_array(subjects))
    return false;
  if (team)
    snprintf(b->grant.team, sizeof(b->grant.team), "%s", team);
  b->subjects = calloc(json_array_size(subjects) + 1, sizeof(*b->subjects));
  if (!b->subjects)
    return false;
  json_array_foreach (subjects, i, s) {
    const char *kind = json_string_value(json_object_get(s, "kind"));
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *iss = json_string_value(json_object_get(s, "issuer"));
    struct subject *d = &b->subjects[b->n];

    if (!kind || !name)
      continue;
    if (!strcmp(kind, "group"))
      d->kind = SUBJ_GROUP;
    else if (!strcmp(kind, "email"))
      d->kind = SUBJ_EMAIL;
    else if (!strcmp(kind, "subject"))
      d->kind = SUBJ_SUBJECT;
    else
      continue;
    d->name = strdup(name);
    d->issuer = iss ? strdup(iss) : NULL;
    if (!d->name || (iss && !d->issuer)) {
      free(d->name);
      free(d->issuer);
      continue;
    }
    b->n++;
  }
  if (b->n == 0) {
    free(b->subjects);
    b->subjects = NULL;
  }
  return b->n > 0;
}

void bindings_set(json_t *all)
{
  struct binding *t = calloc(json_array_size(all) + 1, sizeof(*t)), *old;
  size_t i, n = 0, n_old;
  json_t *spec; /* borrowed */

  if (!t) {
    json_decref(all);
    return;
  }
  json_array_foreach (all, i, spec) {
    if (compile(spec, &t[n]))
      n++;
  }
  json_decref(all);
  pthread_rwlock_wrlock(&lock);
  old = table;
  n_old = n_table;
  table = t;
  n_table = n;
  generation++;
  pthread_rwlock_unlock(&lock);
  free_table(old, n_old);
}

int bindings_reload(PGconn *pg, char *err, size_t errlen)
{
  json_t *all = NULL;
  int rc;

  pthread_mutex_lock(&reload_mu);
  rc = db_bindings_read(pg, &all, err, errlen);
  if (rc == 0)
    bindings_set(all);
  pthread_mutex_unlock(&reload_mu);
  return rc;
}

void bindings_set_first_issuer(const char *iss)
{
  pthread_rwlock_wrlock(&lock);
  snprintf(first_issuer, sizeof(first_issuer), "%s", iss ? iss : "");
  generation++;
  pthread_rwlock_unlock(&lock);
}

/* Under the read lock. */
static bool subject_matches(const struct subject *s,
                            const struct bindings_identity *id)
{
  const char *want = s->issuer ? s->issuer : first_issuer;
  size_t i;

  if (!want[0] || !id->issuer || strcmp(want, id->issuer) != 0)
    return false;
  switch (s->kind) {
  case SUBJ_GROUP:
    for (i = 0; i < id->n_groups; i++)
      if (!strcmp(s->name, id->groups[i]))
        return true;
    return false;
  case SUBJ_EMAIL:
    return id->email && !strcasecmp(s->name, id->email);
  case SUBJ_SUBJECT:
    return id->subject && !strcmp(s->name, id->subject);
  default:
    return false;
  }
}

static bool have(const struct auth_grant *out, int n,
                 const struct auth_grant *g)
{
  int i;

  for (i = 0; i < n; i++)
    if (out[i].role == g->role && !strcmp(out[i].team, g->team))
      return true;
  return false;
}

int bindings_grants(const struct bindings_identity *id, struct auth_grant *out,
                    int max, unsigned long *gen)
{
  size_t i, j;
  int n = 0;

  pthread_rwlock_rdlock(&lock);
  *gen = generation;
  for (i = 0; i < n_table && n < max; i++) {
    const struct binding *b = &table[i];
    for (j = 0; j < b->n; j++)
      if (subject_matches(&b->subjects[j], id)) {
        if (!have(out, n, &b->grant))
          out[n++] = b->grant;
        break;
      }
  }
  pthread_rwlock_unlock(&lock);
  return n;
}

unsigned long bindings_generation(void)
{
  unsigned long g;

  pthread_rwlock_rdlock(&lock);
  g = generation;
  pthread_rwlock_unlock(&lock);
  return g;
}

size_t bindings_count(void)
{
  size_t n;

  pthread_rwlock_rdlock(&lock);
  n = n_table;
  pthread_rwlock_unlock(&lock);
  return n;
}
