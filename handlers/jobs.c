/*
 * jobs.c — /v1/teams/{team}/jobs: submit, list, get, cancel, events, and a
 * queue's pending jobs with their positions.
 *
 * A submission is validated in three steps: the body against its field
 * table; its names against the database (queue, priority class); and the
 * request against the target cluster queue (could it ever be admitted?).
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/admin.h"
#include "db/db.h"
#include "db/jobs.h"
#include "handlers/handlers.h"
#include "handlers/job_views.h"
#include "handlers/oci_ref.h"
#include "handlers/validate.h"
#include "server/problem.h"
#include "control/waker.h"

#define MAX_TASKS 5000
#define FLEX_START "FLEX_START"

static bool env_key(const char *k)
{
  size_t i;

  if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') ||
        k[0] == '_'))
    return false;
  for (i = 1; k[i]; i++)
    if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
          (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
      return false;
  return i <= 128 && strncmp(k, "GPUGATE_", 8) != 0;
}

static bool label_chars(const char *s, size_t max)
{
  size_t i;

  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || s[i] == '-'))
      return false;
  return i <= max;
}

/* GCP label keys: start with a lowercase letter; gpugate's own are
 * reserved. */
static bool label_key(const char *k)
{
  return k[0] >= 'a' && k[0] <= 'z' && label_chars(k, 63) &&
         strncmp(k, "gpugate-", 8) != 0 && strcmp(k, "cost-center") != 0;
}

static const struct v_field str_item[] = {{.type = V_STRING, .max = 4096}};
static const struct v_field label_value[] = {{.type = V_STRING, .max = 63}};
static const struct v_field region[] = {{.type = V_REGION}};

static const struct v_field task_fields[] = {
    {.key = "image",
     .type = V_STRING,
     .flags = V_REQUIRED,
     .min = 1,
     .max = 1024},
    {.key = "commands",
     .type = V_LIST,
     .min = 0,
     .max = 64,
     .fields = str_item,
     .dflt = "[]"},
    {.key = "env",
     .type = V_DICT,
     .min = 0,
     .max = 100,
     .fields = str_item,
     .key_ok = env_key,
     .key_rule = "an environment variable name not starting with GPUGATE_",
     .dflt = "{}"},
    {.key = "cpu_milli",
     .type = V_INT,
     .flags = V_REQUIRED,
     .min = 1,
     .max = 10000000},
    {.key = "memory_mib",
     .type = V_INT,
     .flags = V_REQUIRED,
     .min = 1,
     .max = 100000000},
    {.key = "gpu", .type = V_INT, .min = 0, .max = 64, .dflt = "0"},
    {.key = NULL}};

static const struct v_field job_fields[] = {
    {.key = "name", .type = V_NAME, .flags = V_REQUIRED},
    {.key = "queue", .type = V_NAME, .flags = V_REQUIRED},
    {.key = "priority_class",
     .type = V_NAME,
     .flags = V_NULLABLE,
     .dflt = "null"},
    {.key = "task_count",
     .type = V_INT,
     .min = 1,
     .max = MAX_TASKS,
     .dflt = "1"},
    {.key = "parallelism",
     .type = V_INT,
     .flags = V_NULLABLE,
     .min = 1,
     .max = MAX_TASKS,
     .dflt = "null"},
    {.key = "task",
     .type = V_OBJECT,
     .flags = V_REQUIRED,
     .fields = task_fields},
    {.key = "max_run_duration_s",
     .type = V_INT,
     .flags = V_NULLABLE,
     .min = 1,
     .max = 315360000,
     .dflt = "null"},
    {.key = "max_retry_count", .type = V_INT, .min = 0, .max = 10, .dflt = "0"},
    {.key = "locations",
     .type = V_LIST,
     .min = 0,
     .max = 16,
     .fields = region,
     .dflt = "[]"},
    {.key = "labels",
     .type = V_DICT,
     .min = 0,
     .max = 32,
     .fields = label_value,
     .key_ok = label_key,
     .key_rule = "a label key ([a-z][a-z0-9_-]{0,62}) not starting with "
                 "gpugate- nor cost-center",
     .dflt = "{}"},
    {.key = "checkpoint_uri",
     .type = V_STRING,
     .flags = V_NULLABLE,
     .max = 1024,
     .dflt = "null"},
    {.key = NULL}};

static const char *const res_names[3] = {"gpu", "cpu_milli", "memory_mib"};

static int64_t int_of(json_t *o, const char *k)
{
  return (int64_t)json_integer_value(json_object_get(o, k));
}

/* Cross-field rules of the body alone. */
static void check_body(struct gg_req *req, json_t *spec)
{
  json_t *labels = json_object_get(spec, "labels"), *v;
  json_t *ckpt = json_object_get(spec, "checkpoint_uri");
  const char *k;

  if (int_of(spec, "parallelism") > int_of(spec, "task_count"))
    problem_field(req, "parallelism", "must not exceed task_count (%lld)",
                  (long long)int_of(spec, "task_count"));
  if (json_is_null(json_object_get(spec, "parallelism")))
    json_object_set(spec, "parallelism", json_object_get(spec, "task_count"));
  json_object_foreach (labels, k, v) {
    if (!label_chars(json_string_value(v), 63)) {
      char path[128];
      snprintf(path, sizeof(path), "labels.%s", k);
      problem_field(req, path,
                    "must be a label value: lowercase letters, digits, '_' "
                    "and '-', at most 63");
    }
  }
  if (json_is_string(ckpt) && strncmp(json_string_value(ckpt), "gs://", 5) != 0)
    problem_field(req, "checkpoint_uri", "must start with gs://");
}

/*
 * The most a CQ could ever give in flavor entry fl, resource r: its nominal
 * plus what it may borrow (limited by its borrowing_limit and by what the
 * rest of the cohort can lend).
 */
static int64_t capacity(const struct db_job_target *t, json_t *fl,
                        const char *r)
{
  json_t *q = json_object_get(json_object_get(fl, "resources"), r);
  json_t *bl = json_object_get(q, "borrowing_limit"), *other;
  const char *fname = json_string_value(json_object_get(fl, "name"));
  int64_t nominal = int_of(q, "nominal"), lendable = 0;
  size_t i, j;

  if (!q)
    return 0;
  json_array_foreach (t->cohort_cqs, i, other) {
    json_t *ofl;
    json_array_foreach (json_object_get(other, "flavors"), j, ofl) {
      json_t *oq;
      if (strcmp(json_string_value(json_object_get(ofl, "name")), fname) != 0)
        continue;
      oq = json_object_get(json_object_get(ofl, "resources"), r);
      if (oq)
        lendable += json_is_integer(json_object_get(oq, "lending_limit"))
                        ? int_of(oq, "lending_limit")
                        : int_of(oq, "nominal");
    }
  }
  if (json_is_integer(bl) && int_of(q, "borrowing_limit") < lendable)
    lendable = int_of(q, "borrowing_limit");
  return nominal + lendable;
}

/* Whether the flavor offers one of the job's regions (any, if it names
 * none). */
static bool region_allowed(json_t *spec, json_t *flavor)
{
  json_t *allowed = json_object_get(spec, "locations"), *loc;
  size_t i, j;

  if (json_array_size(allowed) == 0)
    return true;
  json_array_foreach (json_object_get(flavor, "locations"), i, loc) {
    for (j = 0; j < json_array_size(allowed); j++)
      if (json_equal(loc, json_array_get(allowed, j)))
        return true;
  }
  return false;
}

/*
 * Rules against the target: the request must fit some flavor entirely (all
 * resources from one flavor, a task's GPUs on one VM), and the run
 * duration must respect every flavor's limit. Fills *max_run.
 */
static void check_target(struct gg_req *req, json_t *spec,
                         const struct db_job_target *t,
                         const int64_t request[3], int64_t *max_run)
{
  json_t *fl, *task = json_object_get(spec, "task");
  json_t *given = json_object_get(spec, "max_run_duration_s");
  json_t *cq_default =
      json_object_get(t->cq_spec, "default_max_run_duration_s");
  int64_t task_gpu = int_of(task, "gpu"), limit = 0;
  const char *limited_by = NULL;
  bool fits = false, located = false;
  size_t i;
  int r;

  *max_run = json_is_integer(given) ? int_of(spec, "max_run_duration_s")
             : json_is_integer(cq_default)
                 ? int_of(t->cq_spec, "default_max_run_duration_s")
                 : 0;
  json_array_foreach (json_object_get(t->cq_spec, "flavors"), i, fl) {
    const char *fname = json_string_value(json_object_get(fl, "name"));
    json_t *flavor = json_object_get(t->flavors, fname);
    json_t *fmax = json_object_get(flavor, "max_run_duration_s");
    bool ok = true;

    if (json_is_integer(fmax) &&
        (!limited_by || int_of(flavor, "max_run_duration_s") < limit)) {
      limit = int_of(flavor, "max_run_duration_s");
      limited_by = fname;
    }
    if (!region_allowed(spec, flavor))
      continue;
    located = true;
    if (task_gpu > int_of(flavor, "gpus_per_vm"))
      ok = false;
    for (r = 0; r < 3 && ok; r++)
      ok = request[r] <= capacity(t, fl, res_names[r]);
    fits = fits || ok;
  }
  if (!located) {
    problem_field(req, "locations",
                  "no flavor of cluster queue \"%s\" runs in these regions",
                  t->cluster_queue);
    problem_fail(req, GG_UNPROCESSABLE,
                 "The job allows only regions its queue does not offer: it "
                 "could never run.");
  } else if (!fits) {
    problem_field(req, "task",
                  "parallelism × the task's resources exceed every flavor "
                  "of cluster queue \"%s\"",
                  t->cluster_queue);
    problem_fail(req, GG_UNPROCESSABLE,
                 "The job requests %lld GPU, %lld CPU millicores and %lld "
                 "MiB, which no flavor of cluster queue \"%s\" can ever "
                 "provide: it could never run.",
                 (long long)request[0], (long long)request[1],
                 (long long)request[2], t->cluster_queue);
  }
  if (*max_run == 0)
    *max_run = limited_by ? limit : 86400;
  if (limited_by && *max_run > limit) {
    problem_field(req, "max_run_duration_s",
                  "must be at most %lld: the limit of flavor \"%s\"",
                  (long long)limit, limited_by);
    problem_fail(req, GG_UNPROCESSABLE,
                 "The run duration exceeds a flavor's limit.");
  }
}

/*
 * task.image must be an OCI image reference: Batch would refuse anything
 * else only after admission, so the job is refused at once (422).
 */
static bool check_image(struct gg_req *req, json_t *spec)
{
  const char *image = json_string_value(
      json_object_get(json_object_get(spec, "task"), "image"));

  if (oci_ref_valid(image))
    return true;
  problem_field(req, "task.image",
                "must be an image reference such as "
                "\"us-docker.pkg.dev/project/repo/image:tag\" "
                "(registry[:port]/path[:tag][@sha256:digest], at most %d "
                "bytes)",
                OCI_REF_MAX);
  problem_fail(req, GG_UNPROCESSABLE,
               "task.image is not a container image reference.");
  return false;
}

/* SHA-256 of the body's canonical form (sorted keys), as hex. */
static int body_hash(json_t *body, char out[65])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0, i;
  char *text = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);

  if (!text)
    return -1;
  if (!EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL)) {
    free(text);
    return -1;
  }
  free(text);
  for (i = 0; i < mdlen && i < 32; i++)
    snprintf(out + 2 * (size_t)i, 3, "%02x", md[i]);
  return 0;
}

static bool idem_key_ok(const char *k)
{
  size_t i;

  for (i = 0; k[i]; i++)
    if (k[i] < 0x21 || k[i] > 0x7e)
      return false;
  return i >= 1 && i <= 255;
}

/* Answer an Idempotency-Key that was seen before; true when answered. */
static bool idem_answer(struct gg_req *req, const struct db_submit_result *r)
{
  switch (r->idem) {
  case DB_IDEM_REPLAY:
    if (r->location)
      req_add_header(req, "Location", r->location);
    req_reply(req, (unsigned)r->status, json_loads(r->body, 0, NULL));
    return true;
  case DB_IDEM_MISMATCH:
    problem_field(req, "Idempotency-Key", "was used with a different body");
    problem_fail(req, GG_UNPROCESSABLE,
                 "This Idempotency-Key was already used for another "
                 "request.");
    return true;
  case DB_IDEM_IN_FLIGHT:
    problem_fail(req, GG_CONFLICT,
                 "A request with this Idempotency-Key is still being "
                 "processed; retry shortly.");
    return true;
  case DB_IDEM_NEW:
    break;
  }
  return false;
}

/*
 * A submission that failed its checks against the configuration: when
 * its Idempotency-Key was used before, the key's answer wins (the first
 * request's response, or 422 for another body), as if the key had been
 * looked at first. The failure recorded in req stays otherwise.
 */
static void idem_before_failure(struct gg_req *req, const char *team,
                                const char *key, const char *hash)
{
  struct db_submit_result seen;
  enum gg_code code = req->err.code;
  json_t *errors = req->err.fields; /* taken from req */
  char detail[sizeof(req->err.detail)];

  if (!key || code == GG_UNAVAILABLE || code == GG_INTERNAL)
    return;
  memcpy(detail, req->err.detail, sizeof(detail));
  req->err.fields = NULL;
  problem_clear(req);
  memset(&seen, 0, sizeof(seen));
  if (db_idem_read(req_db(req), &req->err, team, key, hash, &seen) == GG_OK &&
      seen.idem != DB_IDEM_NEW) {
    json_decref(errors);
    idem_answer(req, &seen);
  } else {
    problem_clear(req);
    req->err.code = code;
    memcpy(req->err.detail, detail, sizeof(detail));
    req->err.fields = errors;
  }
  db_submit_result_free(&seen);
}

/* Attempts at a submission whose configuration keeps changing under it. */
#define SUBMIT_ATTEMPTS 3

enum gg_code jobs_create(struct gg_req *req)
{
  const char *team = req_param(req, "team");
  const char *key = req_header(req, "Idempotency-Key");
  struct db_job_target target;
  struct db_submit_result res;
  struct db_job_new job;
  json_t *spec = NULL, *task;
  char hash[65] = "", loc[160];
  int r, attempt;

  memset(&target, 0, sizeof(target));
  memset(&res, 0, sizeof(res));
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  spec = v_object(req, "", req->json, job_fields);
  if (spec)
    check_body(req, spec);
  if (!spec || problem_nfields(req)) {
    problem_fail(req, GG_BAD_REQUEST, "The job is invalid; see errors.");
    goto out;
  }
  if (!check_image(req, spec))
    goto out;
  if (key && !idem_key_ok(key)) {
    problem_field(req, "Idempotency-Key",
                  "must be 1 to 255 visible ASCII characters");
    problem_fail(req, GG_BAD_REQUEST,
                 "The Idempotency-Key header is malformed.");
    goto out;
  }
  if (key && body_hash(req->json, hash) != 0) {
    problem_fail(req, GG_INTERNAL, "The request could not be hashed.");
    goto out;
  }

  memset(&job, 0, sizeof(job));
  job.team = team;
  job.queue = json_string_value(json_object_get(spec, "queue"));
  job.name = json_string_value(json_object_get(spec, "name"));
  job.spec = spec;
  job.labels = json_object_get(spec, "labels");
  job.actor = req_actor(req);
  task = json_object_get(spec, "task");
  for (r = 0; r < 3; r++)
    job.request[r] = int_of(spec, "parallelism") * int_of(task, res_names[r]);
  /* checked against the cached configuration, stored only while that is
   * still the current one (else checked again against the new one) */
  for (attempt = 0; attempt < SUBMIT_ATTEMPTS; attempt++) {
    const char *pc = json_string_value(json_object_get(spec, "priority_class"));
    db_job_target_free(&target);
    db_submit_result_free(&res);
    if (db_job_target_cached(team, job.queue, pc, &target) ||
        db_job_target(req_db(req), &req->err, team, job.queue, pc, &target) ==
            GG_OK)
      check_target(req, spec, &target, job.request, &job.max_run_duration_s);
    if (req->err.code != GG_OK && target.cached) {
      /* refused by the cache: the database may already say otherwise */
      problem_clear(req);
      db_job_target_free(&target);
      if (db_job_target(req_db(req), &req->err, team, job.queue, pc, &target) ==
          GG_OK)
        check_target(req, spec, &target, job.request, &job.max_run_duration_s);
    }
    if (req->err.code != GG_OK) {
      idem_before_failure(req, team, key, hash);
      goto out;
    }
    if (db_job_submit(req_db(req), &req->err, &job, &target, key, hash, &res) !=
        GG_OK)
      goto out;
    if (!res.stale)
      break;
  }
  if (res.stale) {
    problem_fail(req, GG_CONFLICT,
                 "The queue's configuration changed during the submission; "
                 "retry the request.");
    goto out;
  }
  if (idem_answer(req, &res))
    goto out;
  snprintf(loc, sizeof(loc), "/v1/teams/%s/jobs/%s", team, res.id);
  req_add_header(req, "Location", loc);
  req_reply_json_text(req, 201, res.text, res.text_len);
  res.text = NULL;
  waker_poke(); /* the admission loop, soon */
out:
  db_job_target_free(&target);
  db_submit_result_free(&res);
  json_decref(spec);
  return req->err.code;
}

/* Cursors of job lists are sequence numbers. */
static bool seq_cursor(struct gg_req *req, int *limit, int64_t *after)
{
  char name[64];
  char *end;

  if (!v_page(req, limit, name, sizeof(name)))
    return false;
  *after = 0;
  if (!name[0])
    return true;
  *after = strtoll(name, &end, 10);
  if (*end || *after <= 0) {
    problem_field(req, "cursor", "is not a cursor this API returned");
    return false;
  }
  return true;
}

static void set_page(struct gg_req *req, json_t *items, int64_t next)
{
  char num[24], cursor[V_CURSOR_MAX];

  if (next) {
    snprintf(num, sizeof(num), "%lld", (long long)next);
    if (!v_cursor(req, num, cursor, sizeof(cursor))) {
      json_decref(items);
      problem_fail(req, GG_INTERNAL, "The cursor could not be made.");
      return;
    }
    req_reply(req, 200,
              json_pack("{s:o, s:s}", "items", items, "next_cursor", cursor));
  } else {
    req_reply(req, 200, json_pack("{s:o, s:n}", "items", items, "next_cursor"));
  }
}

enum gg_code jobs_list(struct gg_req *req)
{
  struct db_job_filter f;
  const char *label = req_query(req, "label");
  char lkey[64] = "";
  json_t *items = NULL;
  int64_t next = 0;
  enum gg_code code;

  if (req_query(req, "name"))
    return job_views_team_list(req); /* the name search */
  memset(&f, 0, sizeof(f));
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  if (!seq_cursor(req, &f.limit, &f.after_seq))
    return problem_fail(req, GG_BAD_REQUEST,
                        "The paging parameters are invalid.");
  f.states = req_query(req, "state");
  if (f.states && !v_job_states(f.states))
    problem_field(req, "state",
                  "must be a comma-separated list of PENDING, ADMITTED, "
                  "QUEUED, RUNNING, EVICTING, SUCCEEDED, FAILED, CANCELLED");
  f.queue = req_query(req, "queue");
  if (f.queue && !v_is_name(f.queue))
    problem_field(req, "queue", "is not a queue name");
  if (label) {
    const char *eq = strchr(label, '=');
    size_t klen = eq ? (size_t)(eq - label) : 0;
    if (!eq || klen == 0 || klen >= sizeof(lkey) || !label_chars(eq + 1, 63)) {
      problem_field(req, "label", "must be key=value");
    } else {
      memcpy(lkey, label, klen);
      lkey[klen] = '\0';
      f.label_key = lkey;
      f.label_value = eq + 1;
    }
  }
  if (problem_nfields(req))
    return problem_fail(req, GG_BAD_REQUEST, "The filters are invalid.");
  code = db_job_list(req_db(req), &req->err, req_param(req, "team"), &f, &items,
                     &next);
  if (code != GG_OK)
    return code;
  set_page(req, items, next);
  return GG_OK;
}

static bool job_path(struct gg_req *req)
{
  const char *id = req_param(req, "id");

  if (v_path_name(req, "team") && id && v_is_name(id))
    return true;
  problem_fail(req, GG_NOT_FOUND, "No such job.");
  return false;
}

enum gg_code jobs_get(struct gg_req *req)
{
  char *text = NULL;
  size_t len = 0;
  enum gg_code code;

  if (!job_path(req))
    return GG_NOT_FOUND;
  code = db_job_get(req_db(req), &req->err, req_param(req, "team"),
                    req_param(req, "id"), &text, &len);
  if (code != GG_OK)
    return code;
  req_reply_json_text(req, 200, text, len);
  return GG_OK;
}

enum gg_code jobs_cancel(struct gg_req *req)
{
  json_t *out = NULL;
  enum gg_code code;

  if (!job_path(req))
    return GG_NOT_FOUND;
  code = db_job_cancel(req_db(req), &req->err, db_pool_batch(req->pool),
                       req_actor(req), req_param(req, "team"),
                       req_param(req, "id"), &out);
  if (code != GG_OK)
    return code;
  req_reply(req, 200, out);
  return GG_OK;
}

enum gg_code jobs_events(struct gg_req *req)
{
  json_t *items = NULL;
  int64_t after = 0, next = 0;
  enum gg_code code;
  int limit;
  const char *follow = req_query(req, "follow");

  if (follow && strcmp(follow, "false") != 0)
    return job_views_follow(req); /* live, as Server-Sent Events */
  if (!job_path(req))
    return GG_NOT_FOUND;
  if (!seq_cursor(req, &limit, &after))
    return problem_fail(req, GG_BAD_REQUEST,
                        "The paging parameters are invalid.");
  code = db_job_events(req_db(req), &req->err, req_param(req, "team"),
                       req_param(req, "id"), after, limit, &items, &next);
  if (code != GG_OK)
    return code;
  set_page(req, items, next);
  return GG_OK;
}

enum gg_code queues_pending(struct gg_req *req)
{
  json_t *items = NULL, *queue = NULL;
  int64_t after = 0, next = 0;
  enum gg_code code;
  int limit;

  if (!v_path_name(req, "team") || !v_path_name(req, "queue"))
    return problem_fail(req, GG_NOT_FOUND, "No such queue.");
  if (!seq_cursor(req, &limit, &after))
    return problem_fail(req, GG_BAD_REQUEST,
                        "The paging parameters are invalid.");
  code = db_admin_get(req_db(req), &req->err, DB_TEAM_QUEUE,
                      req_param(req, "team"), req_param(req, "queue"), &queue,
                      NULL);
  if (code != GG_OK)
    return code;
  code = db_queue_pending(req_db(req), &req->err, req_param(req, "team"),
                          req_param(req, "queue"), after, limit, &items, &next);
  json_decref(queue);
  if (code != GG_OK)
    return code;
  set_page(req, items, next);
  return GG_OK;
}
