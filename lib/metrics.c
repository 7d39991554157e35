/*
 * metrics.c — a small Prometheus registry: its families and histograms,
 * the calls that record into them, the exposition (formatted under the
 * lock by metrics_text.c) and the reset. One mutex guards everything. The
 * series tables, label sets (escaped there) and histograms are
 * metrics_series.c; the leader's gauge sets, built outside the lock and
 * swapped in whole, metrics_gauges.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics.h"
#include "lib/metrics_internal.h"
#include "lib/metrics_text.h"

/* ---- the registry ----------------------------------------------------------
 */

static const double fast_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                     0.1,   0.25,   0.5,   1,    2.5,   5};
/* admission waits: from sub-second (idle queues) to a day */
static const double wait_bounds[] = {0.1, 0.5, 1,    5,    15,   30,    60,
                                     300, 900, 1800, 3600, 7200, 21600, 86400};

#define NBOUNDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;

static struct family http_requests = {
    "gpugate_http_requests_total",
    "counter",
    "HTTP requests by route template, method and status.",
    false,
    NULL,
    0,
    0};
static struct histogram http_seconds = {
    "gpugate_http_request_duration_seconds",
    "HTTP request duration, from the first byte read to the reply queued.",
    fast_bounds,
    NBOUNDS(fast_bounds),
    {0},
    0,
    0};
struct family metrics_pending_jobs = {
    "gpugate_pending_jobs",
    "gauge",
    "Pending jobs per cluster queue and reason after the last admission "
    "cycle (reported by the leader only).",
    false,
    NULL,
    0,
    0};
static struct family admitted_jobs = {
    "gpugate_admitted_jobs_total",
    "counter",
    "Jobs admitted by this replica while leader, by cluster queue and "
    "flavor.",
    false,
    NULL,
    0,
    0};
static struct family evicted_jobs = {
    "gpugate_evicted_jobs_total",
    "counter",
    "Jobs evicted by this replica while leader, by cluster queue and reason.",
    false,
    NULL,
    0,
    0};
static struct histogram wait_seconds = {
    "gpugate_admission_wait_seconds",
    "Time from a job's creation to its admission (this replica's "
    "admissions).",
    wait_bounds,
    NBOUNDS(wait_bounds),
    {0},
    0,
    0};
/* admission to Batch create: a fraction of a second when dispatch keeps
 * up, seconds to minutes with a backlog */
static const double create_bounds[] = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,
                                       10,   30,  60,   300, 900, 3600};
static struct histogram create_seconds = {
    "gpugate_batch_admission_to_create_seconds",
    "Time from a job's admission (or its Flex Start failover) to its Batch "
    "job's creation recorded (this replica's creates; a race counts its "
    "first copy).",
    create_bounds,
    NBOUNDS(create_bounds),
    {0},
    0,
    0};
static struct histogram cycle_seconds = {"gpugate_admission_cycle_seconds",
                                         "Admission cycle duration (leader "
                                         "only; failed cycles are not "
                                         "counted).",
                                         fast_bounds,
                                         NBOUNDS(fast_bounds),
                                         {0},
                                         0,
                                         0};
struct family metrics_cq_usage = {
    "gpugate_cluster_queue_usage",
    "gauge",
    "Quota held by admitted jobs per cluster queue, flavor and resource "
    "(gpu, cpu_milli, memory_mib; reported by the leader only).",
    false,
    NULL,
    0,
    0};
struct family metrics_cq_nominal = {
    "gpugate_cluster_queue_nominal_quota",
    "gauge",
    "Nominal quota per cluster queue, flavor and resource (reported by the "
    "leader only).",
    false,
    NULL,
    0,
    0};
struct family metrics_cq_borrowing = {
    "gpugate_cluster_queue_borrowing_limit",
    "gauge",
    "Borrowing limit per cluster queue, flavor and resource; absent when "
    "unlimited (reported by the leader only).",
    false,
    NULL,
    0,
    0};
static struct family batch_requests = {
    "gpugate_batch_requests_total",
    "counter",
    "Cloud Batch API calls by operation and HTTP status (0: no response).",
    false,
    NULL,
    0,
    0};
static struct family batch_orphans = {
    "gpugate_batch_orphans_total",
    "counter",
    "Batch jobs of this deployment that gpugate did not want (why: unknown, "
    "superseded, terminal), cancelled by the status sync, by region.",
    false,
    NULL,
    0,
    0};
static struct family batch_races = {
    "gpugate_batch_races_total",
    "counter",
    "Flex Start attempts dispatched in race mode (one Batch job per region "
    "at once).",
    false,
    NULL,
    0,
    0};
static struct family batch_race_winners = {
    "gpugate_batch_race_winners_total",
    "counter",
    "Races won, by the region of the winning copy.",
    false,
    NULL,
    0,
    0};
static struct family batch_race_overlap = {
    "gpugate_batch_race_overlap_seconds_total",
    "counter",
    "Seconds during which a losing copy of a raced job ran beside the "
    "winner, by the loser's region.",
    false,
    NULL,
    0,
    0};
static struct family dispatch_backlog = {
    "gpugate_dispatch_backlog",
    "gauge",
    "Batch operations waiting in the outbox, as this replica's dispatcher "
    "last counted them.",
    false,
    NULL,
    0,
    0};
static struct family billing_rows = {
    "gpugate_billing_rows_ingested_total",
    "counter",
    "Billing export rows stored by this replica (duplicates excluded).",
    true,
    NULL,
    0,
    0};
static struct family billing_sync_success = {
    "gpugate_billing_sync_last_success_timestamp_seconds",
    "gauge",
    "When the BigQuery pull of the billing export last succeeded (Unix "
    "seconds), as this replica last saw it.",
    false,
    NULL,
    0,
    0};
static struct family billing_rows_stored = {
    "gpugate_billing_rows",
    "gauge",
    "Billing export rows loaded by the BigQuery pull, over the days it "
    "holds.",
    false,
    NULL,
    0,
    0};
static struct family billing_unreconciled = {
    "gpugate_billing_days_unreconciled",
    "gauge",
    "Usage days of the billing export whose last read did not reconcile "
    "with the export's own count and sums (rolled back).",
    false,
    NULL,
    0,
    0};
static struct family billing_bytes = {
    "gpugate_billing_sync_bytes_processed",
    "gauge",
    "Bytes the last BigQuery pull's queries processed "
    "(totalBytesProcessed).",
    false,
    NULL,
    0,
    0};
static struct family state_drift = {
    "gpugate_admission_state_drift_total",
    "counter",
    "Jobs whose in-memory admission state differed from the database at a "
    "periodic reconciliation of this replica's leader (0 when healthy).",
    true,
    NULL,
    0,
    0};
static struct family pubsub_pushes = {
    "gpugate_pubsub_pushes_total",
    "counter",
    "Pub/Sub push deliveries to /v1/batch/notifications by outcome: applied, "
    "ignored (not a job state change), foreign (not a gpugate job), "
    "malformed (acknowledged, never retried), unauthorized (401), failed "
    "(503: retried by Pub/Sub).",
    false,
    NULL,
    0,
    0};
struct family metrics_fs_usage = {
    "gpugate_team_queue_fair_share_usage",
    "gauge",
    "Fair share over time: a team queue's decayed usage per resource (gpu "
    "in GPU-seconds, cpu in CPU-seconds, memory in GiB-seconds), for the "
    "cluster queues with usage_fair_sharing (leader only, after each "
    "admission run).",
    false,
    NULL,
    0,
    0};
struct family metrics_fs_score = {
    "gpugate_team_queue_fair_share_score",
    "gauge",
    "Fair share over time: a team queue's score (resource-weighted usage / "
    "fair_sharing_weight; lower goes first) (leader only).",
    false,
    NULL,
    0,
    0};
struct family metrics_team_cost = {
    "gpugate_team_month_net_cost_usd",
    "gauge",
    "Net cost (cost + credits) billed in USD for the current UTC month per "
    "team; \"(unattributed)\" for rows of no known team (leader only, "
    "refreshed about every 30 s).",
    false,
    NULL,
    0,
    0};

static struct family conn_refused = {
    "gpugate_http_connections_refused_total",
    "counter",
    "Connections closed as soon as accepted: over the per-client cap "
    "(reason=\"per_client\") or the total cap (reason=\"total\"); and "
    "requests through a trusted proxy answered 429 over their client's cap "
    "(reason=\"per_client_proxied\").",
    false,
    NULL,
    0,
    0};
static struct family conn_timed_out = {
    "gpugate_http_connections_timed_out_total",
    "counter",
    "Connections closed at a deadline: request headers not complete in "
    "time (phase=\"headers\"), body not complete (\"body\"), or no new "
    "request on a kept-alive connection (\"idle\").",
    false,
    NULL,
    0,
    0};
static struct family events_clients = {
    "gpugate_events_clients",
    "gauge",
    "Clients of the live event streams on this replica (Server-Sent "
    "Events of job events and their follows).",
    true,
    NULL,
    0,
    0};
static struct family events_dropped = {
    "gpugate_events_clients_dropped_total",
    "counter",
    "Event stream clients disconnected for falling more than "
    "GPUGATE_EVENTS_CLIENT_BUFFER behind.",
    true,
    NULL,
    0,
    0};
static struct family session_hits = {
    "gpugate_session_cache_hits_total",
    "counter",
    "Requests with the console's session cookie answered from this "
    "replica's cache of sessions, without reading PostgreSQL.",
    true,
    NULL,
    0,
    0};
static struct family session_flushes = {
    "gpugate_session_cache_flushes_total",
    "counter",
    "This replica's cache of console sessions emptied because a session "
    "ended or changed on some replica (the sessions' stamp moved).",
    true,
    NULL,
    0,
    0};
/* counted without the lock (one per cached request), copied at render */
static atomic_ullong session_hit_count, session_flush_count;
static struct family conn_open = {"gpugate_http_open_connections",
                                  "gauge",
                                  "HTTP connections open now (both listeners).",
                                  true,
                                  NULL,
                                  0,
                                  0};

/* ---- recording --------------------------------------------------------------
 */

/* Add v to name{labels} (set: assign it). Takes the lock. */
static void add(struct family *f, const struct lbuf *l, double v, bool set)
{
  struct series *s;

  if (l->overflow)
    return;
  pthread_mutex_lock(&metrics_lock);
  s = family_lookup(f, l->s);
  if (s)
    s->value = set ? v : s->value + v;
  pthread_mutex_unlock(&metrics_lock);
}

static const char *method_label(const char *m)
{
  static const char *const known[] = {"GET",     "HEAD",    "POST",
                                      "PUT",     "DELETE",  "PATCH",
                                      "OPTIONS", "CONNECT", "TRACE"};
  size_t i;

  for (i = 0; m && i < sizeof(known) / sizeof(known[0]); i++)
    if (!strcmp(m, known[i]))
      return known[i];
  return "other";
}

void metrics_http(const char *route, const char *method, unsigned status,
                  double seconds)
{
  struct lbuf l;
  char code[16];
  struct series *s = NULL;

  snprintf(code, sizeof(code), "%u", status);
  lb_init(&l);
  lb_add(&l, "route", route);
  lb_add(&l, "method", method_label(method));
  lb_add(&l, "code", code);
  pthread_mutex_lock(&metrics_lock);
  if (!l.overflow)
    s = family_lookup(&http_requests, l.s);
  if (s)
    s->value++;
  histogram_observe(&http_seconds, seconds);
  pthread_mutex_unlock(&metrics_lock);
}

void metrics_batch_call(const char *op, long http_status)
{
  struct lbuf l;
  char code[24];

  snprintf(code, sizeof(code), "%ld", http_status);
  lb_init(&l);
  lb_add(&l, "op", op);
  lb_add(&l, "code", code);
  add(&batch_requests, &l, 1, false);
}

void metrics_dispatch_backlog(long rows)
{
  struct lbuf l;

  if (rows < 0)
    return;
  lb_init(&l);
  add(&dispatch_backlog, &l, (double)rows, true);
}

void metrics_billing_rows(long n)
{
  struct lbuf l;

  if (n <= 0)
    return;
  lb_init(&l);
  add(&billing_rows, &l, (double)n, false);
}

void metrics_billing_sync(double last_success_s, long rows, long unreconciled,
                          long long bytes)
{
  struct lbuf l;

  lb_init(&l);
  if (last_success_s > 0)
    add(&billing_sync_success, &l, last_success_s, true);
  lb_init(&l);
  if (rows >= 0)
    add(&billing_rows_stored, &l, (double)rows, true);
  lb_init(&l);
  if (unreconciled >= 0)
    add(&billing_unreconciled, &l, (double)unreconciled, true);
  lb_init(&l);
  if (bytes >= 0)
    add(&billing_bytes, &l, (double)bytes, true);
}

void metrics_admission_drift(long n)
{
  struct lbuf l;

  lb_init(&l);
  add(&state_drift, &l, (double)(n > 0 ? n : 0), false);
}

void metrics_pubsub_push(const char *outcome)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "outcome", outcome);
  add(&pubsub_pushes, &l, 1, false);
}

void metrics_conn_refused(const char *reason)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "reason", reason);
  add(&conn_refused, &l, 1, false);
}

void metrics_conn_timed_out(const char *phase)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "phase", phase);
  add(&conn_timed_out, &l, 1, false);
}

void metrics_conn_open(long n)
{
  struct lbuf l;

  lb_init(&l);
  add(&conn_open, &l, (double)(n > 0 ? n : 0), true);
}

void metrics_events_clients(long n)
{
  struct lbuf l;

  lb_init(&l);
  add(&events_clients, &l, (double)(n > 0 ? n : 0), true);
}

void metrics_session_cache_hit(void)
{
  atomic_fetch_add_explicit(&session_hit_count, 1, memory_order_relaxed);
}

void metrics_session_cache_flush(void)
{
  atomic_fetch_add_explicit(&session_flush_count, 1, memory_order_relaxed);
}

void metrics_events_dropped(void)
{
  struct lbuf l;

  lb_init(&l);
  add(&events_dropped, &l, 1, false);
}

void metrics_admission_cycle(double seconds)
{
  pthread_mutex_lock(&metrics_lock);
  histogram_observe(&cycle_seconds, seconds);
  pthread_mutex_unlock(&metrics_lock);
}

void metrics_admitted(const char *cluster_queue, const char *flavor)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "cluster_queue", cluster_queue);
  lb_add(&l, "flavor", flavor);
  add(&admitted_jobs, &l, 1, false);
}

void metrics_batch_orphan(const char *region, const char *why)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "region", region);
  lb_add(&l, "why", why);
  add(&batch_orphans, &l, 1, false);
}

void metrics_batch_race(const char *event, const char *region, double seconds)
{
  struct lbuf l;

  lb_init(&l);
  if (!strcmp(event, "started")) {
    add(&batch_races, &l, 1, false);
    return;
  }
  lb_add(&l, "region", region);
  if (!strcmp(event, "winner"))
    add(&batch_race_winners, &l, 1, false);
  else if (!strcmp(event, "overlap"))
    add(&batch_race_overlap, &l, seconds, false);
}

void metrics_evicted(const char *cluster_queue, const char *reason)
{
  struct lbuf l;

  lb_init(&l);
  lb_add(&l, "cluster_queue", cluster_queue);
  lb_add(&l, "reason", reason);
  add(&evicted_jobs, &l, 1, false);
}

void metrics_batch_admission_to_create(double seconds)
{
  pthread_mutex_lock(&metrics_lock);
  histogram_observe(&create_seconds, seconds > 0 ? seconds : 0);
  pthread_mutex_unlock(&metrics_lock);
}

void metrics_admission_wait(double seconds)
{
  pthread_mutex_lock(&metrics_lock);
  histogram_observe(&wait_seconds, seconds > 0 ? seconds : 0);
  pthread_mutex_unlock(&metrics_lock);
}

/*
 * The exposition; with teams false, without the families that belong to
 * teams: per-team money, and everything labelled with a cluster queue
 * (cluster queues are named after teams, and their pending counts and
 * usage are a team's business).
 */
static char *render(bool teams)
{
  struct out o = {NULL, 0, 0, false};
  struct lbuf l;

  o.buf = malloc(16384);
  if (!o.buf)
    return NULL;
  o.cap = 16384;
  o.buf[0] = '\0';
  lb_init(&l);
  add(&session_hits, &l, (double)atomic_load(&session_hit_count), true);
  add(&session_flushes, &l, (double)atomic_load(&session_flush_count), true);
  pthread_mutex_lock(&metrics_lock);
  metrics_text_family(&o, &http_requests);
  metrics_text_histogram(&o, &http_seconds);
  if (teams) {
    metrics_text_family(&o, &metrics_pending_jobs);
    metrics_text_family(&o, &admitted_jobs);
    metrics_text_family(&o, &evicted_jobs);
  }
  metrics_text_histogram(&o, &wait_seconds);
  metrics_text_histogram(&o, &cycle_seconds);
  if (teams) {
    metrics_text_family(&o, &metrics_cq_usage);
    metrics_text_family(&o, &metrics_cq_nominal);
    metrics_text_family(&o, &metrics_cq_borrowing);
    metrics_text_family(&o, &metrics_fs_usage);
    metrics_text_family(&o, &metrics_fs_score);
  }
  metrics_text_family(&o, &batch_requests);
  metrics_text_family(&o, &batch_orphans);
  metrics_text_family(&o, &batch_races);
  metrics_text_family(&o, &batch_race_winners);
  metrics_text_family(&o, &batch_race_overlap);
  metrics_text_histogram(&o, &create_seconds);
  metrics_text_family(&o, &dispatch_backlog);
  metrics_text_family(&o, &billing_rows);
  metrics_text_family(&o, &billing_sync_success);
  metrics_text_family(&o, &billing_rows_stored);
  metrics_text_family(&o, &billing_unreconciled);
  metrics_text_family(&o, &billing_bytes);
  metrics_text_family(&o, &pubsub_pushes);
  if (teams)
    metrics_text_family(&o, &metrics_team_cost);
  metrics_text_family(&o, &conn_refused);
  metrics_text_family(&o, &conn_timed_out);
  metrics_text_family(&o, &conn_open);
  metrics_text_family(&o, &events_clients);
  metrics_text_family(&o, &events_dropped);
  metrics_text_family(&o, &session_hits);
  metrics_text_family(&o, &session_flushes);
  metrics_text_family(&o, &state_drift);
  pthread_mutex_unlock(&metrics_lock);
  metrics_text_process(&o);
  if (o.failed) {
    free(o.buf);
    return NULL;
  }
  return o.buf;
}

char *metrics_render(void)
{
  return render(true);
}

char *metrics_render_public(void)
{
  return render(false);
}

void metrics_reset(void)
{
  struct family *all[] = {&http_requests,        &metrics_pending_jobs,
                          &admitted_jobs,        &evicted_jobs,
                          &metrics_cq_usage,     &metrics_cq_nominal,
                          &metrics_cq_borrowing, &batch_requests,
                          &dispatch_backlog,     &billing_rows,
                          &metrics_team_cost,    &pubsub_pushes,
                          &state_drift,          &conn_refused,
                          &conn_timed_out,       &conn_open,
                          &events_clients,       &events_dropped,
                          &session_hits,         &session_flushes,
                          &batch_orphans,        &batch_races,
                          &batch_race_winners,   &batch_race_overlap,
                          &metrics_fs_usage,     &metrics_fs_score,
                          &billing_sync_success, &billing_rows_stored,
                          &billing_unreconciled, &billing_bytes};
  size_t i;

  pthread_mutex_lock(&metrics_lock);
  for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    family_clear(all[i]);
  histogram_clear(&http_seconds);
  histogram_clear(&wait_seconds);
  histogram_clear(&cycle_seconds);
  histogram_clear(&create_seconds);
  atomic_store(&session_hit_count, 0);
  atomic_store(&session_flush_count, 0);
  pthread_mutex_unlock(&metrics_lock);
}
