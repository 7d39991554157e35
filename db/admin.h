/*
 * admin.h — storage of the administrator's objects (flavors, cohorts,
 * cluster queues, priority classes, teams, team queues, access bindings).
 *
 * Every kind is stored the same way — a validated spec plus a version for
 * ETags — so one set of functions serves all of them, driven by a table of
 * per-kind SQL in admin.c. Team queues are keyed by (team, name); all other
 * kinds by name, with team NULL.
 */
#ifndef GPUGATE_DB_ADMIN_H
#define GPUGATE_DB_ADMIN_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/err.h"

struct db_conn;

enum db_kind {
  DB_FLAVOR,
  DB_COHORT,
  DB_CLUSTER_QUEUE,
  DB_PRIORITY_CLASS,
  DB_TEAM,
  DB_TEAM_QUEUE,
  DB_ACCESS_BINDING,
  DB_KIND_COUNT
};

/* An If-Match precondition: absent, "*", or a list of versions. */
struct db_if_match {
  bool present;
  bool any;
  int n;
  long long versions[8];
};

/* Human name of a kind ("flavor", "cluster queue"). Static. */
const char *db_kind_name(enum db_kind k);

/*
 * Fetch one object as the API shows it: {"name", ["team",] spec fields...,
 * "created_at", "updated_at"}. *out is a new reference; *version its ETag
 * version. GG_NOT_FOUND (recorded on req) when absent.
 */
enum gg_code db_admin_get(struct db_conn *db, struct gg_err *err,
                          enum db_kind k, const char *team, const char *name,
                          json_t **out, long long *version);

/*
 * One page of objects ordered by name, after the name `after` ("" = from
 * the start). *items is a new array; *more says whether another page
 * follows.
 */
enum gg_code db_admin_list(struct db_conn *db, struct gg_err *err,
                           enum db_kind k, const char *team, const char *after,
                           int limit, json_t **items, bool *more);

/*
 * Create or replace an object in one transaction: checks m (412), the
 * kind's references (422, naming the field) and guards (409). spec is
 * borrowed. On success *out is the stored object (new reference), *version
 * its version and *created whether it is new. A PUT of an unchanged spec
 * changes nothing and keeps the version.
 */
enum gg_code db_admin_put(struct db_conn *db, struct gg_err *err,
                          enum db_kind k, const char *team, const char *name,
                          json_t *spec, const struct db_if_match *m,
                          json_t **out, long long *version, bool *created);

/* Delete an object; 404 when absent, 412 on m, 409 while referenced. */
enum gg_code db_admin_delete(struct db_conn *db, struct gg_err *err,
                             enum db_kind k, const char *team, const char *name,
                             const struct db_if_match *m);

#endif
