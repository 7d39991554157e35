/*
 * metrics_gauges.c — the admission leader's gauge sets: pending jobs,
 * quota usage, team cost and fair share, built outside the registry's lock
 * after a cycle and swapped in whole, so a scrape never sees half a cycle.
 * The registry and its exposition are metrics.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics.h"
#include "lib/metrics_internal.h"

struct metrics_gauges {
  struct family pending, usage, nominal, borrowing, team_cost;
  struct family fs_usage, fs_score;
};

struct metrics_gauges *metrics_gauges_new(void)
{
  return calloc(1, sizeof(struct metrics_gauges));
}

void metrics_gauges_free(struct metrics_gauges *g)
{
  if (!g)
    return;
  family_clear(&g->pending);
  family_clear(&g->usage);
  family_clear(&g->nominal);
  family_clear(&g->borrowing);
  family_clear(&g->team_cost);
  family_clear(&g->fs_usage);
  family_clear(&g->fs_score);
  free(g);
}

static void put_gauge(struct family *f, const struct lbuf *l, double v)
{
  struct series *s;

  if (l->overflow)
    return;
  s = family_append(f, l->s);
  if (s)
    s->value = v;
}

void metrics_gauge_pending(struct metrics_gauges *g, const char *cluster_queue,
                           const char *reason, double jobs)
{
  struct lbuf l;

  if (!g)
    return;
  lb_init(&l);
  lb_add(&l, "cluster_queue", cluster_queue);
  lb_add(&l, "reason", reason);
  put_gauge(&g->pending, &l, jobs);
}

void metrics_gauge_quota(struct metrics_gauges *g, const char *cluster_queue,
                         const char *flavor, const char *resource, double usage,
                         double nominal, double borrowing_limit)
{
  struct lbuf l;

  if (!g)
    return;
  lb_init(&l);
  lb_add(&l, "cluster_queue", cluster_queue);
  lb_add(&l, "flavor", flavor);
  lb_add(&l, "resource", resource);
  put_gauge(&g->usage, &l, usage);
  put_gauge(&g->nominal, &l, nominal);
  if (borrowing_limit >= 0)
    put_gauge(&g->borrowing, &l, borrowing_limit);
}

void metrics_gauge_team_cost(struct metrics_gauges *g, const char *team,
                             double usd)
{
  struct lbuf l;

  if (!g)
    return;
  lb_init(&l);
  lb_add(&l, "team", team);
  put_gauge(&g->team_cost, &l, usd);
}

void metrics_gauge_fair_share(struct metrics_gauges *g, const char *team,
                              const char *queue, const double usage[3],
                              double score)
{
  static const char *const res[3] = {"gpu", "cpu", "memory"};
  struct lbuf l;
  int r;

  if (!g)
    return;
  for (r = 0; r < 3; r++) {
    lb_init(&l);
    lb_add(&l, "team", team);
    lb_add(&l, "queue", queue);
    lb_add(&l, "resource", res[r]);
    put_gauge(&g->fs_usage, &l, usage[r]);
  }
  lb_init(&l);
  lb_add(&l, "team", team);
  lb_add(&l, "queue", queue);
  put_gauge(&g->fs_score, &l, score);
}

/* Exchange the series of a (published) and b (g's). */
static void swap_series(struct family *a, struct family *b)
{
  struct series *v = a->v;
  int n = a->n, cap = a->cap;

  a->v = b->v;
  a->n = b->n;
  a->cap = b->cap;
  b->v = v;
  b->n = n;
  b->cap = cap;
}

void metrics_publish_queues(struct metrics_gauges *g)
{
  struct metrics_gauges empty;

  memset(&empty, 0, sizeof(empty));
  pthread_mutex_lock(&metrics_lock);
  swap_series(&metrics_pending_jobs, g ? &g->pending : &empty.pending);
  swap_series(&metrics_cq_usage, g ? &g->usage : &empty.usage);
  swap_series(&metrics_cq_nominal, g ? &g->nominal : &empty.nominal);
  swap_series(&metrics_cq_borrowing, g ? &g->borrowing : &empty.borrowing);
  swap_series(&metrics_fs_usage, g ? &g->fs_usage : &empty.fs_usage);
  swap_series(&metrics_fs_score, g ? &g->fs_score : &empty.fs_score);
  pthread_mutex_unlock(&metrics_lock);
  /* the previous series are freed outside the lock */
  family_clear(&empty.pending);
  family_clear(&empty.usage);
  family_clear(&empty.nominal);
  family_clear(&empty.borrowing);
  family_clear(&empty.fs_usage);
  family_clear(&empty.fs_score);
  metrics_gauges_free(g);
}

void metrics_publish_team_costs(struct metrics_gauges *g)
{
  struct family empty;

  memset(&empty, 0, sizeof(empty));
  pthread_mutex_lock(&metrics_lock);
  swap_series(&metrics_team_cost, g ? &g->team_cost : &empty);
  pthread_mutex_unlock(&metrics_lock);
  family_clear(&empty);
  metrics_gauges_free(g);
}
