/*
 * metrics.h — process-wide counters, gauges and histograms for GET /metrics
 * (Prometheus text format 0.0.4). The metric names are SPEC §7's and are a
 * public interface: dashboards and alert rules in deploy/ depend on them.
 *
 * Label sets are bounded: routes are their templates, methods a fixed list,
 * Batch operations a fixed list, codes HTTP statuses, cluster queues,
 * flavors and teams the configured ones. Each family holds at most
 * METRICS_MAX_SERIES label sets; new ones beyond are dropped.
 *
 * The leader's view of the queues (pending jobs, usage, quotas) and of team
 * spend is built after a cycle into a struct metrics_gauges and published
 * whole, replacing the previous set, so that a deleted cluster queue or team
 * disappears. A replica that is not the leader publishes nothing (NULL):
 * summing these gauges over replicas gives the leader's figures.
 *
 * All functions are thread-safe.
 */
#ifndef GPUGATE_METRICS_H
#define GPUGATE_METRICS_H

#include <stddef.h>

#define METRICS_MAX_SERIES 4096 /* label sets per family */

/* One HTTP request: its route template (or "(none)"), method, status and
 * duration. Methods outside the standard ones are counted as "other". */
void metrics_http(const char *route, const char *method, unsigned status,
                  double seconds);

/* One Cloud Batch call (op: create, get, list, cancel, delete) and the
 * HTTP status it got (0: no response). */
void metrics_batch_call(const char *op, long http_status);
/* A Batch job the status sync swept (why: unknown, superseded, terminal). */
void metrics_batch_orphan(const char *region, const char *why);
/* Race mode: event "started" (a race dispatched), "winner" (region won) or
 * "overlap" (seconds a loser in region ran beside the winner). */
void metrics_batch_race(const char *event, const char *region, double seconds);

/* A job's Batch create recorded seconds after its admission (or the
 * failover that asked for it). */
void metrics_batch_admission_to_create(double seconds);

/* Outbox rows waiting to be sent (-1: unknown, ignored). */
void metrics_dispatch_backlog(long rows);

/* Billing export rows stored (new rows only; n <= 0 is ignored). */
void metrics_billing_rows(long n);

/* The BigQuery pull: when it last succeeded (Unix seconds; 0: never, not
 * set), the rows it holds, the days not reconciled and the last sync's
 * bytes processed (each -1: unknown, not set). */
void metrics_billing_sync(double last_success_s, long rows, long unreconciled,
                          long long bytes);

/* A reconciliation of the leader's admission state found n jobs different
 * from the database (0 records that one ran). */
void metrics_admission_drift(long n);
/* Connections (server/connlimit.c): one refused as accepted, by reason
 * ("per_client", "total"); one closed at a deadline, by phase ("headers",
 * "body", "idle"); how many are open now. */
void metrics_conn_refused(const char *reason);
void metrics_conn_timed_out(const char *phase);
void metrics_conn_open(long n);
/* Live event streams (server/events_hub.c): how many clients now; one
 * dropped for falling behind. */
void metrics_events_clients(long n);
void metrics_events_dropped(void);
/* Console sessions (server/session.c): a request answered from the
 * replica's cache of sessions; the cache emptied because the sessions'
 * stamp moved (a session ended or changed on some replica). */
void metrics_session_cache_hit(void);
void metrics_session_cache_flush(void);
/* One Pub/Sub push by outcome: applied, ignored, foreign, malformed,
 * unauthorized, failed (a fixed list: see handlers/notifications.c). */
void metrics_pubsub_push(const char *outcome);

/* One admission cycle: how long it took, admissions and evictions. */
void metrics_admission_cycle(double seconds);
void metrics_admitted(const char *cluster_queue, const char *flavor);
void metrics_evicted(const char *cluster_queue, const char *reason);

/* An admitted job's wait from creation to admission (negative: 0). */
void metrics_admission_wait(double seconds);

/* A set of leader gauges under construction (opaque). */
struct metrics_gauges;

/* A new empty set, or NULL on allocation failure. */
struct metrics_gauges *metrics_gauges_new(void);

/* Free a set that was not published. Accepts NULL. */
void metrics_gauges_free(struct metrics_gauges *g);

/*
 * Add series to g (strings are copied). Each label set must be added once
 * per set: the functions append, they do not look for an earlier value.
 * A borrowing_limit below 0 means unlimited: no borrowing-limit series.
 * g may be NULL (nothing happens).
 */
void metrics_gauge_pending(struct metrics_gauges *g, const char *cluster_queue,
                           const char *reason, double jobs);
void metrics_gauge_quota(struct metrics_gauges *g, const char *cluster_queue,
                         const char *flavor, const char *resource, double usage,
                         double nominal, double borrowing_limit);
/* Fair share over time: a team queue's usage (gpu, cpu, memory) and
 * score (private page). */
void metrics_gauge_fair_share(struct metrics_gauges *g, const char *team,
                              const char *queue, const double usage[3],
                              double score);
void metrics_gauge_team_cost(struct metrics_gauges *g, const char *team,
                             double usd);

/*
 * Replace the published queue gauges (pending jobs, usage, nominal quota,
 * borrowing limit) with g's, or clear them when g is NULL. Steals g.
 */
void metrics_publish_queues(struct metrics_gauges *g);

/* The same for the team month net cost gauge. Steals g. */
void metrics_publish_team_costs(struct metrics_gauges *g);

/*
 * The whole exposition as a new NUL-terminated string (caller frees), or
 * NULL on allocation failure. Includes process_* metrics read from /proc.
 */
char *metrics_render(void);

/*
 * The same without anything that belongs to a team (team spend, and the
 * families labelled by cluster queue): what an unauthenticated /metrics
 * shows. New buffer or NULL, as metrics_render(). Thread-safe.
 */
char *metrics_render_public(void);

/* Forget every series and observation (unit tests). */
void metrics_reset(void);

#endif
