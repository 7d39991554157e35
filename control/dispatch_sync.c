/*
 * dispatch_sync.c — the status sync: one thread per replica that every
 * GPUGATE_SYNC_INTERVAL_MS lists each region's gpugate Batch jobs, applies
 * the states Batch reports, sweeps the Batch jobs of this deployment that
 * gpugate does not want, marks lost the ones Batch no longer has, and
 * every second moves Flex Start jobs past their max_wait_s.
 *
 * Its Batch calls run at once on the thread's multi handle, like the
 * dispatchers': every region's listing proceeds together (a region's pages
 * follow each other, each page's token coming from the one before), and a
 * region's sweeps run together once its listing is complete, at most
 * SWEEP_MAX at a time. Only the sweep's cancels and deletes are mutations;
 * each takes a token of the region's budget, and a sweep that finds none
 * waits for the next period. What the calls return is applied on the
 * thread's own database connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/batch_client.h"
#include "gcp/batch_job.h"
#include "db/batch.h"
#include "control/dispatch_worker.h"
#include "lib/log.h"
#include "lib/metrics.h"

#define FLEX_CHECK_MS 1000
#define SYNC_PAGE 500
#define UNSEEN_GRACE_S 30
#define SWEEP_MAX 32 /* sweeps under way at once */
#define FILTER "labels.gpugate-team:*"

enum call_type { CALL_LIST, CALL_SWEEP };

/* One region's listing in progress. */
struct listing {
  enum call_type type; /* first: the tag of its calls */
  char region[DISPATCH_FLOW_REGION_MAX];
  json_t *known;       /* {name: state} of active jobs, from the database */
  json_t *overlapping; /* {batch_job_id: true} raced copies followed to
                          their end (db_batch_overlapping) */
  json_t *seen;        /* names Batch listed */
  json_t *cands;       /* live jobs of the deployment nobody is waiting on */
  json_t *states;      /* {name: state} of the candidates */
  struct listing *next;
};

enum sweep_step { SWEEP_CHECK, SWEEP_CANCEL, SWEEP_RECHECK, SWEEP_DELETE };

/* A Batch job gpugate does not want, on its way out. */
struct sweep {
  enum call_type type; /* first: the tag of its calls */
  enum sweep_step step;
  char region[DISPATCH_FLOW_REGION_MAX];
  char name[512];
  char why[32];
  struct sweep *prev, *next;
};

struct syncer {
  struct dispatch_worker *w;
  struct listing *listings; /* the round under way; NULL: none */
  struct sweep *sweeps;     /* under way */
  size_t n_sweeps;
};

static bool live(const char *batch_state)
{
  return !strcmp(batch_state, "QUEUED") || !strcmp(batch_state, "SCHEDULED") ||
         !strcmp(batch_state, "RUNNING");
}

static const char *state_of(int rc, const struct batch_result *r)
{
  return rc == 0 ? json_string_value(json_object_get(
                       json_object_get(r->json, "status"), "state"))
                 : NULL;
}

static const char *base_of(const char *name)
{
  const char *slash = strrchr(name, '/');

  return slash ? slash + 1 : name;
}

/* ---- sweeps ------------------------------------------------------------ */

static void sweep_done(struct syncer *s, struct sweep *sw)
{
  if (sw->prev)
    sw->prev->next = sw->next;
  else
    s->sweeps = sw->next;
  if (sw->next)
    sw->next->prev = sw->prev;
  s->n_sweeps--;
  free(sw);
}

/* Start sw's call for step; a mutation first takes a token (none: the
 * next sync tries again). */
static void sweep_step(struct syncer *s, struct sweep *sw, enum sweep_step step)
{
  struct dispatch_worker *w = s->w;
  long wait_ms;
  int rc;

  if ((step == SWEEP_CANCEL || step == SWEEP_DELETE) &&
      !budget_take(w->d->mutations, &w->conn, sw->region, &wait_ms)) {
    sweep_done(s, sw);
    return;
  }
  sw->step = step;
  rc = step == SWEEP_CANCEL   ? batch_multi_cancel(w->multi, sw->name, sw)
       : step == SWEEP_DELETE ? batch_multi_delete(w->multi, sw->name, sw)
                              : batch_multi_get(w->multi, sw->name, sw);
  if (rc != 0) {
    log_msg(LOG_WARN, "sync: sweeping %s: out of memory", sw->name);
    sweep_done(s, sw);
  }
}

/*
 * Cancel a Batch job gpugate does not want (deleted if Batch refuses the
 * cancel of a job that is still live). The list the sweep works from may
 * be a moment old: a cancel of gpugate's own (a race's losers, a
 * failover's attempt) that landed since leaves nothing to sweep, so a read
 * (no budget) comes first.
 */
static void sweep_start(struct syncer *s, const char *region, const char *name,
                        const char *why)
{
  struct sweep *sw = calloc(1, sizeof(*sw));

  if (!sw)
    return;
  sw->type = CALL_SWEEP;
  snprintf(sw->region, sizeof(sw->region), "%s", region);
  snprintf(sw->name, sizeof(sw->name), "%s", name);
  snprintf(sw->why, sizeof(sw->why), "%s", why ? why : "unknown");
  sw->next = s->sweeps;
  if (s->sweeps)
    s->sweeps->prev = sw;
  s->sweeps = sw;
  s->n_sweeps++;
  sweep_step(s, sw, SWEEP_CHECK);
}

static void sweep_ended(struct syncer *s, struct sweep *sw, int rc,
                        const struct batch_result *r)
{
  const char *st = state_of(rc, r);

  switch (sw->step) {
  case SWEEP_CHECK:
    if ((rc == 0 || r->error.not_found) && (!st || !live(st)))
      break; /* gone or ended meanwhile */
    sweep_step(s, sw, SWEEP_CANCEL);
    return;
  case SWEEP_CANCEL:
    if (rc != 0 && !r->error.retryable && !r->error.not_found) {
      sweep_step(s, sw, SWEEP_RECHECK);
      return;
    }
    goto outcome;
  case SWEEP_RECHECK:
    if (st && !live(st))
      break; /* it ended meanwhile: leave its record */
    sweep_step(s, sw, SWEEP_DELETE);
    return;
  case SWEEP_DELETE:
    goto outcome;
  }
  sweep_done(s, sw);
  return;
outcome:
  if (rc == 0 || r->error.not_found) {
    json_t *f = json_pack("{s:s, s:s, s:s}", "batch_job", sw->name, "region",
                          sw->region, "why", sw->why);
    log_json(LOG_WARN, "sync: swept a Batch job gpugate does not want", f);
    json_decref(f);
    metrics_batch_orphan(sw->region, sw->why);
  } else {
    log_msg(LOG_WARN, "sync: sweeping %s failed: %s", sw->name,
            r->error.message);
  }
  sweep_done(s, sw);
}

/* ---- listings ---------------------------------------------------------- */

/*
 * A listed Batch job of this deployment, live, that is no active job's
 * current Batch job: a candidate for the sweep (name, the gpugate id and
 * attempt its name carries, null when it carries none).
 */
static void add_candidate(struct listing *l, const char *name,
                          const char *state)
{
  char id[32];
  int attempt, k;

  if (batch_job_id_parse(name, id, sizeof(id), &attempt, &k) == 0)
    json_array_append_new(l->cands, json_pack("{s:s, s:s, s:i, s:s}", "name",
                                              name, "id", id, "attempt",
                                              attempt, "base", base_of(name)));
  else
    json_array_append_new(l->cands,
                          json_pack("{s:s, s:n, s:n, s:s}", "name", name, "id",
                                    "attempt", "base", base_of(name)));
  json_object_set_new(l->states, name, json_string(state));
}

static void listing_free(struct listing *l)
{
  json_decref(l->known);
  json_decref(l->overlapping);
  json_decref(l->seen);
  json_decref(l->cands);
  json_decref(l->states);
  free(l);
}

/* Apply one page of a region's listing. */
static void apply_page(struct syncer *s, struct listing *l, json_t *jobs)
{
  struct dispatch_worker *w = s->w;
  const char *deployment = w->d->cfg->deployment;
  char err[256];
  json_t *job;
  size_t i;

  json_array_foreach (jobs, i, job) {
    const char *name = json_string_value(json_object_get(job, "name"));
    const char *state = json_string_value(
        json_object_get(json_object_get(job, "status"), "state"));
    const char *dep = json_string_value(
        json_object_get(json_object_get(job, "labels"), "gpugate-deployment"));
    const char *was;
    if (!name || !state)
      continue;
    json_array_append_new(l->seen, json_string(name));
    was = json_string_value(json_object_get(l->known, name));
    if (!was) {
      /* another deployment's jobs, and jobs from before the label, are
       * never touched */
      if (dep && !strcmp(dep, deployment) && live(state))
        add_candidate(l, name, state);
      else if (json_object_get(l->overlapping, base_of(name)) &&
               db_batch_observe_at(&w->conn, name, state,
                                   batch_job_ended_us(job), err,
                                   sizeof(err)) < 0)
        /* a race loser that ran beside its winner has stopped, or a
         * copy asked to end has ended */
        log_msg(LOG_WARN, "sync: %s: %s", name, err);
      continue;
    }
    /* only when Batch reports something new: a region keeps many jobs
     * that need no transaction each */
    if (!strcmp(was, state))
      continue;
    if (db_batch_observe_at(&w->conn, name, state, batch_job_ended_us(job), err,
                            sizeof(err)) < 0)
      log_msg(LOG_WARN, "sync: %s: %s", name, err);
  }
}

/* The region's listing is complete: sweep the candidates gpugate does not
 * want, adopt the others, and mark lost the jobs Batch no longer has (that
 * we did not cancel). */
static void settle(struct syncer *s, struct listing *l)
{
  struct dispatch_worker *w = s->w;
  char err[256];
  json_t *orphans, *o, *st, *unseen, *job;
  const char *name;
  size_t i;

  if (json_array_size(l->cands) > 0) {
    orphans = db_batch_orphans(&w->conn, l->cands, err, sizeof(err));
    if (!orphans) {
      log_msg(LOG_WARN, "sync: %s: %s", l->region, err);
    } else {
      json_array_foreach (orphans, i, o) {
        const char *why = json_string_value(json_object_get(o, "why"));
        name = json_string_value(json_object_get(o, "name"));
        if (!name)
          continue;
        /* a create still in the outbox: its dispatcher records the
         * outcome (and the job's BatchJobCreated), not a report */
        if (s->n_sweeps < SWEEP_MAX && (!why || strcmp(why, "pending") != 0))
          sweep_start(s, l->region, name, why);
        json_object_del(l->states, name);
      }
      json_decref(orphans);
      /* wanted: a raced copy, or a job whose create was recorded since the
       * round began, takes its state */
      json_object_foreach (l->states, name, st) {
        if (db_batch_observe(&w->conn, name, json_string_value(st), err,
                             sizeof(err)) < 0)
          log_msg(LOG_WARN, "sync: %s: %s", name, err);
      }
    }
  }
  unseen = db_batch_unseen(&w->conn, l->region, l->seen, UNSEEN_GRACE_S, err,
                           sizeof(err));
  json_array_foreach (unseen, i, job) {
    if (db_batch_observe(&w->conn, json_string_value(job), "NOT_FOUND", err,
                         sizeof(err)) < 0)
      log_msg(LOG_WARN, "sync: %s: %s", json_string_value(job), err);
  }
  json_decref(unseen);
}

static void listing_end(struct syncer *s, struct listing *l)
{
  struct listing **p = &s->listings;

  while (*p && *p != l)
    p = &(*p)->next;
  if (*p)
    *p = l->next;
  listing_free(l);
}

static void list_next(struct syncer *s, struct listing *l, const char *token)
{
  if (batch_multi_list(s->w->multi, l->region, FILTER, SYNC_PAGE, token, l) !=
      0) {
    log_msg(LOG_WARN, "sync: listing %s: out of memory", l->region);
    listing_end(s, l);
  }
}

static void page_ended(struct syncer *s, struct listing *l, int rc,
                       const struct batch_result *r)
{
  const char *token;

  if (rc != 0) {
    log_msg(LOG_WARN, "sync: listing %s failed: %s", l->region,
            r->error.message);
    listing_end(s, l);
    return;
  }
  apply_page(s, l, json_object_get(r->json, "jobs"));
  token = json_string_value(json_object_get(r->json, "nextPageToken"));
  if (token && *token && !atomic_load(&s->w->d->stop)) {
    list_next(s, l, token);
    return;
  }
  if (!atomic_load(&s->w->d->stop))
    settle(s, l);
  listing_end(s, l);
}

/* Start the listing of every region in regions (borrowed). */
static void start_round(struct syncer *s, json_t *regions)
{
  struct dispatch_worker *w = s->w;
  json_t *region;
  char err[256];
  size_t i;

  json_array_foreach (regions, i, region) {
    const char *name = json_string_value(region);
    struct listing *l;
    if (!name || strlen(name) >= DISPATCH_FLOW_REGION_MAX ||
        !(l = calloc(1, sizeof(*l))))
      continue;
    l->type = CALL_LIST;
    snprintf(l->region, sizeof(l->region), "%s", name);
    /* only jobs we wait on */
    l->known = db_batch_active(&w->conn, name, err, sizeof(err));
    l->overlapping =
        l->known ? db_batch_overlapping(&w->conn, name, err, sizeof(err))
                 : NULL;
    l->seen = json_array();
    l->cands = json_array();
    l->states = json_object();
    if (!l->known || !l->overlapping || !l->seen || !l->cands || !l->states) {
      log_msg(LOG_WARN, "sync: %s: %s", name,
              l->known && l->overlapping ? "out of memory" : err);
      listing_free(l);
      continue;
    }
    l->next = s->listings;
    s->listings = l;
    list_next(s, l, NULL);
  }
}

static void take_ended(struct syncer *s)
{
  struct batch_result r;
  void *tag;
  int rc;

  while (batch_multi_next(s->w->multi, &tag, &rc, &r)) {
    enum call_type type = *(enum call_type *)tag;
    const char *region = type == CALL_LIST ? ((struct listing *)tag)->region
                                           : ((struct sweep *)tag)->region;
    enum dispatch_method m =
        type == CALL_LIST                             ? DISPATCH_LIST
        : ((struct sweep *)tag)->step == SWEEP_CANCEL ? DISPATCH_CANCEL
        : ((struct sweep *)tag)->step == SWEEP_DELETE ? DISPATCH_DELETE
                                                      : DISPATCH_GET;
    static const char *const names[] = {"create", "get", "list", "cancel",
                                        "delete"};

    if (r.http_status > 0 || !strcmp(r.error.status, "DEADLINE_EXCEEDED"))
      dispatch_flow_observe(s->w->d->flow, region, m, r.elapsed_ms);
    metrics_batch_call(names[m], r.http_status);
    if (type == CALL_LIST)
      page_ended(s, tag, rc, &r);
    else
      sweep_ended(s, tag, rc, &r);
    batch_result_clear(&r);
  }
}

void *dispatch_sync_run(void *arg)
{
  struct dispatch_worker *w = arg;
  struct dispatch_shared *d = w->d;
  struct syncer s = {w, NULL, NULL, 0};
  long long next_sync = 0, next_flex = 0;
  bool first = true;
  char err[256];

  while (!atomic_load(&d->stop)) {
    long long now = dispatch_now_us(), next;

    if (dispatch_connect(w, NULL) != 0) {
      dispatch_wait(w, 1000);
      take_ended(&s);
      continue;
    }
    if (now >= next_flex) {
      next_flex = now + FLEX_CHECK_MS * 1000LL;
      if (db_batch_flex_expired(&w->conn, err, sizeof(err)) < 0)
        log_msg(LOG_WARN, "dws: %s", err);
    }
    /* a round still listing when the next is due finishes first */
    if (now >= next_sync && !s.listings) {
      json_t *regions;
      next_sync = now + d->cfg->sync_interval_ms * 1000LL;
      /* at start-up, at once the regions with active jobs; from the next
       * period on, every region a flavor uses, for the sweep */
      regions = first ? db_batch_regions(&w->conn, err, sizeof(err))
                      : db_batch_all_regions(&w->conn, err, sizeof(err));
      first = false;
      if (!regions)
        log_msg(LOG_WARN, "sync: %s", err);
      start_round(&s, regions);
      json_decref(regions);
    }
    next = next_flex < next_sync || s.listings ? next_flex : next_sync;
    now = dispatch_now_us();
    dispatch_wait(w, next > now ? (long)((next - now + 999) / 1000) : 0);
    take_ended(&s);
  }
  /* the calls under way are reads, or cancels of jobs nobody wants: the
   * multi handle's end aborts them */
  while (s.listings)
    listing_end(&s, s.listings);
  while (s.sweeps)
    sweep_done(&s, s.sweeps);
  return NULL;
}
