/*
 * it_admin.c — the administrator objects over HTTP: a table of invalid
 * requests (each answered with the right 4xx problem naming the field at
 * fault, never a 500), then a round trip of every kind (PUT, GET, ETag,
 * If-Match, DELETE) and the defaults and default-class rules.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *admin_suite(void);

static struct h_server srv;
static char *admin;

/* ---- bodies ------------------------------------------------------------ */

#define S10 "xxxxxxxxxx"
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
#define NAME63 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NAME64 "a" NAME63

#define FL_MACHINE                                                             \
  "\"machine_type\": \"g2-standard-24\", \"accelerator_type\": "               \
  "\"nvidia-l4\""
#define FL_SPOT                                                                \
  "\"provisioning_model\": \"SPOT\", " FL_MACHINE ", \"gpus_per_vm\": 2, "     \
  "\"locations\": [\"us-central1\"]"
#define FLAVOR_SPOT "{" FL_SPOT ", \"price_per_gpu_hour_usd\": 0.22}"
#define FLAVOR_RES                                                             \
  "{\"provisioning_model\": \"RESERVATION\", " FL_MACHINE                      \
  ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], "                   \
  "\"reservation\": \"adm-reservation\"}"

#define GPU4 "{\"gpu\": {\"nominal\": 4}}"
#define CQ_FL(res)                                                             \
  "\"flavors\": [{\"name\": \"adm-spot\", \"resources\": " res "}]"
#define CQ_OK "{\"cohort\": \"adm-cohort\", " CQ_FL(GPU4) "}"

#define TEAM_OK                                                                \
  "{\"display_name\": \"Admin Team\", \"cost_center\": \"ml-research\", "      \
  "\"monthly_budget_usd\": 1000, \"budget_policy\": \"warn\"}"

/* Objects the invalid requests refer to; created once by setup(). */
static const char *const seeds[][2] = {
    {"/v1/flavors/adm-spot", FLAVOR_SPOT},
    {"/v1/flavors/adm-res", FLAVOR_RES},
    {"/v1/cohorts/adm-cohort", "{\"description\": \"seed\"}"},
    {"/v1/cluster-queues/adm-cq", CQ_OK},
    {"/v1/priority-classes/adm-default",
     "{\"value\": 10, \"preemption_policy\": \"Never\", \"default\": true}"},
    {"/v1/priority-classes/adm-other", "{\"value\": 20}"},
    {"/v1/teams/adm-team", TEAM_OK},
    {"/v1/teams/adm-team/queues/q1", "{\"cluster_queue\": \"adm-cq\"}"},
};

#define N_SEEDS (sizeof(seeds) / sizeof(seeds[0]))

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  char url[512];
  struct h_resp r;
  size_t i;

  ck_assert_int_eq(h_db_create("it_admin", url, sizeof(url)), 0);
  ck_assert_int_eq(h_server_start(&srv, url, env), 0);
  admin = h_token("platform", "admin", 3600);
  ck_assert_ptr_nonnull(admin);
  for (i = 0; i < N_SEEDS; i++) {
    h_request(&srv, "PUT", seeds[i][0], admin, seeds[i][1], NULL, &r);
    ck_assert_msg(r.status == 201, "seed %s: %ld %s", seeds[i][0], r.status,
                  r.body);
    h_resp_free(&r);
  }
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(admin);
}

/* ---- (a) invalid requests ---------------------------------------------- */

struct bad {
  const char *method, *path, *body;
  const char *if_match; /* If-Match value, or NULL */
  long status;
  const char *field; /* named in errors[]; NULL: no single field at fault */
};

#define FLV "/v1/flavors/x-bad"
#define CQV "/v1/cluster-queues/x-bad"
#define PCV "/v1/priority-classes/x-bad"
#define TMV "/v1/teams/x-bad"
#define QV "/v1/teams/adm-team/queues/x-bad"

static const struct bad bad[] = {
    /* flavors: fields, types, bounds, enums */
    {"PUT", FLV, "{" FL_SPOT ", \"colour\": \"red\"}", NULL, 400, "colour"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"ON_DEMAND\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
     NULL, 400, "provisioning_model"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"spot\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
     NULL, 400, "provisioning_model"},
    {"PUT", FLV,
     "{" FL_MACHINE ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
     NULL, 400, "provisioning_model"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", \"machine_type\": null, "
     "\"gpus_per_vm\": 0, \"locations\": [\"us-central1\"]}",
     NULL, 400, "machine_type"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": \"2\", \"locations\": [\"us-central1\"]}",
     NULL, 400, "gpus_per_vm"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2.5, \"locations\": [\"us-central1\"]}",
     NULL, 400, "gpus_per_vm"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 17, \"locations\": [\"us-central1\"]}",
     NULL, 400, "gpus_per_vm"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": -1, \"locations\": [\"us-central1\"]}",
     NULL, 400, "gpus_per_vm"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": []}",
     NULL, 400, "locations"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"US-CENTRAL1\"]}",
     NULL, 400, "locations[0]"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\", \"mars\"]}",
     NULL, 400, "locations[1]"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\", "
     "\"europe-west4\", \"us-central1\"]}",
     NULL, 400, "locations"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": \"us-central1\"}",
     NULL, 400, "locations"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [42]}",
     NULL, 400, "locations[0]"},
    {"PUT", FLV, "{" FL_SPOT ", \"price_per_gpu_hour_usd\": -0.5}", NULL, 400,
     "price_per_gpu_hour_usd"},
    {"PUT", FLV, "{" FL_SPOT ", \"on_demand_price_per_gpu_hour_usd\": \"x\"}",
     NULL, 400, "on_demand_price_per_gpu_hour_usd"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"RESERVATION\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
     NULL, 400, "reservation"},
    {"PUT", FLV, "{" FL_SPOT ", \"reservation\": \"adm-reservation\"}", NULL,
     400, "reservation"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"FLEX_START\", " FL_MACHINE
     ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], "
     "\"max_run_duration_s\": 604801}",
     NULL, 400, "max_run_duration_s"},
    {"PUT", FLV,
     "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "
     "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
     NULL, 400, "accelerator_type"},
    {"PUT", FLV, "{" FL_SPOT ", \"max_wait_s\": 0}", NULL, 400, "max_wait_s"},
    /* path names */
    {"PUT", "/v1/flavors/L4-Spot", FLAVOR_SPOT, NULL, 400, "name"},
    {"PUT", "/v1/flavors/l4_spot", FLAVOR_SPOT, NULL, 400, "name"},
    {"PUT", "/v1/flavors/" NAME64, FLAVOR_SPOT, NULL, 400, "name"},
    {"PUT", "/v1/flavors/-l4", FLAVOR_SPOT, NULL, 400, "name"},
    {"PUT", "/v1/flavors/l4%20spot", FLAVOR_SPOT, NULL, 400, "name"},
    /* a %00 must not cut the name short (this would store "nul") */
    {"PUT", "/v1/cohorts/nul%00name", "{}", NULL, 400, "name"},
    /* bodies that are not an object */
    {"PUT", FLV, "[]", NULL, 400, "body"},
    {"PUT", FLV, "{\"provisioning_model\": ", NULL, 400, "body"},
    {"PUT", FLV, "{" FL_SPOT ", \"gpus_per_vm\": 4}", NULL, 400, "body"},

    /* cohorts */
    {"PUT", "/v1/cohorts/x-bad", "{\"lending\": 1}", NULL, 400, "lending"},
    {"PUT", "/v1/cohorts/x-bad", "{\"description\": 42}", NULL, 400,
     "description"},
    {"PUT", "/v1/cohorts/x-bad", "{\"description\": \"" S100 S100 S100 "\"}",
     NULL, 400, "description"},
    {"PUT", "/v1/cohorts/X_BAD", "{}", NULL, 400, "name"},

    /* cluster queues: nested unknown fields */
    {"PUT", CQV,
     "{\"preemption\": {\"within_cluster_queue\": \"Never\", \"foo\": "
     "1}, " CQ_FL(GPU4) "}",
     NULL, 400, "preemption.foo"},
    {"PUT", CQV,
     "{\"flavors\": [{\"name\": \"adm-spot\", \"weight\": 1, "
     "\"resources\": " GPU4 "}]}",
     NULL, 400, "flavors[0].weight"},
    {"PUT", CQV, "{" CQ_FL("{\"tpu\": {\"nominal\": 4}}") "}", NULL, 400,
     "flavors[0].resources.tpu"},
    {"PUT", CQV, "{" CQ_FL("{\"gpu\": {\"nominal\": 4, \"max\": 8}}") "}", NULL,
     400, "flavors[0].resources.gpu.max"},
    /* enums and types */
    {"PUT", CQV, "{\"queueing_strategy\": \"FIFO\", " CQ_FL(GPU4) "}", NULL,
     400, "queueing_strategy"},
    {"PUT", CQV,
     "{\"preemption\": {\"reclaim_within_cohort\": \"Sometimes\"}, " CQ_FL(
         GPU4) "}",
     NULL, 400, "preemption.reclaim_within_cohort"},
    {"PUT", CQV,
     "{\"flavor_fungibility\": {\"when_can_borrow\": \"Maybe\"}, " CQ_FL(
         GPU4) "}",
     NULL, 400, "flavor_fungibility.when_can_borrow"},
    {"PUT", CQV, "{\"preemption\": \"Never\", " CQ_FL(GPU4) "}", NULL, 400,
     "preemption"},
    {"PUT", CQV, "{\"stop_policy\": \"Drain\", " CQ_FL(GPU4) "}", NULL, 400,
     "stop_policy"},
    {"PUT", CQV, "{\"cohort\": \"Adm_Cohort\", " CQ_FL(GPU4) "}", NULL, 400,
     "cohort"},
    {"PUT", CQV, "{\"fair_sharing_weight\": -1, " CQ_FL(GPU4) "}", NULL, 400,
     "fair_sharing_weight"},
    {"PUT", CQV, "{\"fair_sharing_weight\": \"1\", " CQ_FL(GPU4) "}", NULL, 400,
     "fair_sharing_weight"},
    {"PUT", CQV, "{\"min_runtime_before_preemption_s\": -5, " CQ_FL(GPU4) "}",
     NULL, 400, "min_runtime_before_preemption_s"},
    /* usage fair sharing: 0 is refused, not read as "off" */
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 0}, " CQ_FL(GPU4) "}", NULL,
     400, "usage_fair_sharing.half_life_s"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": -5}, " CQ_FL(GPU4) "}", NULL,
     400, "usage_fair_sharing.half_life_s"},
    {"PUT", CQV, "{\"usage_fair_sharing\": {}, " CQ_FL(GPU4) "}", NULL, 400,
     "usage_fair_sharing.half_life_s"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"resource_weights\": "
     "{\"gpu\": 0}}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.resource_weights"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"resource_weights\": "
     "{\"gpu\": -1}}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.resource_weights.gpu"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"precedence\": "
     "\"fifo\"}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.precedence"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"min_charge_s\": "
     "-1}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.min_charge_s"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"min_charge_s\": "
     "86401}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.min_charge_s"},
    {"PUT", CQV,
     "{\"usage_fair_sharing\": {\"half_life_s\": 60, \"min_charge_s\": "
     "\"60\"}, " CQ_FL(GPU4) "}",
     NULL, 400, "usage_fair_sharing.min_charge_s"},
    {"PUT", QV, "{\"cluster_queue\": \"adm-cq\", \"fair_sharing_weight\": 0}",
     NULL, 400, "fair_sharing_weight"},
    {"PUT", QV,
     "{\"cluster_queue\": \"adm-cq\", \"fair_sharing_weight\": \"2\"}", NULL,
     400, "fair_sharing_weight"},
    /* flavors and quotas */
    {"PUT", CQV, "{\"cohort\": \"adm-cohort\"}", NULL, 400, "flavors"},
    {"PUT", CQV, "{\"flavors\": []}", NULL, 400, "flavors"},
    {"PUT", CQV, "{\"flavors\": {\"adm-spot\": {}}}", NULL, 400, "flavors"},
    {"PUT", CQV, "{" CQ_FL("{}") "}", NULL, 400, "flavors[0].resources"},
    {"PUT", CQV,
     "{\"flavors\": [{\"name\": \"Adm-Spot\", \"resources\": " GPU4 "}]}", NULL,
     400, "flavors[0].name"},
    {"PUT", CQV, "{\"flavors\": [{\"resources\": " GPU4 "}]}", NULL, 400,
     "flavors[0].name"},
    {"PUT", CQV, "{" CQ_FL("{\"gpu\": {\"nominal\": -1}}") "}", NULL, 400,
     "flavors[0].resources.gpu.nominal"},
    {"PUT", CQV, "{" CQ_FL("{\"gpu\": {\"borrowing_limit\": 1}}") "}", NULL,
     400, "flavors[0].resources.gpu.nominal"},
    {"PUT", CQV, "{" CQ_FL("{\"gpu\": {\"nominal\": \"4\"}}") "}", NULL, 400,
     "flavors[0].resources.gpu.nominal"},
    {"PUT", CQV, "{" CQ_FL("{\"gpu\": {\"nominal\": null}}") "}", NULL, 400,
     "flavors[0].resources.gpu.nominal"},
    {"PUT", CQV,
     "{\"cohort\": \"adm-cohort\", " CQ_FL(
         "{\"gpu\": {\"nominal\": 4, \"borrowing_limit\": -1}}") "}",
     NULL, 400, "flavors[0].resources.gpu.borrowing_limit"},
    {"PUT", CQV,
     "{" CQ_FL("{\"gpu\": {\"nominal\": 4, \"borrowing_limit\": 2}}") "}", NULL,
     400, "flavors[0].resources.gpu.borrowing_limit"},
    {"PUT", CQV,
     "{\"cohort\": \"adm-cohort\", " CQ_FL(
         "{\"cpu_milli\": {\"nominal\": 4000, \"lending_limit\": 4001}}") "}",
     NULL, 400, "flavors[0].resources.cpu_milli.lending_limit"},
    {"PUT", CQV,
     "{\"cohort\": \"adm-cohort\", \"flavors\": ["
     "{\"name\": \"adm-spot\", \"resources\": " GPU4 "}, "
     "{\"name\": \"adm-spot\", \"resources\": " GPU4 "}]}",
     NULL, 400, "flavors"},
    /* references */
    {"PUT", CQV,
     "{\"flavors\": [{\"name\": \"adm-spot\", \"resources\": " GPU4 "}, "
     "{\"name\": \"no-such-flavor\", \"resources\": " GPU4 "}]}",
     NULL, 422, "flavors[1].name"},
    {"PUT", CQV, "{\"cohort\": \"no-such-cohort\", " CQ_FL(GPU4) "}", NULL, 422,
     "cohort"},

    /* priority classes */
    {"PUT", PCV, "{\"value\": 1.5}", NULL, 400, "value"},
    {"PUT", PCV, "{\"value\": \"10\"}", NULL, 400, "value"},
    {"PUT", PCV, "{\"value\": null}", NULL, 400, "value"},
    {"PUT", PCV, "{\"preemption_policy\": \"Never\"}", NULL, 400, "value"},
    {"PUT", PCV, "{\"value\": 2000000000}", NULL, 400, "value"},
    {"PUT", PCV, "{\"value\": 1e3}", NULL, 400, "value"},
    {"PUT", PCV, "{\"value\": 1, \"default\": \"yes\"}", NULL, 400, "default"},
    {"PUT", PCV, "{\"value\": 1, \"preemption_policy\": \"Always\"}", NULL, 400,
     "preemption_policy"},
    /* the default class stays the default until another one takes over */
    {"PUT", "/v1/priority-classes/adm-default",
     "{\"value\": 10, \"preemption_policy\": \"Never\", \"default\": false}",
     NULL, 409, NULL},
    {"PUT", "/v1/priority-classes/adm-default",
     "{\"value\": 10, \"preemption_policy\": \"Never\"}", NULL, 409, NULL},

    /* teams */
    {"PUT", TMV, "{\"budget_policy\": \"hold\"}", NULL, 400,
     "monthly_budget_usd"},
    {"PUT", TMV, "{\"budget_policy\": \"warn\", \"monthly_budget_usd\": null}",
     NULL, 400, "monthly_budget_usd"},
    {"PUT", TMV, "{\"monthly_budget_usd\": -5}", NULL, 400,
     "monthly_budget_usd"},
    {"PUT", TMV, "{\"budget_policy\": \"always\"}", NULL, 400, "budget_policy"},
    {"PUT", TMV, "{\"cost_center\": \"ML Research\"}", NULL, 400,
     "cost_center"},
    {"PUT", TMV, "{\"cost_center\": \"ml.research\"}", NULL, 400,
     "cost_center"},
    {"PUT", TMV, "{\"cost_center\": \"" S100 "\"}", NULL, 400, "cost_center"},
    {"PUT", TMV, "{\"display_name\": \"" S100 S100 "\"}", NULL, 400,
     "display_name"},
    {"PUT", TMV, "{\"owner\": \"someone\"}", NULL, 400, "owner"},
    {"PUT", "/v1/teams/Team_A", TEAM_OK, NULL, 400, "team"},

    /* team queues */
    {"PUT", QV, "{\"cluster_queue\": \"no-such-cq\"}", NULL, 422,
     "cluster_queue"},
    {"PUT", QV, "{}", NULL, 400, "cluster_queue"},
    {"PUT", QV, "{\"cluster_queue\": null}", NULL, 400, "cluster_queue"},
    {"PUT", QV, "{\"cluster_queue\": \"CQ!\"}", NULL, 400, "cluster_queue"},
    {"PUT", QV, "{\"cluster_queue\": [\"adm-cq\"]}", NULL, 400,
     "cluster_queue"},
    {"PUT", "/v1/teams/adm-team/queues/LP", "{\"cluster_queue\": \"adm-cq\"}",
     NULL, 400, "queue"},
    {"PUT", "/v1/teams/adm_team/queues/lp", "{\"cluster_queue\": \"adm-cq\"}",
     NULL, 400, "team"},

    /* preconditions */
    {"PUT", "/v1/cohorts/adm-cohort", "{\"description\": \"changed\"}",
     "\"999\"", 412, NULL},
    {"PUT", "/v1/cohorts/adm-cohort", "{\"description\": \"changed\"}",
     "W/\"1\"", 412, NULL},
    {"PUT", "/v1/cohorts/adm-ghost", "{}", "\"1\"", 412, NULL},
    {"PUT", "/v1/cohorts/adm-ghost", "{}", "*", 412, NULL},
    {"PUT", "/v1/teams/adm-team/queues/ghost",
     "{\"cluster_queue\": \"adm-cq\"}", "\"1\"", 412, NULL},
    {"PUT", "/v1/cohorts/adm-cohort", "{}", "abc", 400, "If-Match"},
    {"PUT", "/v1/cohorts/adm-cohort", "{}", "\"12", 400, "If-Match"},
    {"PUT", "/v1/cohorts/adm-cohort", "{}", "\"x\"", 400, "If-Match"},
    {"DELETE", "/v1/cohorts/adm-cohort", NULL, "\"999\"", 412, NULL},
    {"DELETE", "/v1/flavors/adm-res", NULL, "\"2\"", 412, NULL},
    {"DELETE", "/v1/flavors/adm-res", NULL, "1", 400, "If-Match"},

    /* objects still in use */
    {"DELETE", "/v1/flavors/adm-spot", NULL, NULL, 409, NULL},
    {"DELETE", "/v1/cohorts/adm-cohort", NULL, NULL, 409, NULL},
    {"DELETE", "/v1/cluster-queues/adm-cq", NULL, NULL, 409, NULL},
    {"DELETE", "/v1/priority-classes/adm-default", NULL, NULL, 409, NULL},
};

#define N_BAD (sizeof(bad) / sizeof(bad[0]))

START_TEST(invalid_requests)
{
  const struct bad *c = &bad[_i];
  char hdr[128];
  const char *hdrs[] = {hdr, NULL};
  struct h_resp r;

  snprintf(hdr, sizeof(hdr), "If-Match: %s", c->if_match ? c->if_match : "");
  ck_assert_int_eq(h_request(&srv, c->method, c->path, admin, c->body,
                             c->if_match ? hdrs : NULL, &r),
                   0);
  ck_assert_msg(r.status != 500, "#%d %s %s: 500: %s", _i, c->method, c->path,
                r.body);
  ck_assert_msg(h_is_problem(&r, c->status, c->field),
                "#%d %s %s %s: got %ld, want %ld naming %s: %s", _i, c->method,
                c->path, c->body ? c->body : "", r.status, c->status,
                c->field ? c->field : "(none)", r.body);
  h_resp_free(&r);
}
END_TEST

/* The refused requests stored nothing and changed nothing. */
START_TEST(invalid_requests_changed_nothing)
{
  static const char *const absent[] = {FLV,
                                       CQV,
                                       PCV,
                                       TMV,
                                       QV,
                                       "/v1/cohorts/x-bad",
                                       "/v1/cohorts/adm-ghost",
                                       "/v1/cohorts/nul",
                                       NULL};
  struct h_resp r;
  char etag[32];
  size_t i;

  for (i = 0; i < N_SEEDS; i++) {
    h_request(&srv, "GET", seeds[i][0], admin, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%s: %ld", seeds[i][0], r.status);
    ck_assert_str_eq(h_header(&r, "ETag", etag, sizeof(etag)), "\"1\"");
    h_resp_free(&r);
  }
  for (i = 0; absent[i]; i++) {
    h_request(&srv, "GET", absent[i], admin, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "%s: %ld", absent[i], r.status);
    h_resp_free(&r);
  }
  h_request(&srv, "GET", "/v1/priority-classes/adm-default", admin, NULL, NULL,
            &r);
  ck_assert(json_is_true(json_object_get(r.json, "default")));
  h_resp_free(&r);
}
END_TEST

/* One request reports every mistake it holds, each by its path. */
START_TEST(all_mistakes_reported_at_once)
{
  struct h_resp r;

  h_request(&srv, "PUT", FLV, admin,
            "{\"provisioning_model\": \"MAGIC\", \"machine_type\": \"x\", "
            "\"gpus_per_vm\": 99, \"locations\": [\"us-central1\", \"BAD\"], "
            "\"colour\": \"red\"}",
            NULL, &r);
  ck_assert(h_is_problem(&r, 400, "provisioning_model"));
  ck_assert(h_is_problem(&r, 400, "gpus_per_vm"));
  ck_assert(h_is_problem(&r, 400, "locations[1]"));
  ck_assert(h_is_problem(&r, 400, "colour"));
  h_resp_free(&r);
}
END_TEST

/* A team queue needs its team: 404 when the team does not exist. */
START_TEST(queue_of_missing_team_is_404)
{
  struct h_resp r;

  h_request(&srv, "PUT", "/v1/teams/no-such-team/queues/q1", admin,
            "{\"cluster_queue\": \"adm-cq\"}", NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/teams/no-such-team/queues", admin, NULL, NULL,
            &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

/* ---- (b) round trips --------------------------------------------------- */

struct kind {
  const char *path, *list, *body, *changed;
};

static const struct kind kinds[] = {
    {"/v1/flavors/rt-flex", "/v1/flavors?limit=500",
     "{\"provisioning_model\": \"FLEX_START\", \"machine_type\": "
     "\"a3-highgpu-8g\", \"accelerator_type\": \"nvidia-h100-80gb\", "
     "\"gpus_per_vm\": 8, \"locations\": [\"us-east4\", \"europe-west4\"], "
     "\"reservation\": null, \"price_per_gpu_hour_usd\": 2.25, "
     "\"on_demand_price_per_gpu_hour_usd\": 3.93, \"max_run_duration_s\": "
     "86400, \"max_wait_s\": 3600}",
     "{\"provisioning_model\": \"FLEX_START\", \"machine_type\": "
     "\"a3-highgpu-8g\", \"accelerator_type\": \"nvidia-h100-80gb\", "
     "\"gpus_per_vm\": 8, \"locations\": [\"europe-west4\", \"us-east4\"], "
     "\"reservation\": null, \"price_per_gpu_hour_usd\": 2.25, "
     "\"on_demand_price_per_gpu_hour_usd\": 3.93, \"max_run_duration_s\": "
     "86400, \"max_wait_s\": 1800}"},
    {"/v1/flavors/rt-reserved", "/v1/flavors?limit=500",
     "{\"provisioning_model\": \"RESERVATION\", \"machine_type\": "
     "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
     "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], \"reservation\": "
     "\"rt-reservation\", \"price_per_gpu_hour_usd\": 0.71, "
     "\"on_demand_price_per_gpu_hour_usd\": 0.71, \"max_run_duration_s\": "
     "null, \"max_wait_s\": 7200}",
     "{\"provisioning_model\": \"RESERVATION\", \"machine_type\": "
     "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
     "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], \"reservation\": "
     "\"rt-reservation-2\", \"price_per_gpu_hour_usd\": 0.65, "
     "\"on_demand_price_per_gpu_hour_usd\": 0.71, \"max_run_duration_s\": "
     "null, \"max_wait_s\": 7200}"},
    {"/v1/cohorts/rt-cohort", "/v1/cohorts?limit=500",
     "{\"description\": \"Round trip cohort.\"}", "{\"description\": null}"},
    {"/v1/cluster-queues/rt-cq", "/v1/cluster-queues?limit=500",
     "{\"cohort\": \"rt-cohort\", \"queueing_strategy\": \"StrictFIFO\", "
     "\"preemption\": {\"within_cluster_queue\": \"LowerPriority\", "
     "\"reclaim_within_cohort\": \"Any\"}, \"flavor_fungibility\": "
     "{\"when_can_borrow\": \"TryNextFlavor\", \"when_can_preempt\": "
     "\"Preempt\"}, \"fair_sharing_weight\": 2.5, \"flavors\": ["
     "{\"name\": \"rt-reserved\", \"resources\": {"
     "\"gpu\": {\"nominal\": 8, \"borrowing_limit\": 4, \"lending_limit\": "
     "2}, \"cpu_milli\": {\"nominal\": 8000, \"borrowing_limit\": null, "
     "\"lending_limit\": null}, \"memory_mib\": {\"nominal\": 40960, "
     "\"borrowing_limit\": 0, \"lending_limit\": 40960}}}, "
     "{\"name\": \"rt-flex\", \"resources\": {\"gpu\": {\"nominal\": 16, "
     "\"borrowing_limit\": null, \"lending_limit\": null}}}], "
     "\"min_runtime_before_preemption_s\": 300, "
     "\"default_max_run_duration_s\": 7200, \"stop_policy\": \"Hold\", "
     "\"usage_fair_sharing\": {\"half_life_s\": 600, \"min_charge_s\": 30, "
     "\"resource_weights\": {\"gpu\": 1, \"cpu\": 0.5, \"memory\": 0}, "
     "\"precedence\": \"priority\"}}",
     "{\"cohort\": null, \"queueing_strategy\": \"BestEffortFIFO\", "
     "\"preemption\": {\"within_cluster_queue\": \"Never\", "
     "\"reclaim_within_cohort\": \"Never\"}, \"flavor_fungibility\": "
     "{\"when_can_borrow\": \"Borrow\", \"when_can_preempt\": "
     "\"TryNextFlavor\"}, \"fair_sharing_weight\": 1, \"flavors\": ["
     "{\"name\": \"rt-flex\", \"resources\": {\"gpu\": {\"nominal\": 16, "
     "\"borrowing_limit\": null, \"lending_limit\": null}}}], "
     "\"min_runtime_before_preemption_s\": 0, "
     "\"default_max_run_duration_s\": null, \"stop_policy\": \"None\", "
     "\"usage_fair_sharing\": null}"},
    {"/v1/priority-classes/rt-class", "/v1/priority-classes?limit=500",
     "{\"value\": -5, \"preemption_policy\": \"Never\", \"default\": false, "
     "\"description\": \"Round trip class.\"}",
     "{\"value\": 1000000000, \"preemption_policy\": "
     "\"PreemptLowerPriority\", \"default\": false, \"description\": null}"},
    {"/v1/teams/rt-team", "/v1/teams?limit=500",
     "{\"display_name\": \"Round Trip \\u00e9quipe\", \"cost_center\": "
     "\"rt_cc-1\", \"monthly_budget_usd\": 1234.5, \"budget_policy\": "
     "\"hold\"}",
     "{\"display_name\": null, \"cost_center\": null, "
     "\"monthly_budget_usd\": null, \"budget_policy\": \"none\"}"},
    {"/v1/teams/rt-team/queues/main", "/v1/teams/rt-team/queues?limit=500",
     "{\"cluster_queue\": \"rt-cq\", \"description\": \"Main queue.\", "
     "\"fair_sharing_weight\": 2.5}",
     "{\"cluster_queue\": \"adm-cq\", \"description\": \"Moved.\", "
     "\"fair_sharing_weight\": 1}"},
};

#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *last_segment(const char *path)
{
  return strrchr(path, '/') + 1;
}

/* Every field of body (JSON text) appears, equal, in obj. */
static void fields_equal(const char *what, const char *body, json_t *obj)
{
  json_t *in = json_loads(body, 0, NULL), *v;
  const char *k;

  ck_assert_msg(in != NULL, "%s: bad test body", what);
  json_object_foreach (in, k, v) {
    json_t *got = json_object_get(obj, k);
    char *want_s = json_dumps(v, JSON_ENCODE_ANY);
    char *got_s = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
    ck_assert_msg(got && json_equal(v, got), "%s: %s is %s, want %s", what, k,
                  got_s ? got_s : "(absent)", want_s);
    free(want_s);
    free(got_s);
  }
  json_decref(in);
  ck_assert_str_eq(json_string_value(json_object_get(obj, "name")),
                   last_segment(strstr(what, "/v1/")));
  ck_assert_ptr_nonnull(json_string_value(json_object_get(obj, "created_at")));
  ck_assert_ptr_nonnull(json_string_value(json_object_get(obj, "updated_at")));
  ck_assert_int_eq(
      (int)strlen(json_string_value(json_object_get(obj, "created_at"))), 20);
}

/*
 * PUT body to path and check the answer: status, ETag, Location exactly on
 * create, and (unless partial) every field of body echoed unchanged.
 * *obj (may be NULL) receives the response object, a new reference.
 */
static void put_checked(const char *path, const char *body,
                        const char *if_match, long status, char *etag,
                        size_t etaglen, json_t **obj, bool partial)
{
  char hdr[128], what[256];
  const char *hdrs[] = {hdr, NULL};
  struct h_resp r;

  snprintf(hdr, sizeof(hdr), "If-Match: %s", if_match ? if_match : "");
  snprintf(what, sizeof(what), "PUT %s", path);
  h_request(&srv, "PUT", path, admin, body, if_match ? hdrs : NULL, &r);
  ck_assert_msg(r.status == status, "%s: %ld, want %ld: %s", what, r.status,
                status, r.body);
  if (status < 300) {
    char loc[512];
    ck_assert_msg(h_header(&r, "ETag", etag, etaglen) != NULL, "%s: no ETag",
                  what);
    if (status == 201) {
      ck_assert_msg(h_header(&r, "Location", loc, sizeof(loc)) != NULL,
                    "%s: no Location", what);
      ck_assert_str_eq(loc, path);
    } else {
      ck_assert_msg(h_header(&r, "Location", loc, sizeof(loc)) == NULL,
                    "%s: Location on an update", what);
    }
    if (!partial)
      fields_equal(what, body, r.json);
    if (obj)
      *obj = json_incref(r.json);
  }
  h_resp_free(&r);
}

static void put(const char *path, const char *body, const char *if_match,
                long status, char *etag, size_t etaglen, json_t **obj)
{
  put_checked(path, body, if_match, status, etag, etaglen, obj, false);
}

static void get(const char *path, const char *body, const char *etag,
                json_t **obj)
{
  char got[64], what[256];
  struct h_resp r;

  snprintf(what, sizeof(what), "GET %s", path);
  h_request(&srv, "GET", path, admin, NULL, NULL, &r);
  ck_assert_msg(r.status == 200, "%s: %ld %s", what, r.status, r.body);
  ck_assert_msg(h_header(&r, "ETag", got, sizeof(got)) != NULL, "%s: no ETag",
                what);
  ck_assert_str_eq(got, etag);
  fields_equal(what, body, r.json);
  if (obj)
    *obj = json_incref(r.json);
  h_resp_free(&r);
}

static bool listed(const char *list, const char *name)
{
  struct h_resp r;
  json_t *o;
  size_t i;
  bool found = false;

  h_request(&srv, "GET", list, admin, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  json_array_foreach (json_object_get(r.json, "items"), i, o) {
    found =
        found || !strcmp(json_string_value(json_object_get(o, "name")), name);
  }
  h_resp_free(&r);
  return found;
}

START_TEST(round_trip_every_kind)
{
  char e1[64], e2[64], e3[64], e4[64];
  json_t *put_obj = NULL, *get_obj = NULL;
  size_t i;

  for (i = 0; i < N_KINDS; i++) {
    const struct kind *k = &kinds[i];

    /* create: 201 + Location; GET shows exactly what was PUT */
    put(k->path, k->body, NULL, 201, e1, sizeof(e1), &put_obj);
    get(k->path, k->body, e1, &get_obj);
    ck_assert_msg(json_equal(put_obj, get_obj), "%s: PUT and GET differ",
                  k->path);
    json_decref(put_obj);
    json_decref(get_obj);
    ck_assert_msg(listed(k->list, last_segment(k->path)), "%s not listed",
                  k->path);

    /* the same body again: nothing changes, the ETag stays */
    put(k->path, k->body, NULL, 200, e2, sizeof(e2), NULL);
    ck_assert_str_eq(e2, e1);

    /* a change: 200 and a new ETag */
    put(k->path, k->changed, NULL, 200, e2, sizeof(e2), NULL);
    ck_assert_str_ne(e2, e1);
    get(k->path, k->changed, e2, NULL);

    /* If-Match with the current ETag succeeds; the old one is stale */
    put(k->path, k->body, e2, 200, e3, sizeof(e3), NULL);
    ck_assert_str_ne(e3, e2);
    put(k->path, k->changed, e2, 412, e4, sizeof(e4), NULL);
    put(k->path, k->changed, "*", 200, e4, sizeof(e4), NULL);
    ck_assert_str_ne(e4, e3);
    put(k->path, k->body, e1, 412, e4, sizeof(e4), NULL);
    get(k->path, k->changed, e4, NULL);
    /* back to the original body for the objects that refer to it */
    put(k->path, k->body, NULL, 200, e4, sizeof(e4), NULL);
  }

  /* teams cannot be deleted */
  {
    struct h_resp r;
    h_request(&srv, "DELETE", "/v1/teams/rt-team", admin, NULL, NULL, &r);
    ck_assert(h_is_problem(&r, 405, NULL));
    h_resp_free(&r);
  }

  /* delete in reverse order of reference: 204, then 404 */
  for (i = N_KINDS; i-- > 0;) {
    const struct kind *k = &kinds[i];
    char etag[64], hdr[128];
    const char *hdrs[] = {hdr, NULL};
    struct h_resp r;

    if (!strcmp(k->path, "/v1/teams/rt-team"))
      continue;
    h_request(&srv, "GET", k->path, admin, NULL, NULL, &r);
    ck_assert_ptr_nonnull(h_header(&r, "ETag", etag, sizeof(etag)));
    h_resp_free(&r);
    snprintf(hdr, sizeof(hdr), "If-Match: %s", etag);
    h_request(&srv, "DELETE", k->path, admin, NULL, i % 2 ? hdrs : NULL, &r);
    ck_assert_msg(r.status == 204, "DELETE %s: %ld %s", k->path, r.status,
                  r.body);
    ck_assert_uint_eq(r.body_len, 0);
    h_resp_free(&r);
    h_request(&srv, "GET", k->path, admin, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "GET %s after DELETE: %ld",
                  k->path, r.status);
    h_resp_free(&r);
    h_request(&srv, "DELETE", k->path, admin, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "DELETE %s twice: %ld", k->path,
                  r.status);
    h_resp_free(&r);
    ck_assert(!listed(k->list, last_segment(k->path)));
  }
}
END_TEST

/* Key order does not make a change: the ETag stays. */
START_TEST(reordered_body_is_unchanged)
{
  char e1[64], e2[64];

  put("/v1/teams/rt-order",
      "{\"display_name\": \"Order\", \"budget_policy\": \"warn\", "
      "\"monthly_budget_usd\": 10}",
      NULL, 201, e1, sizeof(e1), NULL);
  put("/v1/teams/rt-order",
      "{\"monthly_budget_usd\": 10, \"budget_policy\": \"warn\", "
      "\"display_name\": \"Order\"}",
      NULL, 200, e2, sizeof(e2), NULL);
  ck_assert_str_eq(e1, e2);
}
END_TEST

/* Absent optional fields come back with their documented defaults. */
START_TEST(defaults_are_filled_in)
{
  char e[64];
  json_t *o = NULL, *gpu;

  put("/v1/flavors/df-spot", FLAVOR_SPOT, NULL, 201, e, sizeof(e), &o);
  ck_assert(json_is_null(json_object_get(o, "reservation")));
  ck_assert_int_eq(json_integer_value(json_object_get(o, "max_wait_s")), 7200);
  ck_assert(json_equal(json_object_get(o, "on_demand_price_per_gpu_hour_usd"),
                       json_object_get(o, "price_per_gpu_hour_usd")));
  json_decref(o);

  put("/v1/flavors/df-flex",
      "{\"provisioning_model\": \"FLEX_START\", " FL_MACHINE
      ", \"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]}",
      NULL, 201, e, sizeof(e), &o);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "max_run_duration_s")),
                   604800);
  json_decref(o);

  put_checked("/v1/cluster-queues/df-cq", "{" CQ_FL(GPU4) "}", NULL, 201, e,
              sizeof(e), &o, true);
  ck_assert(json_is_null(json_object_get(o, "cohort")));
  ck_assert_str_eq(json_string_value(json_object_get(o, "queueing_strategy")),
                   "BestEffortFIFO");
  ck_assert_str_eq(
      json_string_value(json_object_get(
          json_object_get(o, "flavor_fungibility"), "when_can_borrow")),
      "Borrow");
  ck_assert_str_eq(
      json_string_value(json_object_get(
          json_object_get(o, "flavor_fungibility"), "when_can_preempt")),
      "TryNextFlavor");
  ck_assert_str_eq(
      json_string_value(json_object_get(json_object_get(o, "preemption"),
                                        "within_cluster_queue")),
      "Never");
  ck_assert(json_number_value(json_object_get(o, "fair_sharing_weight")) ==
            1.0);
  ck_assert_int_eq(
      json_integer_value(json_object_get(o, "min_runtime_before_preemption_s")),
      0);
  ck_assert_str_eq(json_string_value(json_object_get(o, "stop_policy")),
                   "None");
  gpu = json_object_get(
      json_object_get(json_array_get(json_object_get(o, "flavors"), 0),
                      "resources"),
      "gpu");
  ck_assert(json_is_null(json_object_get(gpu, "borrowing_limit")));
  ck_assert(json_is_null(json_object_get(gpu, "lending_limit")));
  ck_assert_ptr_nonnull(json_object_get(json_object_get(o, "status"), "usage"));
  json_decref(o);

  put("/v1/teams/df-team", "{}", NULL, 201, e, sizeof(e), &o);
  ck_assert_str_eq(json_string_value(json_object_get(o, "budget_policy")),
                   "none");
  json_decref(o);

  /* the longest name is 63 characters */
  put("/v1/cohorts/" NAME63, "{}", NULL, 201, e, sizeof(e), NULL);
}
END_TEST

static json_t *get_obj(const char *path, char *etag, size_t etaglen)
{
  struct h_resp r;
  json_t *o;

  h_request(&srv, "GET", path, admin, NULL, NULL, &r);
  ck_assert_msg(r.status == 200, "GET %s: %ld", path, r.status);
  if (etag)
    ck_assert_ptr_nonnull(h_header(&r, "ETag", etag, etaglen));
  o = json_incref(r.json);
  h_resp_free(&r);
  return o;
}

/* Making class B the default takes the flag from class A. */
START_TEST(default_priority_class_moves)
{
  char ea[64], ea2[64], eb[64];
  const char *a_body = "{\"value\": 100, \"preemption_policy\": \"Never\", "
                       "\"default\": true, \"description\": \"Class A.\"}";
  json_t *a, *b, *o;
  struct h_resp r;
  size_t i, defaults = 0;

  put("/v1/priority-classes/dm-a", a_body, NULL, 201, ea, sizeof(ea), NULL);
  put("/v1/priority-classes/dm-b",
      "{\"value\": 200, \"preemption_policy\": \"PreemptLowerPriority\", "
      "\"default\": true}",
      NULL, 201, eb, sizeof(eb), NULL);

  a = get_obj("/v1/priority-classes/dm-a", ea2, sizeof(ea2));
  b = get_obj("/v1/priority-classes/dm-b", NULL, 0);
  ck_assert(json_is_false(json_object_get(a, "default")));
  ck_assert(json_is_true(json_object_get(b, "default")));
  /* A keeps its other fields, and its ETag says it changed */
  ck_assert_int_eq(json_integer_value(json_object_get(a, "value")), 100);
  ck_assert_str_eq(json_string_value(json_object_get(a, "preemption_policy")),
                   "Never");
  ck_assert_str_eq(json_string_value(json_object_get(a, "description")),
                   "Class A.");
  ck_assert_str_ne(ea, ea2);
  json_decref(a);
  json_decref(b);

  /* exactly one default among all classes */
  h_request(&srv, "GET", "/v1/priority-classes?limit=500", admin, NULL, NULL,
            &r);
  ck_assert_int_eq(r.status, 200);
  json_array_foreach (json_object_get(r.json, "items"), i, o) {
    if (json_is_true(json_object_get(o, "default")))
      defaults++;
  }
  ck_assert_uint_eq(defaults, 1);
  h_resp_free(&r);

  /* A is no longer the default, so it may be deleted; B may not */
  h_request(&srv, "DELETE", "/v1/priority-classes/dm-b", admin, NULL, NULL, &r);
  ck_assert(h_is_problem(&r, 409, NULL));
  h_resp_free(&r);
  h_request(&srv, "DELETE", "/v1/priority-classes/dm-a", admin, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 204);
  h_resp_free(&r);
}
END_TEST

Suite *admin_suite(void)
{
  Suite *s = suite_create("admin");
  TCase *tc = tcase_create("objects");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  /* the invalid requests expect the seeds as setup() left them */
  tcase_add_loop_test(tc, invalid_requests, 0, (int)N_BAD);
  tcase_add_test(tc, invalid_requests_changed_nothing);
  tcase_add_test(tc, all_mistakes_reported_at_once);
  tcase_add_test(tc, queue_of_missing_team_is_404);
  tcase_add_test(tc, round_trip_every_kind);
  tcase_add_test(tc, reordered_body_is_unchanged);
  tcase_add_test(tc, defaults_are_filled_in);
  tcase_add_test(tc, default_priority_class_moves);
  suite_add_tcase(s, tc);
  return s;
}
