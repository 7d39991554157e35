/*
 * sched_publish.c (db) — what the admission leader publishes from its
 * state in memory: the queue positions (only the rows that moved, pruned
 * once their jobs leave), the per-queue counts of pending and admitted
 * jobs, and the teams' spend read back for the budget check. The state
 * itself is kept current by sched_state.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/sched_state.h"

#define ALLOC(ptr, n) ((ptr) = calloc((size_t)(n) + 1, sizeof(*(ptr))))

/* ---- positions ------------------------------------------------------- */

static const char sql_publish[] =
    "INSERT INTO job_positions AS p (job_id, position_in_queue, "
    "position_in_cluster_queue, ahead_gpus) "
    "SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) "
    "ON CONFLICT (job_id) DO UPDATE SET "
    "position_in_queue = excluded.position_in_queue, "
    "position_in_cluster_queue = excluded.position_in_cluster_queue, "
    "ahead_gpus = excluded.ahead_gpus";

/* A growing PostgreSQL array literal of names and numbers, each quoted
 * (a name like "null" stays a string); none holds a quote or backslash. */
struct lit {
  char *buf;
  size_t len, cap;
};

static int lit_add(struct lit *l, const char *tok)
{
  size_t n = strlen(tok);

  if (l->len + n + 5 > l->cap) {
    size_t cap = (l->cap + n + 5) * 2;
    char *b = realloc(l->buf, cap);
    if (!b)
      return -1;
    l->buf = b;
    l->cap = cap;
  }
  l->buf[l->len] = l->len > 0 ? ',' : '{';
  l->buf[l->len + 1] = '"';
  memcpy(l->buf + l->len + 2, tok, n);
  l->buf[l->len + 2 + n] = '"';
  l->len += n + 3;
  l->buf[l->len] = '\0';
  return 0;
}

static const char *lit_end(struct lit *l)
{
  if (!l->buf || !l->len)
    return "{}";
  l->buf[l->len++] = '}';
  l->buf[l->len] = '\0';
  return l->buf;
}

/*
 * Exact positions near the head; deeper in a long queue, a published
 * position is rewritten once it is off by more than a tenth. One job
 * moving to the front of 100,000 would otherwise rewrite every position
 * behind it, on every such change; a user 40,000th in line gains nothing
 * from learning that they are now 39,999th.
 */
#define EXACT_DEPTH 1000

static bool off(int64_t published, int64_t now)
{
  int64_t d = published > now ? published - now : now - published;

  return d * 10 > now;
}

static bool stale(const struct sched_state_job *j,
                  const struct sched_position *p)
{
  if (j->pos_queue < 0 || j->pos_cq < 0)
    return true;
  if (p->pos_queue <= EXACT_DEPTH || p->pos_cq <= EXACT_DEPTH)
    return j->pos_queue != p->pos_queue || j->pos_cq != p->pos_cq ||
           j->ahead_gpus != p->ahead_gpus;
  return off(j->pos_queue, p->pos_queue) || off(j->pos_cq, p->pos_cq) ||
         off(j->ahead_gpus, p->ahead_gpus);
}

/* qsort has no argument: the positions being sorted, for cmp_rank */
static _Thread_local const struct sched_position *order_of;

static int cmp_rank(const void *pa, const void *pb)
{
  const struct sched_position *a = &order_of[*(const int *)pa];
  const struct sched_position *b = &order_of[*(const int *)pb];

  if (a->pos_cq != b->pos_cq)
    return a->pos_cq < b->pos_cq ? -1 : 1;
  return a->job < b->job ? -1 : a->job > b->job;
}

int db_sched_state_publish(struct db_conn *c, struct sched_state *st,
                           int max_rows, int *left, char *err, size_t errlen)
{
  struct sched_position *pos = NULL;
  struct lit ids = {0}, pq = {0}, pc = {0}, ag = {0};
  const char *params[4];
  char num_s[24];
  int *written = NULL;
  int i, n = 0, nw = 0, rc = -1;

  *left = 0;
  if (sched_state_positions(st, &pos, &n))
    goto oom;
  if (!ALLOC(written, n))
    goto oom;
  /* the changed ones, nearest the head first */
  for (i = 0; i < n; i++)
    if (stale(&st->jobs[pos[i].job], &pos[i]))
      written[nw++] = i;
  order_of = pos;
  qsort(written, (size_t)nw, sizeof(*written), cmp_rank);
  order_of = NULL;
  if (nw > max_rows) {
    *left = nw - max_rows;
    nw = max_rows;
  }
  for (i = 0; i < nw; i++) {
    const struct sched_position *p = &pos[written[i]];
    if (lit_add(&ids, st->jobs[p->job].id))
      goto oom;
    snprintf(num_s, sizeof(num_s), "%d", (int)p->pos_queue);
    if (lit_add(&pq, num_s))
      goto oom;
    snprintf(num_s, sizeof(num_s), "%d", (int)p->pos_cq);
    if (lit_add(&pc, num_s))
      goto oom;
    snprintf(num_s, sizeof(num_s), "%lld", (long long)p->ahead_gpus);
    if (lit_add(&ag, num_s))
      goto oom;
  }
  if (nw) {
    params[0] = lit_end(&ids);
    params[1] = lit_end(&pq);
    params[2] = lit_end(&pc);
    params[3] = lit_end(&ag);
    if (db_run(c, sql_publish, 4, params, NULL, err, errlen))
      goto out;
    for (i = 0; i < nw; i++) {
      struct sched_state_job *j = &st->jobs[pos[written[i]].job];
      j->pos_queue = pos[written[i]].pos_queue;
      j->pos_cq = pos[written[i]].pos_cq;
      j->ahead_gpus = pos[written[i]].ahead_gpus;
    }
  }
  rc = 0;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  free(pos);
  free(written);
  free(ids.buf);
  free(pq.buf);
  free(pc.buf);
  free(ag.buf);
  return rc;
}

static const char sql_prune[] =
    "DELETE FROM job_positions p USING jobs j WHERE j.id = p.job_id "
    "AND j.state <> 'PENDING' RETURNING p.job_id";

int db_sched_state_prune(struct db_conn *c, struct sched_state *st, int *n,
                         char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql_prune, 0, NULL, err, errlen);
  int i, k;

  *n = 0;
  if (!res)
    return -1;
  for (i = 0; i < PQntuples(res); i++) {
    k = sched_state_find(st, PQgetvalue(res, i, 0));
    if (k < 0)
      continue;
    st->jobs[k].pos_queue = -1;
    st->jobs[k].pos_cq = -1;
    st->jobs[k].ahead_gpus = -1;
  }
  *n = PQntuples(res);
  PQclear(res);
  return 0;
}

/* ---- counts ---------------------------------------------------------- */

static const char sql_counts_clear[] = "DELETE FROM admission_counts";

static const char sql_counts_put[] =
    "INSERT INTO admission_counts (team, queue, cluster_queue, pending, "
    "admitted) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], "
    "$4::bigint[], $5::bigint[])";

int db_sched_state_publish_counts(struct db_conn *c,
                                  const struct sched_state *st, char **last,
                                  char *err, size_t errlen)
{
  struct sched_count *cnt = NULL;
  struct lit col[5] = {{0}};
  const char *params[5];
  char num_s[24];
  size_t total = 0;
  char *all = NULL;
  int i, k, n = 0, rc = -1;

  if (sched_state_counts(st, &cnt, &n))
    goto oom;
  for (i = 0; i < n; i++) {
    if (lit_add(&col[0], cnt[i].team) || lit_add(&col[1], cnt[i].queue) ||
        lit_add(&col[2], cnt[i].cq))
      goto oom;
    snprintf(num_s, sizeof(num_s), "%lld", (long long)cnt[i].pending);
    if (lit_add(&col[3], num_s))
      goto oom;
    snprintf(num_s, sizeof(num_s), "%lld", (long long)cnt[i].admitted);
    if (lit_add(&col[4], num_s))
      goto oom;
  }
  for (k = 0; k < 5; k++) {
    params[k] = lit_end(&col[k]);
    total += strlen(params[k]) + 1;
  }
  if (!(all = malloc(total + 1)))
    goto oom;
  all[0] = '\0';
  for (k = 0, total = 0; k < 5; k++) {
    size_t len = strlen(params[k]);
    memcpy(all + total, params[k], len);
    all[total + len] = ';';
    total += len + 1;
    all[total] = '\0';
  }
  if (*last && !strcmp(*last, all)) {
    rc = 0;
    goto out;
  }
  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    goto out;
  }
  if (db_run(c, sql_counts_clear, 0, NULL, NULL, err, errlen) ||
      (n && db_run(c, sql_counts_put, 5, params, NULL, err, errlen)) ||
      db_commit(c) != GG_OK) {
    if (!*err)
      snprintf(err, errlen, "COMMIT failed");
    db_rollback(c);
    goto out;
  }
  free(*last);
  *last = all;
  all = NULL;
  rc = 0;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  free(cnt);
  free(all);
  for (k = 0; k < 5; k++)
    free(col[k].buf);
  return rc;
}

/* ---- team spend ------------------------------------------------------ */

static const char sql_spend[] =
    "SELECT team, sum(cost + credits)::float8 FROM cost_rollups "
    "WHERE currency = 'USD' "
    "AND report_day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date "
    "GROUP BY team";

int db_sched_state_spend(struct db_conn *c, struct db_sched *cfg, bool *moved,
                         char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql_spend, 0, NULL, err, errlen);
  double *spent;
  int i, t;

  *moved = false;
  if (!res)
    return -1;
  if (!ALLOC(spent, cfg->in.n_teams)) {
    PQclear(res);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (i = 0; i < PQntuples(res); i++) {
    t = db_sched_find((const char(*)[DB_NAME_LEN])cfg->team_names,
                      cfg->in.n_teams, PQgetvalue(res, i, 0));
    if (t >= 0)
      spent[t] = strtod(PQgetvalue(res, i, 1), NULL);
  }
  for (t = 0; t < cfg->in.n_teams; t++)
    if (cfg->teams[t].spent != spent[t]) {
      cfg->teams[t].spent = spent[t];
      *moved = true;
    }
  free(spent);
  PQclear(res);
  return 0;
}
