/*
 * fairshare_fields.c — validation of the fair-share-over-time fields
 * (cluster queue usage_fair_sharing, team queue fair_sharing_weight).
 * The tables bound the values (0 ≤ x ≤ max); what a table cannot say —
 * strictly positive, at least one weight set — is checked on the
 * normalised spec, so a 0 is named as clearly as a -1.
 */
#include "handlers/fairshare_fields.h"

#include "scheduler/fairshare.h"
#include "server/problem.h"

#define HALF_LIFE_MAX 31536000.0 /* a year */
#define WEIGHT_MAX FAIRSHARE_WEIGHT_MAX
#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const precedences[] = {"usage", "priority", NULL};

static const struct v_field weights[] = {
    {.key = "gpu", .type = V_NUMBER, .min = 0, .max = WEIGHT_MAX, .dflt = "1"},
    {.key = "cpu", .type = V_NUMBER, .min = 0, .max = WEIGHT_MAX, .dflt = "0"},
    {.key = "memory",
     .type = V_NUMBER,
     .min = 0,
     .max = WEIGHT_MAX,
     .dflt = "0"},
    {.key = NULL}};

const struct v_field fairshare_usage_fields[] = {
    {.key = "half_life_s",
     .type = V_NUMBER,
     .flags = V_REQUIRED,
     .min = 0,
     .max = HALF_LIFE_MAX},
    {.key = "min_charge_s",
     .type = V_NUMBER,
     .min = 0,
     .max = FS_MIN_CHARGE_MAX,
     .dflt = STR(FS_MIN_CHARGE_S)},
    {.key = "resource_weights",
     .type = V_OBJECT,
     .dflt = "{\"gpu\": 1, \"cpu\": 0, \"memory\": 0}",
     .fields = weights},
    {.key = "precedence",
     .type = V_ENUM,
     .choices = precedences,
     .dflt = "\"usage\""},
    {.key = NULL}};

void fairshare_check_cq(struct gg_req *req, json_t *spec)
{
  json_t *u = json_object_get(spec, "usage_fair_sharing");
  json_t *w = json_object_get(u, "resource_weights");
  const char *k;
  json_t *v;
  double sum = 0;

  if (!json_is_object(u))
    return;
  if (!(json_number_value(json_object_get(u, "half_life_s")) > 0))
    problem_field(req, "usage_fair_sharing.half_life_s",
                  "must be greater than 0 (omit usage_fair_sharing or set "
                  "it to null to turn usage fair sharing off)");
  json_object_foreach (w, k, v)
    sum += json_number_value(v);
  if (!(sum > 0))
    problem_field(req, "usage_fair_sharing.resource_weights",
                  "must give at least one resource a weight greater than 0");
}

void fairshare_check_tq(struct gg_req *req, json_t *spec)
{
  if (!(json_number_value(json_object_get(spec, "fair_sharing_weight")) > 0))
    problem_field(req, "fair_sharing_weight", "must be greater than 0");
}
