/*
 * test_fairshare.c — fair share over time as tables of cases: the
 * request fields (usage_fair_sharing, fair_sharing_weight), the decay and
 * accrual math (half-lives, long idle, the minimum charge, clocks that
 * step backwards), scores and their ties, and a property: the
 * incremental usage equals a brute-force integral of the job history.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "handlers/fairshare_fields.h"
#include "scheduler/fairshare.h"
#include "scheduler/state.h"
#include "server/problem.h"
#include "server/req.h"
#include "tests/unit/rng.h"

/* ------------------------------------------------- ordering in the cycle */

/*
 * One cycle on a small world: cluster queues with one GPU flavor each
 * (nominal, in cohort 0 or none), team queues with scores, admitted and
 * pending 1-GPU jobs. The expected outcome is the admitted pending jobs in
 * decision order and the evicted admitted ones, by name.
 */
struct w_cq {
  int nominal, cohort; /* cohort -1: none */
  bool fs;             /* usage_fair_sharing set */
  enum sched_precedence prec;
  bool preempt; /* within_cluster_queue LowerPriority */
};
struct w_tq {
  int cq;
  double weight, score;
};
struct w_job {
  const char *name; /* NULL ends the list */
  int tq;           /* its team queue; its CQ is the team queue's */
  int prio;
  int64_t created; /* admitted jobs: admitted_at */
};

#define MAX_W 32

static const struct {
  const char *what;
  struct w_cq cqs[3];
  int n_cqs;
  struct w_tq tqs[3];
  int n_tqs;
  struct w_job admitted[4];
  struct w_job pending[MAX_W];
  const char *want_admitted;
  const char *want_evicted;
} order_cases[] = {
    {"usage: the lower score first, whatever the arrival",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 100}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "b1",
     ""},
    {"usage: score before priority (Kueue's order)",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 100}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 10, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "b1",
     ""},
    {"priority: priority before score",
     {{1, -1, true, SCHED_PRECEDENCE_PRIORITY, false}},
     1,
     {{0, 1, 100}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 10, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "a1",
     ""},
    {"priority: equal priority, the score decides",
     {{1, -1, true, SCHED_PRECEDENCE_PRIORITY, false}},
     1,
     {{0, 1, 100}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 5, 1}, {"b1", 1, 5, 2}, {NULL, 0, 0, 0}},
     "b1",
     ""},
    {"scores within 1e-9 relative tie: creation decides",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 1e12 * (1 + 5e-10)}, {0, 1, 1e12}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "a1",
     ""},
    {"scores 2e-9 relative (2,000 units) apart do not tie",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 1e12 * (1 + 2e-9)}, {0, 1, 1e12}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "b1",
     ""},
    {"scores one unit apart tie: creation decides (usage forgotten)",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 1.0}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "a1",
     ""},
    {"scores just over one unit apart do not tie",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 1.000001}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"b1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "b1",
     ""},
    {"the weight divides the usage",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 4, 30}, {0, 1, 40}}, /* scores as given: a's 30 < b's 40 */
     2,
     {{NULL, 0, 0, 0}},
     {{"b1", 1, 0, 1}, {"a1", 0, 0, 2}, {NULL, 0, 0, 0}},
     "a1",
     ""},
    {"a burst is charged at admission: the newcomer alternates",
     {{4, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 0}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1},
      {"a2", 0, 0, 2},
      {"a3", 0, 0, 3},
      {"a4", 0, 0, 4},
      {"a5", 0, 0, 5},
      {"a6", 0, 0, 6},
      {"b1", 1, 0, 20},
      {"b2", 1, 0, 21},
      {"b3", 1, 0, 22},
      {NULL, 0, 0, 0}},
     "a1,b1,a2,b2",
     ""},
    {"the charge is divided by the weight too",
     {{3, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 2, 0}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1},
      {"a2", 0, 0, 2},
      {"a3", 0, 0, 3},
      {"b1", 1, 0, 20},
      {"b2", 1, 0, 21},
      {NULL, 0, 0, 0}},
     "a1,b1,a2", /* a at 30 < b at 60 */
     ""},
    {"off: arrival order, scores ignored",
     {{2, -1, false, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 1000}, {0, 1, 0}},
     2,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"a2", 0, 0, 2}, {"b1", 1, 0, 3}, {NULL, 0, 0, 0}},
     "a1,a2",
     ""},
    {"priority still orders within a team queue",
     {{1, -1, true, SCHED_PRECEDENCE_USAGE, false}},
     1,
     {{0, 1, 0}},
     1,
     {{NULL, 0, 0, 0}},
     {{"a1", 0, 0, 1}, {"a2", 0, 9, 2}, {NULL, 0, 0, 0}},
     "a2",
     ""},
    {"victims of equal priority: the highest score first",
     {{2, -1, true, SCHED_PRECEDENCE_USAGE, true}},
     1,
     {{0, 1, 10}, {0, 1, 500}, {0, 1, 0}},
     3,
     /* without the score, the most recently admitted (v1) would go */
     {{"v1", 0, 0, 200}, {"v2", 1, 0, 100}, {NULL, 0, 0, 0}},
     {{"p1", 2, 10, 300}, {NULL, 0, 0, 0}},
     "",
     "v2"},
    {"victims whose scores tie (one unit apart): the latest admitted first",
     {{2, -1, true, SCHED_PRECEDENCE_USAGE, true}},
     1,
     {{0, 1, 10}, {0, 1, 10.5}, {0, 1, 0}},
     3,
     {{"v1", 0, 0, 200}, {"v2", 1, 0, 100}, {NULL, 0, 0, 0}},
     {{"p1", 2, 10, 300}, {NULL, 0, 0, 0}},
     "",
     "v1"},
    {"victims: priority still before the score",
     {{2, -1, true, SCHED_PRECEDENCE_USAGE, true}},
     1,
     {{0, 1, 10}, {0, 1, 500}, {0, 1, 0}},
     3,
     {{"v1", 0, 0, 200}, {"v2", 1, 5, 100}, {NULL, 0, 0, 0}},
     {{"p1", 2, 10, 300}, {NULL, 0, 0, 0}},
     "",
     "v1"},
    {"cohort of usage CQs: the borrower with less usage first (#9734)",
     {{0, 0, true, SCHED_PRECEDENCE_USAGE, false},
      {0, 0, true, SCHED_PRECEDENCE_USAGE, false},
      {1, 0, true, SCHED_PRECEDENCE_USAGE, false}},
     3,
     {{0, 1, 500}, {1, 1, 10}},
     2,
     {{NULL, 0, 0, 0}},
     {{"x1", 0, 0, 1}, {"y1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "y1",
     ""},
    {"cohort with a CQ not by usage: the instantaneous share as before",
     {{0, 0, true, SCHED_PRECEDENCE_USAGE, false},
      {0, 0, true, SCHED_PRECEDENCE_USAGE, false},
      {1, 0, false, SCHED_PRECEDENCE_USAGE, false}},
     3,
     {{0, 1, 500}, {1, 1, 10}},
     2,
     {{NULL, 0, 0, 0}},
     {{"x1", 0, 0, 1}, {"y1", 1, 0, 2}, {NULL, 0, 0, 0}},
     "x1",
     ""},
};

static void names_of(char *out, size_t n, const int *idx, int k,
                     const struct w_job *jobs)
{
  size_t used = 0;
  int i;

  out[0] = '\0';
  for (i = 0; i < k; i++) {
    int w =
        snprintf(out + used, n - used, "%s%s", i ? "," : "", jobs[idx[i]].name);
    ck_assert(w > 0 && (size_t)w < n - used);
    used += (size_t)w;
  }
}

START_TEST(order)
{
  const __typeof__(order_cases[0]) *oc = &order_cases[_i];
  struct sched_cq cqs[3];
  struct sched_tq tqs[3];
  struct sched_job adm[4], pend[MAX_W];
  struct sched_input in;
  struct sched_output out;
  int na = 0, np = 0, i, idx[MAX_W];
  char got[256];

  memset(cqs, 0, sizeof(cqs));
  memset(&in, 0, sizeof(in));
  for (i = 0; i < oc->n_cqs; i++) {
    cqs[i].cohort = oc->cqs[i].cohort;
    cqs[i].weight = 1;
    cqs[i].within =
        oc->cqs[i].preempt ? SCHED_WITHIN_LOWER_PRIORITY : SCHED_WITHIN_NEVER;
    cqs[i].usage_fs = oc->cqs[i].fs;
    cqs[i].precedence = oc->cqs[i].prec;
    cqs[i].fs_weights[SCHED_GPU] = 1;
    cqs[i].fs_min_charge_s = FS_MIN_CHARGE_S;
    cqs[i].n_flavors = 1;
    cqs[i].flavors[0].flavor = 0;
    cqs[i].flavors[0].quota[SCHED_GPU] = (struct sched_quota){
        oc->cqs[i].nominal, SCHED_UNLIMITED, SCHED_UNLIMITED};
    cqs[i].flavors[0].quota[SCHED_CPU] =
        (struct sched_quota){0, SCHED_UNLIMITED, SCHED_UNLIMITED};
    cqs[i].flavors[0].quota[SCHED_MEM] =
        (struct sched_quota){0, SCHED_UNLIMITED, SCHED_UNLIMITED};
  }
  for (i = 0; i < oc->n_tqs; i++)
    tqs[i] =
        (struct sched_tq){oc->tqs[i].cq, oc->tqs[i].weight, oc->tqs[i].score};
  for (; oc->admitted[na].name; na++) {
    const struct w_job *w = &oc->admitted[na];
    memset(&adm[na], 0, sizeof(adm[na]));
    adm[na].cq = oc->tqs[w->tq].cq;
    adm[na].tq = w->tq;
    adm[na].team = -1;
    adm[na].priority = w->prio;
    adm[na].created_at = w->created;
    adm[na].admitted_at = w->created;
    adm[na].seq = na + 1;
    adm[na].request[SCHED_GPU] = 1;
  }
  for (; oc->pending[np].name; np++) {
    const struct w_job *w = &oc->pending[np];
    memset(&pend[np], 0, sizeof(pend[np]));
    pend[np].cq = oc->tqs[w->tq].cq;
    pend[np].tq = w->tq;
    pend[np].team = -1;
    pend[np].priority = w->prio;
    pend[np].can_preempt = true;
    pend[np].created_at = w->created;
    pend[np].seq = 100 + np;
    pend[np].request[SCHED_GPU] = 1;
  }
  in.now = 1000;
  in.n_flavors = 1;
  in.n_cohorts = 1;
  in.cqs = cqs;
  in.n_cqs = oc->n_cqs;
  in.admitted = adm;
  in.n_admitted = na;
  in.pending = pend;
  in.n_pending = np;
  in.tqs = tqs;
  in.n_tqs = oc->n_tqs;
  ck_assert_int_eq(sched_cycle(&in, &out), 0);
  for (i = 0; i < out.n_admissions; i++)
    idx[i] = out.admissions[i].job;
  names_of(got, sizeof(got), idx, out.n_admissions, oc->pending);
  ck_assert_msg(!strcmp(got, oc->want_admitted),
                "case \"%s\": admitted \"%s\", want \"%s\"", oc->what, got,
                oc->want_admitted);
  for (i = 0; i < out.n_evictions; i++)
    idx[i] = out.evictions[i].job;
  names_of(got, sizeof(got), idx, out.n_evictions, oc->admitted);
  ck_assert_msg(!strcmp(got, oc->want_evicted),
                "case \"%s\": evicted \"%s\", want \"%s\"", oc->what, got,
                oc->want_evicted);
  sched_output_free(&out);
}
END_TEST

/* Bad fair-share input is refused, not guessed at. */
START_TEST(order_invalid)
{
  struct sched_cq cq;
  struct sched_tq tq = {0, 0, 0}; /* weight 0 */
  struct sched_input in;
  struct sched_output out;

  memset(&cq, 0, sizeof(cq));
  memset(&in, 0, sizeof(in));
  cq.cohort = -1;
  cq.usage_fs = true;
  in.cqs = &cq;
  in.n_cqs = 1;
  in.tqs = &tq;
  in.n_tqs = 1;
  ck_assert_int_eq(sched_cycle(&in, &out), -1);
  tq.weight = 1;
  tq.score = -1;
  ck_assert_int_eq(sched_cycle(&in, &out), -1);
  tq.score = NAN;
  ck_assert_int_eq(sched_cycle(&in, &out), -1);
  tq.score = 0;
  tq.cq = 1;
  ck_assert_int_eq(sched_cycle(&in, &out), -1);
  tq.cq = 0;
  ck_assert_int_eq(sched_cycle(&in, &out), 0);
  sched_output_free(&out);
}
END_TEST

Suite *fairshare_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define S 1000000LL /* µs per second */

/* ---------------------------------------------------------------- fields */

static const struct v_field cq_fields[] = {FAIRSHARE_CQ_FIELD, {.key = NULL}};
static const struct v_field tq_fields[] = {FAIRSHARE_TQ_FIELD, {.key = NULL}};

static const struct {
  const char *what;
  bool cq;           /* cluster queue fields, else team queue */
  const char *in;    /* body */
  const char *out;   /* normalised, or NULL when refused */
  const char *field; /* the first field named, when refused */
} field_cases[] = {
    {"off by default", true, "{}", "{\"usage_fair_sharing\":null}", NULL},
    {"null is off", true, "{\"usage_fair_sharing\":null}",
     "{\"usage_fair_sharing\":null}", NULL},
    {"defaults filled", true, "{\"usage_fair_sharing\":{\"half_life_s\":3600}}",
     "{\"usage_fair_sharing\":{\"half_life_s\":3600,\"min_charge_s\":60,"
     "\"resource_weights\":{\"gpu\":1,\"cpu\":0,\"memory\":0},"
     "\"precedence\":\"usage\"}}",
     NULL},
    {"all set", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":0.5,\"min_charge_s\":30.5,"
     "\"resource_weights\":{\"gpu\":0,\"cpu\":2,\"memory\":0.25},"
     "\"precedence\":\"priority\"}}",
     "{\"usage_fair_sharing\":{\"half_life_s\":0.5,\"min_charge_s\":30.5,"
     "\"resource_weights\":{\"gpu\":0,\"cpu\":2,\"memory\":0.25},"
     "\"precedence\":\"priority\"}}",
     NULL},
    {"min charge 0: exact accrual only", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":0}}",
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":0,"
     "\"resource_weights\":{\"gpu\":1,\"cpu\":0,\"memory\":0},"
     "\"precedence\":\"usage\"}}",
     NULL},
    {"min charge a day", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":86400}}",
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":86400,"
     "\"resource_weights\":{\"gpu\":1,\"cpu\":0,\"memory\":0},"
     "\"precedence\":\"usage\"}}",
     NULL},
    {"min charge negative", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":-1}}", NULL,
     "usage_fair_sharing.min_charge_s"},
    {"min charge over a day", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":86401}}",
     NULL, "usage_fair_sharing.min_charge_s"},
    {"min charge a string", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":\"60\"}}",
     NULL, "usage_fair_sharing.min_charge_s"},
    {"min charge null", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"min_charge_s\":null}}",
     NULL, "usage_fair_sharing.min_charge_s"},
    {"half-life 0 refused", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":0}}", NULL,
     "usage_fair_sharing.half_life_s"},
    {"half-life negative", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":-1}}", NULL,
     "usage_fair_sharing.half_life_s"},
    {"half-life missing", true, "{\"usage_fair_sharing\":{}}", NULL,
     "usage_fair_sharing.half_life_s"},
    {"half-life a string", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":\"1h\"}}", NULL,
     "usage_fair_sharing.half_life_s"},
    {"half-life over a year", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":40000000}}", NULL,
     "usage_fair_sharing.half_life_s"},
    {"every weight 0", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"resource_weights\":"
     "{\"gpu\":0}}}",
     NULL, "usage_fair_sharing.resource_weights"},
    {"negative weight", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"resource_weights\":"
     "{\"gpu\":-1,\"cpu\":1}}}",
     NULL, "usage_fair_sharing.resource_weights.gpu"},
    {"unknown resource", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"resource_weights\":"
     "{\"tpu\":1}}}",
     NULL, "usage_fair_sharing.resource_weights.tpu"},
    {"bad precedence", true,
     "{\"usage_fair_sharing\":{\"half_life_s\":60,\"precedence\":"
     "\"fifo\"}}",
     NULL, "usage_fair_sharing.precedence"},
    {"not an object", true, "{\"usage_fair_sharing\":true}", NULL,
     "usage_fair_sharing"},
    {"weight default 1", false, "{}", "{\"fair_sharing_weight\":1}", NULL},
    {"weight 2.5", false, "{\"fair_sharing_weight\":2.5}",
     "{\"fair_sharing_weight\":2.5}", NULL},
    {"weight 0 refused", false, "{\"fair_sharing_weight\":0}", NULL,
     "fair_sharing_weight"},
    {"weight negative", false, "{\"fair_sharing_weight\":-2}", NULL,
     "fair_sharing_weight"},
    {"weight a string", false, "{\"fair_sharing_weight\":\"2\"}", NULL,
     "fair_sharing_weight"},
    {"weight null", false, "{\"fair_sharing_weight\":null}", NULL,
     "fair_sharing_weight"},
};

START_TEST(fields)
{
  struct gg_req req;
  json_t *in, *out;
  char *dump = NULL;
  const char *first = NULL;

  req_init(&req, NULL);
  in = json_loads(field_cases[_i].in, 0, NULL);
  ck_assert_ptr_nonnull(in);
  out = v_object(&req, "", in, field_cases[_i].cq ? cq_fields : tq_fields);
  if (out && field_cases[_i].cq)
    fairshare_check_cq(&req, out);
  else if (out)
    fairshare_check_tq(&req, out);
  if (problem_nfields(&req) > 0)
    first = json_string_value(
        json_object_get(json_array_get(req.err.fields, 0), "field"));
  else if (out)
    dump = json_dumps(out, GG_JSON_DUMP);
  ck_assert_msg(field_cases[_i].out ? dump && !strcmp(dump, field_cases[_i].out)
                                    : dump == NULL,
                "case \"%s\": output %s, want %s", field_cases[_i].what,
                dump ? dump : "NULL",
                field_cases[_i].out ? field_cases[_i].out : "NULL");
  ck_assert_msg(field_cases[_i].field
                    ? first && !strcmp(first, field_cases[_i].field)
                    : first == NULL,
                "case \"%s\": field %s, want %s", field_cases[_i].what,
                first ? first : "none",
                field_cases[_i].field ? field_cases[_i].field : "none");
  free(dump);
  json_decref(out);
  json_decref(in);
  req_cleanup(&req);
}
END_TEST

/* ------------------------------------------------------------ decay math */

enum op { ADMIT, RESUME, RELEASE, ADVANCE, END };

struct ev {
  enum op op;
  double at_s;   /* when the event is told (now) */
  double from_s; /* ADMIT/RESUME: admitted at; RELEASE: ended at (0: now) */
  int key;       /* the job */
  double gpu;    /* its request (GPUs) */
  int want;      /* the call's return */
};

#define L2 M_LN2

static const struct {
  const char *what;
  double h;
  struct ev ev[6];
  double read_s; /* usage read (advanced) at */
  double want;   /* GPU-seconds */
} math_cases[] = {
    {"charged 60 s at once",
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     0,
     60},
    {"the charge decays, no accrual inside the minimum",
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     30},
    {"minimum ends exactly at the read",
     60,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     60,
     30},
    {"accrues past the minimum",
     60,
     {{ADMIT, 0, 0, 1, 2, 0}, {END, 0, 0, 0, 0, 0}},
     120,
     2 * (60 * 0.25 + 60 / L2 * 0.5)},
    {"short job: the minimum only",
     30,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 5, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     90,
     60 * 0.125},
    {"long job released: 60 + accrual, then decay",
     60,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 180, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     240,
     (60 * 0.125 + 60 / L2 * 0.75) * 0.5},
    {"admission told late: charged as of its admission",
     60,
     {{ADVANCE, 100, 0, 0, 0, 0},
      {ADMIT, 120, 0, 1, 1, 0},
      {END, 0, 0, 0, 0, 0}},
     120,
     60 * 0.25 + 60 / L2 * 0.5},
    {"told late, still inside the minimum",
     60,
     {{ADMIT, 30, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     60,
     60 * 0.5},
    {"resume: no new charge, accrues after the minimum",
     60,
     {{RESUME, 30, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     120,
     60 / L2 * 0.5},
    {"resume past the minimum accrues from now",
     60,
     {{RESUME, 100, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     160,
     60 / L2 * 0.5},
    {"two jobs overlap",
     100,
     {{ADMIT, 0, 0, 1, 1, 0}, {ADMIT, 50, 50, 2, 3, 0}, {END, 0, 0, 0, 0, 0}},
     150,
     /* 2^-1.5, 2^-0.9, 2^-0.4 */
     60 * 0.3535533905932738 + 100 / L2 *(1 - 0.5358867312681466) +
         3 * 60 * 0.5 + 3 * 100 / L2 *(1 - 0.757858283255199)},
    {"long idle decays to nothing",
     1,
     {{ADMIT, 0, 0, 1, 8, 0}, {RELEASE, 70, 0, 1, 8, 0}, {END, 0, 0, 0, 0, 0}},
     5000,
     0},
    {"a held job converges to request·h/ln2",
     1,
     {{ADMIT, 0, 0, 1, 8, 0}, {END, 0, 0, 0, 0, 0}},
     5000,
     8 / L2},
    {"a year's half-life barely decays",
     31536000,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 600, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     600,
     /* 60·2^(−600/h) + h/ln2·(1 − 2^(−540/h)), h = 31536000 */
     599.9960041351769},
    {"clock backwards refused, usage unchanged",
     10,
     {{ADMIT, 100, 100, 1, 1, 0},
      {ADVANCE, 99, 0, 0, 0, -1},
      {RELEASE, 50, 0, 1, 1, -1},
      {END, 0, 0, 0, 0, 0}},
     100,
     60},
    {"release of an unknown job stops no one else",
     60,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 120, 0, 9, 0, 0}, {END, 0, 0, 0, 0, 0}},
     180,
     60 * 0.125 + 60 / L2 * 0.75},
};

/* Apply evs[k]; a release's admission is its job's earlier ADMIT or
 * RESUME in evs (0 when none). */
static int apply_ev(struct fs_usage *u, double h, double m,
                    const struct ev *evs, int k)
{
  const struct ev *e = &evs[k];
  double req[SCHED_NRES] = {e->gpu, 0, 0};
  int64_t at = (int64_t)llround(e->at_s * (double)S);
  int64_t from = (int64_t)llround(e->from_s * (double)S), admitted = 0;
  int i;

  switch (e->op) {
  case ADMIT:
    return fs_admit(u, h, m, from, at, e->key, req);
  case RESUME:
    return fs_resume(u, h, m, from, at, e->key, req);
  case RELEASE:
    for (i = 0; i < k; i++)
      if ((evs[i].op == ADMIT || evs[i].op == RESUME) && evs[i].key == e->key)
        admitted = (int64_t)llround(evs[i].from_s * (double)S);
    return fs_release(u, h, m, admitted, from, at, e->key, req);
  case ADVANCE:
    return fs_advance(u, h, at);
  case END:
    break;
  }
  return 0;
}

START_TEST(math)
{
  struct fs_usage u;
  double got;
  int k;

  fs_usage_init(&u, 0);
  for (k = 0; math_cases[_i].ev[k].op != END; k++)
    ck_assert_msg(apply_ev(&u, math_cases[_i].h, FS_MIN_CHARGE_S,
                           math_cases[_i].ev, k) == math_cases[_i].ev[k].want,
                  "case \"%s\": event %d", math_cases[_i].what, k);
  ck_assert_int_eq(
      fs_advance(&u, math_cases[_i].h,
                 (int64_t)llround(math_cases[_i].read_s * (double)S)),
      0);
  got = u.u[SCHED_GPU];
  ck_assert_msg(isfinite(got) && fabs(got - math_cases[_i].want) <=
                                     1e-9 * fmax(1, math_cases[_i].want),
                "case \"%s\": usage %.12g, want %.12g", math_cases[_i].what,
                got, math_cases[_i].want);
  ck_assert(u.u[SCHED_CPU] == 0 && u.u[SCHED_MEM] == 0);
  fs_usage_free(&u);
}
END_TEST

/*
 * The cluster queue's min_charge_s m: a job held H seconds is charged
 * max(m, H) in all, m at once at its admission; m = 0 is exact accrual
 * from the admission. 2^-0.5 = 0.7071067811865476.
 */
static const struct {
  const char *what;
  double m, h;
  struct ev ev[4];
  double read_s;
  double want;
} charge_cases[] = {
    {"m 0: a short job is charged its hold only",
     0,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 5, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 / L2 *(0.7071067811865476 - 0.5)},
    {"m 0: nothing at once, accrues from its admission",
     0,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 / L2 * 0.5},
    {"m 0: an admission told late accrues from the admission",
     0,
     10,
     {{ADMIT, 10, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     20,
     10 / L2 * 0.75},
    {"m 0: 2 GPUs for 10 s",
     0,
     10,
     {{ADMIT, 0, 0, 1, 2, 0}, {RELEASE, 10, 0, 1, 2, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     2 * 10 / L2 * 0.5},
    {"m 60, the default: a 5 s job charged 60",
     60,
     60,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 5, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     60,
     60 * 0.5},
    {"m 60: a job held 120 s, its minimum then accrual",
     60,
     60,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 120, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     120,
     60 * 0.25 + 60 / L2 * 0.5},
    {"m 10: a 5 s job charged 10 at once",
     10,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 5, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 * 0.5},
    {"m 10: held 20 s, 10 at once then accrues from 10 s",
     10,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     20,
     10 * 0.25 + 10 / L2 * 0.5},
    {"m 10: resume inside the minimum accrues from its end",
     10,
     10,
     {{RESUME, 5, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     20,
     10 / L2 * 0.5},
    {"m 10: resume past the minimum accrues from now",
     10,
     10,
     {{RESUME, 30, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     40,
     10 / L2 * 0.5},
    {"m 0: told 2 s after it ended at 5 s: charged its 5 s",
     0,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 7, 5, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 / L2 *(0.7071067811865476 - 0.5)},
    {"m 0: an end told as later than now is now",
     0,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 5, 8, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 / L2 *(0.7071067811865476 - 0.5)},
    {"m 10: ended inside its minimum, told after it: the minimum",
     10,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 15, 5, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     20,
     10 * 0.25},
    {"m 10: ended at 15 s, told at 18 s: accrual to 15 s only",
     10,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {RELEASE, 18, 15, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     20,
     10 * 0.25 + 10 / L2 *(0.7071067811865476 - 0.5)},
    {"a negative m is read as 0",
     -5,
     10,
     {{ADMIT, 0, 0, 1, 1, 0}, {END, 0, 0, 0, 0, 0}},
     10,
     10 / L2 * 0.5},
};

START_TEST(charge)
{
  struct fs_usage u;
  double got;
  int k;

  fs_usage_init(&u, 0);
  for (k = 0; charge_cases[_i].ev[k].op != END; k++)
    ck_assert_msg(apply_ev(&u, charge_cases[_i].h, charge_cases[_i].m,
                           charge_cases[_i].ev,
                           k) == charge_cases[_i].ev[k].want,
                  "case \"%s\": event %d", charge_cases[_i].what, k);
  ck_assert_int_eq(
      fs_advance(&u, charge_cases[_i].h,
                 (int64_t)llround(charge_cases[_i].read_s * (double)S)),
      0);
  got = u.u[SCHED_GPU];
  ck_assert_msg(isfinite(got) && fabs(got - charge_cases[_i].want) <=
                                     1e-9 * fmax(1, charge_cases[_i].want),
                "case \"%s\": usage %.12g, want %.12g", charge_cases[_i].what,
                got, charge_cases[_i].want);
  fs_usage_free(&u);
}
END_TEST

/*
 * it_fairshare (d) with min_charge_s 0, on a controlled clock: 100 jobs of
 * 0.5 s, held one after another with a gap of 1.5 s between them (their
 * creates, the sync), charge what one job held 50 s charges, read at the
 * same instant, to 1e-9 (the half-life of 10 days decays both alike over
 * 200 s: within 2e-4 of each other, which the bound takes in). The
 * integration test keeps only what holds on a slow machine.
 */
START_TEST(charge_many_short_as_one_long)
{
  const double h = 864000, req[SCHED_NRES] = {1, 0, 0};
  struct fs_usage shorts, one;
  int64_t at;
  int k;

  fs_usage_init(&shorts, 0);
  fs_usage_init(&one, 0);
  for (k = 0; k < 100; k++) {
    at = (int64_t)k * 2 * S;
    ck_assert_int_eq(fs_admit(&shorts, h, 0, at, at, k + 1, req), 0);
    ck_assert_int_eq(
        fs_release(&shorts, h, 0, at, at + S / 2, at + S / 2, k + 1, req), 0);
  }
  ck_assert_int_eq(fs_admit(&one, h, 0, 150 * S, 150 * S, 1, req), 0);
  ck_assert_int_eq(fs_release(&one, h, 0, 150 * S, 200 * S, 200 * S, 1, req),
                   0);
  ck_assert_int_eq(fs_advance(&shorts, h, 200 * S), 0);
  ck_assert_int_eq(fs_advance(&one, h, 200 * S), 0);
  ck_assert_msg(fabs(shorts.u[SCHED_GPU] - one.u[SCHED_GPU]) <=
                    2e-4 * one.u[SCHED_GPU],
                "100 x 0.5 s charged %.9g, 1 x 50 s %.9g", shorts.u[SCHED_GPU],
                one.u[SCHED_GPU]);
  /* the closed form: h/ln2 · (1 − 2^(−50/h)) */
  ck_assert_msg(fabs(one.u[SCHED_GPU] - h / M_LN2 * -expm1(-50 / h * M_LN2)) <=
                    1e-9 * 50,
                "1 x 50 s charged %.12g", one.u[SCHED_GPU]);
  fs_usage_free(&shorts);
  fs_usage_free(&one);
}
END_TEST

/*
 * The quota log the leader's accounts are charged from (scheduler/state.c,
 * admission_fs.c's drain), on a controlled clock: a Flex Start failover
 * moves the job to its next attempt in another location with the same
 * admission (db/batch_sync.c sql_flex_move keeps admitted_at), so it is neither
 * a stop nor a start, and the job is charged once: exactly what one
 * admission held until its release charges. A requeue admitted again (a
 * new admitted_at) is a stop and a start. Before (issue 34, defect 4):
 * every failover logged a stop and a start, and the start charged the 60 s
 * minimum again from the first admission.
 */
static const struct {
  const char *what;
  int attempt2;        /* the second version's attempt */
  int64_t admitted2_s; /* and its admission */
  int stops, starts;   /* events the second version logs */
} failover_cases[] = {
    {"a Flex Start failover: same admission", 2, 0, 0, 0},
    {"requeued and admitted again", 2, 40, 1, 1},
    {"same attempt, same admission", 1, 0, 0, 0},
};

START_TEST(failover_charges_once)
{
  const double h = 864000, m = 60, req[SCHED_NRES] = {1, 0, 0};
  struct sched_state st;
  struct sched_state_job j;
  struct fs_usage u, want;
  int k, stops = 0, starts = 0;

  sched_state_init(&st);
  st.log_quota = true;
  fs_usage_init(&u, 0);
  fs_usage_init(&want, 0);
  memset(&j, 0, sizeof(j));
  snprintf(j.id, sizeof(j.id), "j1");
  j.team = sched_state_name(&st, "ta");
  j.queue = sched_state_name(&st, "q");
  j.cq = sched_state_name(&st, "cq");
  j.flavor = sched_state_name(&st, "flex");
  snprintf(j.state, sizeof(j.state), "QUEUED");
  j.seq = 7;
  j.attempt = 1;
  j.request[SCHED_GPU] = 1;
  j.admitted_at_us = 0;
  ck_assert_int_ge(sched_state_put(&st, &j), 0);
  ck_assert_int_eq(st.n_qlog, 1);
  ck_assert(st.qlog[0].start);
  ck_assert_int_eq(fs_admit(&u, h, m, 0, 0, 7, req), 0);
  st.n_qlog = 0;
  /* 30 s later the next version */
  j.attempt = failover_cases[_i].attempt2;
  j.admitted_at_us = failover_cases[_i].admitted2_s * S;
  snprintf(j.state, sizeof(j.state), "ADMITTED");
  ck_assert_int_ge(sched_state_put(&st, &j), 0);
  for (k = 0; k < st.n_qlog; k++) {
    const struct sched_quota_event *e = &st.qlog[k];
    if (e->start) {
      starts++;
      ck_assert_int_eq(
          fs_admit(&u, h, m, e->admitted_at_us, 40 * S, e->seq, req), 0);
    } else {
      stops++;
      ck_assert_int_eq(
          fs_release(&u, h, m, e->admitted_at_us, 40 * S, 40 * S, e->seq, req),
          0);
    }
  }
  st.n_qlog = 0;
  ck_assert_msg(stops == failover_cases[_i].stops &&
                    starts == failover_cases[_i].starts,
                "case \"%s\": %d stops and %d starts, want %d and %d",
                failover_cases[_i].what, stops, starts,
                failover_cases[_i].stops, failover_cases[_i].starts);
  /* released at 200 s: charged as one admission held from 0 (and, for a
   * requeue, a second one from 40 s) */
  ck_assert_int_eq(
      fs_release(&u, h, m, j.admitted_at_us, 200 * S, 200 * S, 7, req), 0);
  ck_assert_int_eq(fs_admit(&want, h, m, 0, 0, 7, req), 0);
  if (failover_cases[_i].stops) {
    ck_assert_int_eq(fs_release(&want, h, m, 0, 40 * S, 40 * S, 7, req), 0);
    ck_assert_int_eq(fs_admit(&want, h, m, 40 * S, 40 * S, 7, req), 0);
    ck_assert_int_eq(fs_release(&want, h, m, 40 * S, 200 * S, 200 * S, 7, req),
                     0);
  } else {
    ck_assert_int_eq(fs_release(&want, h, m, 0, 200 * S, 200 * S, 7, req), 0);
  }
  ck_assert_int_eq(fs_advance(&u, h, 200 * S), 0);
  ck_assert_int_eq(fs_advance(&want, h, 200 * S), 0);
  ck_assert_msg(fabs(u.u[SCHED_GPU] - want.u[SCHED_GPU]) <=
                    1e-9 * want.u[SCHED_GPU],
                "case \"%s\": charged %.9g GPU-s, want %.9g",
                failover_cases[_i].what, u.u[SCHED_GPU], want.u[SCHED_GPU]);
  fs_usage_free(&u);
  fs_usage_free(&want);
  sched_state_free(&st);
}
END_TEST

/* Units: GPUs, millicores → CPUs, MiB → GiB. */
START_TEST(units)
{
  const int64_t req[SCHED_NRES] = {2, 1500, 3072};
  double r[SCHED_NRES];
  struct fs_usage u;

  fs_request(req, r);
  ck_assert(r[SCHED_GPU] == 2 && r[SCHED_CPU] == 1.5 && r[SCHED_MEM] == 3);
  fs_usage_init(&u, 0);
  ck_assert_int_eq(fs_admit(&u, 100, FS_MIN_CHARGE_S, 0, 0, 1, r), 0);
  ck_assert(u.u[SCHED_GPU] == 120 && u.u[SCHED_CPU] == 90 &&
            u.u[SCHED_MEM] == 180);
  ck_assert_int_eq(fs_advance(&u, 0, 10), -1); /* half-life must be > 0 */
  fs_usage_free(&u);
}
END_TEST

/* ---------------------------------------------------------------- scores */

static const struct {
  const char *what;
  double u[SCHED_NRES], w[SCHED_NRES], weight, want;
} score_cases[] = {
    {"gpu only", {100, 50, 10}, {1, 0, 0}, 1, 100},
    {"weighted resources", {100, 50, 10}, {1, 2, 0.5}, 1, 205},
    {"team weight divides", {100, 0, 0}, {1, 0, 0}, 4, 25},
    {"nothing used", {0, 0, 0}, {1, 1, 1}, 2, 0},
};

START_TEST(score)
{
  ck_assert_double_eq_tol(
      fs_score(score_cases[_i].u, score_cases[_i].w, score_cases[_i].weight),
      score_cases[_i].want, 1e-12);
}
END_TEST

/* Equal within 1e-9 relative or one score unit absolute. */
static const struct {
  const char *what;
  double a, b;
  int want;
} cmp_cases[] = {
    {"same", 0, 0, 0},
    {"one unit apart: equal", 1, 2, 0},
    {"just above the floor", 1, 2.000001, -1},
    {"just above the floor, reversed", 2.000001, 1, 1},
    {"just below the floor", 0, 0.999999, 0},
    {"a trace of usage against none", 1e-300, 0, 0},
    {"1,000 GPU-s after ten half-lives against none", 1000 / 1024.0, 0, 0},
    {"1,000 GPU-s after nine half-lives against none", 1000 / 512.0, 0, 1},
    {"relative tie at 1,000", 1000, 1000 * (1 + 5e-10), 0},
    {"relative tie at 1e12 (500 units apart)", 1e12, 1e12 * (1 + 5e-10), 0},
    {"relative tie at 1e12, reversed", 1e12 * (1 + 5e-10), 1e12, 0},
    {"above the relative tie at 1e12", 1e12, 1e12 * (1 + 2e-9), -1},
    {"above the relative tie at 1e12, reversed", 1e12 * (1 + 2e-9), 1e12, 1},
    {"decayed minimum charge", 60, 60 * (1 - 1e-12), 0},
    {"two minimum charges apart", 60, 120, -1},
};

START_TEST(cmp)
{
  ck_assert_msg(fs_cmp(cmp_cases[_i].a, cmp_cases[_i].b) == cmp_cases[_i].want,
                "%s: fs_cmp(%g, %g) = %d, want %d", cmp_cases[_i].what,
                cmp_cases[_i].a, cmp_cases[_i].b,
                fs_cmp(cmp_cases[_i].a, cmp_cases[_i].b), cmp_cases[_i].want);
}
END_TEST

/* Tie groups for sorting: ascending, each group the scores equal to its
 * lowest one (so 0, 0.8, 1.6 is two groups, not one chain). */
static const struct {
  const char *what;
  int n;
  double score[6];
  int want[6];
} group_cases[] = {
    {"none", 0, {0}, {0}},
    {"one", 1, {5}, {0}},
    {"distinct, unsorted", 3, {300, 100, 200}, {2, 0, 1}},
    {"within one unit", 3, {10, 10.5, 11}, {0, 0, 0}},
    {"a chain splits at its lowest", 3, {0, 0.8, 1.6}, {0, 0, 1}},
    {"relative ties at large scores",
     4,
     {1e12, 1e12 * (1 + 5e-10), 5, 5.5},
     {1, 1, 0, 0}},
    {"decayed to nothing together", 4, {0.9, 0, 0.2, 3}, {0, 0, 0, 1}},
};

START_TEST(groups)
{
  int got[6], k;

  ck_assert_int_eq(fs_groups(group_cases[_i].score, group_cases[_i].n, got), 0);
  for (k = 0; k < group_cases[_i].n; k++)
    ck_assert_msg(got[k] == group_cases[_i].want[k],
                  "%s: score %g in group %d, want %d", group_cases[_i].what,
                  group_cases[_i].score[k], got[k], group_cases[_i].want[k]);
}
END_TEST

/* -------------------------------------------------------------- property */

/*
 * Random admissions and releases of jobs with random requests, told in
 * time order, with short half-lives; at random moments the incremental
 * usage is compared with a brute force recomputed from the whole history:
 * each job's minimum charge decayed from its admission, plus its request
 * integrated numerically (composite Simpson) with the decay kernel over
 * the time it held quota after its minimum.
 */
struct hist {
  double t0, t1; /* admitted, released (t1 < 0: holding) */
  double req;
};

static double simpson(double h, double now, double a, double b, double r)
{
  int n = 2000, i; /* even */
  double step = (b - a) / n, sum = 0;

  if (b <= a)
    return 0;
  for (i = 0; i <= n; i++) {
    double x = a + step * i, f = r * exp2(-(now - x) / h);
    sum += f * (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2));
  }
  return sum * step / 3;
}

static double brute(const struct hist *hs, int n, double h, double m,
                    double now)
{
  double u = 0;
  int i;

  for (i = 0; i < n; i++) {
    double end = hs[i].t1 < 0 ? now : hs[i].t1;
    u += hs[i].req * m * exp2(-(now - hs[i].t0) / h);
    u += simpson(h, now, hs[i].t0 + m, end, hs[i].req);
  }
  return u;
}

START_TEST(property)
{
  struct rng rng = {0x5eed0000u + (uint64_t)_i};
  static const double mins[] = {FS_MIN_CHARGE_S, 0, 10, 0.5};
  double h = 5 + below(&rng, 200); /* seconds: short next to the minimum */
  double m = mins[_i % N_OF(mins)];
  struct hist hs[120];
  int n = 0, checks = 0, k;
  int64_t now = 0;
  struct fs_usage u;

  fs_usage_init(&u, 0);
  for (k = 0; k < 400; k++) {
    int op = below(&rng, 10);
    now += (int64_t)below(&rng, 40 * 1000) * 1000; /* up to 40 s, in ms */
    if (op < 4 && n < N_OF(hs)) {
      /* admitted up to 3 s before it is told, as the feed may lag */
      int64_t t0 = now - (int64_t)below(&rng, 3000) * 1000;
      double req[SCHED_NRES] = {1 + below(&rng, 8), 0, 0};
      if (t0 < 0)
        t0 = 0;
      ck_assert_int_eq(fs_admit(&u, h, m, t0, now, n, req), 0);
      hs[n++] = (struct hist){(double)t0 / 1e6, -1, req[SCHED_GPU]};
    } else if (op < 8 && n > 0) {
      int j = below(&rng, n);
      double req[SCHED_NRES] = {hs[j].req, 0, 0};
      if (hs[j].t1 >= 0)
        continue;
      /* it ended up to 3 s before it is told, not before its admission */
      int64_t t1 = now - (int64_t)below(&rng, 3000) * 1000;
      int64_t t0 = (int64_t)llround(hs[j].t0 * 1e6);
      if (t1 < t0)
        t1 = t0;
      ck_assert_int_eq(fs_release(&u, h, m, t0, t1, now, j, req), 0);
      hs[j].t1 = (double)t1 / 1e6;
      /* a job released inside its minimum is charged the minimum: its
       * interval after the minimum is empty */
      if (hs[j].t1 < hs[j].t0 + m)
        hs[j].t1 = hs[j].t0 + m;
    } else {
      double want;
      ck_assert_int_eq(fs_advance(&u, h, now), 0);
      want = brute(hs, n, h, m, (double)now / 1e6);
      ck_assert_msg(fabs(u.u[SCHED_GPU] - want) <= 1e-6 * fmax(want, 1e-3),
                    "seed %d step %d: incremental %.12g, brute force %.12g", _i,
                    k, u.u[SCHED_GPU], want);
      checks++;
    }
  }
  ck_assert_int_gt(checks, 20);
  fs_usage_free(&u);
}
END_TEST

Suite *fairshare_suite(void)
{
  Suite *s = suite_create("fairshare");
  TCase *tc = tcase_create("core");

  tcase_add_loop_test(tc, fields, 0, N_OF(field_cases));
  tcase_add_loop_test(tc, math, 0, N_OF(math_cases));
  tcase_add_loop_test(tc, charge, 0, N_OF(charge_cases));
  tcase_add_test(tc, charge_many_short_as_one_long);
  tcase_add_loop_test(tc, failover_charges_once, 0, N_OF(failover_cases));
  tcase_add_test(tc, units);
  tcase_add_loop_test(tc, score, 0, N_OF(score_cases));
  tcase_add_loop_test(tc, cmp, 0, N_OF(cmp_cases));
  tcase_add_loop_test(tc, groups, 0, N_OF(group_cases));
  tcase_add_loop_test(tc, property, 0, 20);
  tcase_add_loop_test(tc, order, 0, N_OF(order_cases));
  tcase_add_test(tc, order_invalid);
  suite_add_tcase(s, tc);
  return s;
}
