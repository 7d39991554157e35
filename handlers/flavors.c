/*
 * flavors.c — /v1/flavors: kinds of capacity (provisioning model, machine,
 * accelerators, regions, prices).
 */
#include <string.h>

#include "handlers/admin.h"
#include "handlers/handlers.h"
#include "server/problem.h"
#include "lib/rfc3339.h"

#define FLEX_START_MAX_RUN_S 604800   /* DWS Flex Start: at most 7 days */
#define CALENDAR_MAX_WINDOW_S 7776000 /* DWS Calendar: at most 90 days */

static const char *const models[] = {"RESERVATION", "STANDARD", "SPOT",
                                     "FLEX_START", NULL};

static const char *const multi_modes[] = {"failover", "race", NULL};

static const struct v_field region[] = {{.type = V_REGION}};

static const struct v_field fields[] = {
    {.key = "provisioning_model",
     .type = V_ENUM,
     .flags = V_REQUIRED,
     .choices = models},
    {.key = "machine_type", .type = V_NAME, .flags = V_REQUIRED},
    {.key = "accelerator_type",
     .type = V_NAME,
     .flags = V_NULLABLE,
     .dflt = "null"},
    {.key = "gpus_per_vm",
     .type = V_INT,
     .flags = V_REQUIRED,
     .min = 0,
     .max = 16},
    {.key = "locations",
     .type = V_LIST,
     .flags = V_REQUIRED,
     .min = 1,
     .max = 16,
     .fields = region},
    {.key = "reservation", .type = V_NAME, .flags = V_NULLABLE, .dflt = "null"},
    {.key = "price_per_gpu_hour_usd",
     .type = V_NUMBER,
     .min = 0,
     .max = 100000,
     .dflt = "0"},
    {.key = "on_demand_price_per_gpu_hour_usd",
     .type = V_NUMBER,
     .flags = V_NULLABLE,
     .min = 0,
     .max = 100000,
     .dflt = "null"},
    {.key = "max_run_duration_s",
     .type = V_INT,
     .flags = V_NULLABLE,
     .min = 1,
     .max = 315360000,
     .dflt = "null"},
    {.key = "max_wait_s",
     .type = V_INT,
     .min = 1,
     .max = 604800,
     .dflt = "7200"},
    {.key = "multi_region",
     .type = V_ENUM,
     .choices = multi_modes,
     .dflt = "\"failover\""},
    {.key = "max_parallel_regions",
     .type = V_INT,
     .flags = V_NULLABLE,
     .min = 1,
     .max = 16,
     .dflt = "null"},
    /* DWS Calendar mode: checked and normalised by window_check() */
    {.key = "available_from", .type = V_STRING, .flags = V_NULLABLE, .max = 64},
    {.key = "available_until",
     .type = V_STRING,
     .flags = V_NULLABLE,
     .max = 64},
    {.key = NULL}};

/*
 * Race mode (SPEC §8): one Flex Start Batch job per allowed region at
 * once. Well-formed but meaningless for other models, so 422, not 400.
 */
static void check_race(struct gg_req *req, json_t *spec, bool flex)
{
  bool race =
      !strcmp(json_string_value(json_object_get(spec, "multi_region")), "race");
  bool clean = problem_nfields(req) == 0;

  if (race && !flex) {
    problem_field(req, "multi_region",
                  "\"race\" is only allowed when provisioning_model is "
                  "FLEX_START");
    if (clean)
      problem_fail(req, GG_UNPROCESSABLE,
                   "Race mode needs a FLEX_START flavor; see errors.");
  } else if (!race &&
             !json_is_null(json_object_get(spec, "max_parallel_regions"))) {
    problem_field(req, "max_parallel_regions",
                  "is only allowed when multi_region is \"race\"");
    if (clean)
      problem_fail(req, GG_UNPROCESSABLE,
                   "max_parallel_regions needs multi_region \"race\"; see "
                   "errors.");
  }
}

/*
 * A Calendar-mode capacity window: RESERVATION only, both ends or none,
 * RFC 3339, from before until, at most 90 days long (DWS Calendar's
 * limit). Stored normalised to UTC ("2026-12-01T08:00:00Z"); null or
 * absent ends are dropped, so a flavor without a window has neither key.
 */
static void window_check(struct gg_req *req, json_t *spec, bool reserved)
{
  static const char *const keys[2] = {"available_from", "available_until"};
  const char *text[2];
  int64_t t[2] = {0, 0};
  bool bad = false, semantic = false;
  int i;

  for (i = 0; i < 2; i++) {
    text[i] = json_string_value(json_object_get(spec, keys[i]));
    if (!text[i])
      json_object_del(spec, keys[i]);
  }
  if (!text[0] && !text[1])
    return;
  for (i = 0; i < 2; i++) {
    if (!text[i]) {
      problem_field(req, keys[i],
                    "is required with %s (a window has both ends)",
                    keys[1 - i]);
      semantic = bad = true;
    } else if (rfc3339_parse(text[i], i == 0, &t[i])) {
      problem_field(req, keys[i],
                    "must be an RFC 3339 date-time with a time zone, such as "
                    "\"2026-12-01T08:00:00Z\"");
      bad = true;
    }
  }
  if (!reserved) {
    problem_field(req, keys[text[0] ? 0 : 1],
                  "is only allowed when provisioning_model is RESERVATION "
                  "(a DWS Calendar-mode booking)");
    semantic = bad = true;
  }
  if (!bad && t[1] <= t[0]) {
    problem_field(req, "available_until", "must be after available_from");
    semantic = bad = true;
  } else if (!bad && t[1] - t[0] > CALENDAR_MAX_WINDOW_S) {
    problem_field(req, "available_until",
                  "must be at most 90 days (%d s) after available_from, the "
                  "longest DWS Calendar-mode booking",
                  CALENDAR_MAX_WINDOW_S);
    semantic = bad = true;
  }
  if (semantic)
    problem_fail(req, GG_UNPROCESSABLE,
                 "The flavor's capacity window is not one DWS Calendar mode "
                 "can book; see errors.");
  if (bad)
    return;
  for (i = 0; i < 2; i++) {
    char norm[RFC3339_LEN];
    rfc3339_format(t[i], norm);
    json_object_set_new(spec, keys[i], json_string(norm));
  }
}

static void check(struct gg_req *req, json_t *spec)
{
  const char *model =
      json_string_value(json_object_get(spec, "provisioning_model"));
  json_t *locs = json_object_get(spec, "locations");
  json_t *max_run = json_object_get(spec, "max_run_duration_s");
  bool reserved = !strcmp(model, "RESERVATION");
  bool flex = !strcmp(model, "FLEX_START");
  size_t i, j;

  if (reserved && json_is_null(json_object_get(spec, "reservation")))
    problem_field(req, "reservation",
                  "is required when provisioning_model is RESERVATION");
  if (!reserved && !json_is_null(json_object_get(spec, "reservation")))
    problem_field(req, "reservation",
                  "is only allowed when provisioning_model is RESERVATION");
  if (json_integer_value(json_object_get(spec, "gpus_per_vm")) > 0 &&
      json_is_null(json_object_get(spec, "accelerator_type")))
    problem_field(req, "accelerator_type",
                  "is required when gpus_per_vm is above 0");
  for (i = 0; i < json_array_size(locs); i++)
    for (j = 0; j < i; j++)
      if (json_equal(json_array_get(locs, i), json_array_get(locs, j)))
        problem_field(req, "locations", "lists \"%s\" twice",
                      json_string_value(json_array_get(locs, i)));
  if (flex && json_is_integer(max_run) &&
      json_integer_value(max_run) > FLEX_START_MAX_RUN_S)
    problem_field(req, "max_run_duration_s",
                  "must be at most %d (7 days) for FLEX_START",
                  FLEX_START_MAX_RUN_S);
  if (flex && json_is_null(max_run))
    json_object_set_new(spec, "max_run_duration_s",
                        json_integer(FLEX_START_MAX_RUN_S));
  check_race(req, spec, flex);
  /* the on-demand reference defaults to the price itself: no savings */
  if (json_is_null(json_object_get(spec, "on_demand_price_per_gpu_hour_usd")))
    json_object_set(spec, "on_demand_price_per_gpu_hour_usd",
                    json_object_get(spec, "price_per_gpu_hour_usd"));
  window_check(req, spec, reserved);
}

static const struct admin_kind kind = {DB_FLAVOR, "name", NULL,
                                       fields,    check,  NULL};

enum gg_code flavors_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code flavors_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code flavors_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}

enum gg_code flavors_delete(struct gg_req *req)
{
  return admin_delete(req, &kind);
}
