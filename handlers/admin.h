/*
 * admin.h — the request flow shared by every administrator object: path
 * names checked, If-Match parsed, body validated against the kind's field
 * table, stored through db/admin, answered with an ETag. Each resource
 * file supplies only its field table, its cross-field checks and, where it
 * has one, its read-only status.
 */
#ifndef GPUGATE_HANDLERS_ADMIN_H
#define GPUGATE_HANDLERS_ADMIN_H

#include <jansson.h>

#include "db/admin.h"
#include "handlers/validate.h"
#include "server/req.h"

struct admin_kind {
  enum db_kind kind;
  const char *name_param;       /* path parameter naming the object */
  const char *team_param;       /* "team" for team queues, else NULL */
  const struct v_field *fields; /* PUT body */
  /* cross-field checks on the normalised spec; record problem_field()s */
  void (*check)(struct gg_req *req, json_t *spec);
  /* add read-only fields to an object before it is returned */
  enum gg_code (*decorate)(struct gg_req *req, json_t *obj);
};

enum gg_code admin_get(struct gg_req *req, const struct admin_kind *k);
enum gg_code admin_list(struct gg_req *req, const struct admin_kind *k);
enum gg_code admin_put(struct gg_req *req, const struct admin_kind *k);
enum gg_code admin_delete(struct gg_req *req, const struct admin_kind *k);

#endif
