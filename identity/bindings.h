/*
 * bindings.h — this replica's cache of the access bindings (SPEC §9): the
 * grants a provider token's principal has, decided without a query.
 *
 * The configuration watch (control/configwatch.c) loads the bindings on
 * its own session at start-up, on every `gpugate_config` notification and
 * whenever its connection comes back; each load replaces the cache whole
 * and advances its generation, which invalidates grants remembered with
 * verified tokens. Thread-safe.
 */
#ifndef GPUGATE_BINDINGS_H
#define GPUGATE_BINDINGS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "identity/principal.h"

#define BINDINGS_NAME_MAX 256   /* a subject's name */
#define BINDINGS_ISSUER_MAX 256 /* a subject's issuer */
#define BINDINGS_MAX_SUBJECTS 64

/* Who a verified provider token names. Strings borrowed; email NULL
 * unless verified. */
struct bindings_identity {
  const char *issuer;
  const char *subject;
  const char *email;
  const char *const *groups;
  size_t n_groups;
};

/* The issuer a subject naming none matches: the first of
 * GPUGATE_OIDC_ISSUERS (copied; NULL or "": such subjects match nothing).
 * Advances the generation. */
void bindings_set_first_issuer(const char *iss);

/* Replace the cache with all (an array of {"name", spec...} as
 * db_bindings_read gives; stolen). */
void bindings_set(json_t *all);

/*
 * Read every binding on pg (a connection the caller holds) and replace the
 * cache with them. Reloads are serialised, read and replace together, so
 * of two reloads (the configuration watch's and a change's own) the later
 * read — which sees every change the earlier one saw — is the one left.
 * Returns 0, or -1 with err filled (the cache is kept).
 */
int bindings_reload(PGconn *pg, char *err, size_t errlen);

/*
 * The union of the grants of every binding matching id, deduplicated, in
 * out[0..max) (the rest dropped); *gen receives the generation they come
 * from. Returns how many.
 */
int bindings_grants(const struct bindings_identity *id, struct auth_grant *out,
                    int max, unsigned long *gen);

/* The cache's generation: advances with every load. */
unsigned long bindings_generation(void);

/* Bindings cached now. */
size_t bindings_count(void);

#endif
