/*
 * test_sched_state.c — the admission leader's in-memory job table
 * (scheduler/state.c): queue positions as a table of cases, and a seeded
 * random walk of puts, replacements and removals (the change feed's
 * operations) after each of which the incrementally kept table equals one
 * rebuilt from scratch and its positions equal the ones counted by brute
 * force.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/state.h"

Suite *sched_state_suite(void);

/* the names the cases' jobs carry: put() takes them as its own */
static struct sched_state names;

static struct sched_state_job mk(const char *id, const char *team,
                                 const char *queue, const char *cq,
                                 const char *state, int prio, int64_t created,
                                 int64_t seq, int64_t gpu)
{
  struct sched_state_job j;

  memset(&j, 0, sizeof(j));
  snprintf(j.id, sizeof(j.id), "%s", id);
  j.team = sched_state_name(&names, team);
  j.queue = sched_state_name(&names, queue);
  j.cq = sched_state_name(&names, cq);
  ck_assert_ptr_nonnull(j.team);
  ck_assert_ptr_nonnull(j.queue);
  ck_assert_ptr_nonnull(j.cq);
  snprintf(j.state, sizeof(j.state), "%s", state);
  j.priority = prio;
  j.created_at = created;
  j.seq = seq;
  j.request[SCHED_GPU] = gpu;
  j.attempt = 1;
  return j;
}

struct pos_case {
  const char *id;
  const char *team, *queue, *cq, *state;
  int prio;
  int64_t created, seq, gpu;
  int32_t want_q, want_cq; /* 0: not pending, no position */
  int64_t want_gpus;
};

/* Two teams' queues on one CQ, another CQ, an admitted job that never
 * counts, priority before creation time, seq breaking ties. */
static const struct pos_case pos_cases[] = {
    {"a1", "ta", "lp", "cq1", "PENDING", 10, 100, 1, 2, 2, 3, 6},
    {"a2", "ta", "lp", "cq1", "PENDING", 20, 300, 2, 4, 1, 1, 0},
    {"b1", "tb", "lp", "cq1", "PENDING", 10, 50, 3, 2, 1, 2, 4},
    {"b2", "tb", "lp", "cq1", "ADMITTED", 30, 10, 4, 8, 0, 0, 0},
    {"b3", "tb", "lp", "cq1", "PENDING", 10, 100, 5, 1, 2, 4, 8},
    {"a3", "ta", "lp", "cq1", "PENDING", 10, 100, 6, 1, 3, 5, 9},
    {"c1", "ta", "hp", "cq2", "PENDING", 5, 1, 7, 4, 1, 1, 0},
    {"b4", "tb", "lp", "cq1", "PENDING", 10, 100, 8, 1, 3, 6, 10},
};
#define N_POS_CASES ((int)(sizeof(pos_cases) / sizeof(pos_cases[0])))

START_TEST(positions_table)
{
  struct sched_state st;
  struct sched_position *pos;
  int i, k, n, seen = 0;

  sched_state_init(&st);
  for (i = 0; i < N_POS_CASES; i++) {
    const struct pos_case *c = &pos_cases[i];
    struct sched_state_job j = mk(c->id, c->team, c->queue, c->cq, c->state,
                                  c->prio, c->created, c->seq, c->gpu);
    ck_assert_int_ge(sched_state_put(&st, &j), 0);
  }
  ck_assert_int_eq(sched_state_positions(&st, &pos, &n), 0);
  for (i = 0; i < N_POS_CASES; i++) {
    const struct pos_case *c = &pos_cases[i];
    int idx = sched_state_find(&st, c->id);
    for (k = 0; k < n && pos[k].job != idx; k++)
      ;
    if (!c->want_q) {
      ck_assert_msg(k == n, "%s: not pending, yet placed", c->id);
      continue;
    }
    seen++;
    ck_assert_msg(k < n, "%s: no position", c->id);
    ck_assert_msg(pos[k].pos_queue == c->want_q, "%s: queue %d want %d", c->id,
                  pos[k].pos_queue, c->want_q);
    ck_assert_msg(pos[k].pos_cq == c->want_cq, "%s: cq %d want %d", c->id,
                  pos[k].pos_cq, c->want_cq);
    ck_assert_msg(pos[k].ahead_gpus == c->want_gpus, "%s: gpus %lld want %lld",
                  c->id, (long long)pos[k].ahead_gpus, (long long)c->want_gpus);
  }
  ck_assert_int_eq(seen, n);
  free(pos);
  sched_state_free(&st);
}
END_TEST

/* ---- random walk ---- */

#define MODEL_MAX 300
#define STEPS 6000

static uint64_t rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static const char *const states[] = {"PENDING", "PENDING", "ADMITTED",
                                     "RUNNING", "EVICTING"};
static const char *const locs[] = {NULL, "[]", "[\"us-central1\"]"};

/* spread: a team queue's jobs in any cluster queue (its cluster queue
 * changed while jobs were in it); otherwise the team queue decides it */
static struct sched_state_job random_job(uint64_t *s, int k, bool spread)
{
  char id[32], team[8], queue[8], cq[8];
  struct sched_state_job j;
  int t = (int)(rnd(s) % 3), q = (int)(rnd(s) % 2);

  snprintf(id, sizeof(id), "j-%04d", k);
  snprintf(team, sizeof(team), "t%d", t);
  snprintf(queue, sizeof(queue), "q%d", q);
  snprintf(cq, sizeof(cq), "cq%d", spread ? (int)(rnd(s) % 3) : (t + q) % 3);
  j = mk(id, team, queue, cq, states[rnd(s) % 5], (int)(rnd(s) % 3) * 10,
         (int64_t)(rnd(s) % 50), k, (int64_t)(rnd(s) % 8));
  j.attempt = 1 + (int)(rnd(s) % 3);
  j.change_xid = rnd(s) % 100000;
  j.locations = (char *)locs[rnd(s) % 3];
  return j;
}

/* The random walk's fair-share keys by team t and queue q (walk _i 2):
 * the tie group of the team queue's score, and whether it goes before
 * priority (per cluster queue: a team queue's jobs stay in one then). */
static int fs_group[3][2];
static bool fs_on;

static void fs_key_of(const struct sched_state_job *j, int *group, bool *first)
{
  int t = j->team->s[1] - '0', q = j->queue->s[1] - '0';

  *group = fs_on ? fs_group[t][q] : 0;
  *first = fs_on && ((t + q) % 3) % 2 == 0;
}

/* o goes before j in admission order (same cluster queue) */
static bool goes_before(const struct sched_state_job *o,
                        const struct sched_state_job *j)
{
  int go, gj;
  bool first, unused;

  fs_key_of(o, &go, &first);
  fs_key_of(j, &gj, &unused);
  if (first && go != gj)
    return go < gj;
  if (o->priority != j->priority)
    return o->priority > j->priority;
  if (go != gj)
    return go < gj;
  return o->created_at < j->created_at ||
         (o->created_at == j->created_at && o->seq < j->seq);
}

/* Set random keys on the team queues (some left without one). */
static void fs_rekey(struct sched_state *st, uint64_t *s)
{
  struct sched_fs_key keys[6];
  char team[16], queue[16];
  int t, q, n = 0;

  for (t = 0; t < 3; t++)
    for (q = 0; q < 2; q++) {
      fs_group[t][q] = (int)(rnd(s) % 3);
      if (fs_group[t][q] == 0 && rnd(s) % 2 && ((t + q) % 3) % 2 != 0)
        continue; /* no key: the same as group 0, not first */
      snprintf(team, sizeof(team), "t%d", t);
      snprintf(queue, sizeof(queue), "q%d", q);
      keys[n].team = sched_state_name(&names, team);
      keys[n].queue = sched_state_name(&names, queue);
      keys[n].group = fs_group[t][q];
      keys[n].first = ((t + q) % 3) % 2 == 0;
      n++;
    }
  ck_assert_int_eq(sched_state_fs_order(st, keys, n), 0);
}

/* Brute force: 1 + the pending jobs ahead of j in its scope. */
static int ahead_of(const struct sched_state_job *m, const bool *live, int n,
                    const struct sched_state_job *j, bool cq_scope,
                    int64_t *gpus)
{
  int i, count = 1;

  *gpus = 0;
  for (i = 0; i < n; i++) {
    const struct sched_state_job *o = &m[i];
    if (!live[i])
      continue;
    bool same = cq_scope ? !strcmp(o->cq->s, j->cq->s)
                         : !strcmp(o->team->s, j->team->s) &&
                               !strcmp(o->queue->s, j->queue->s);
    if (!same || !goes_before(o, j) || strcmp(o->state, "PENDING") != 0)
      continue;
    count++;
    *gpus += o->request[SCHED_GPU];
  }
  return count;
}

/* Brute force: the pending and holding jobs of the model in j's team
 * queue and cluster queue. */
static void count_of(const struct sched_state_job *m, const bool *live, int n,
                     const char *team, const char *queue, const char *cq,
                     int64_t *pending, int64_t *admitted)
{
  int i;

  *pending = *admitted = 0;
  for (i = 0; i < n; i++)
    if (live[i] && !strcmp(m[i].team->s, team) &&
        !strcmp(m[i].queue->s, queue) && !strcmp(m[i].cq->s, cq)) {
      if (!strcmp(m[i].state, "PENDING"))
        ++*pending;
      else
        ++*admitted;
    }
}

/* _i: 0 with team queues spread over cluster queues, 1 without, 2 without
 * and with fair-share keys that change every 40 steps (a changed key
 * places that team queue's jobs again, the others keep their place).
 * Positions and counts are checked every few steps, so that the order the
 * state keeps between two computations is merged into many times. */
START_TEST(random_walk_equals_rebuild)
{
  static struct sched_state_job model[MODEL_MAX];
  static bool live[MODEL_MAX];
  struct sched_state st;
  uint64_t seed = (uint64_t)(0x5eed10a + _i);
  bool spread = _i == 0;
  int step, i, n_live = 0;

  memset(live, 0, sizeof(live));
  fs_on = _i == 2;
  sched_state_init(&st);
  for (step = 0; step < STEPS; step++) {
    int k = (int)(rnd(&seed) % MODEL_MAX);
    unsigned op = (unsigned)(rnd(&seed) % 10);

    if (fs_on && step % 40 == 0)
      fs_rekey(&st, &seed);

    if (op < 6) { /* a write: insert or new version */
      model[k] = random_job(&seed, k, spread);
      n_live += !live[k];
      live[k] = true;
      ck_assert_int_ge(sched_state_put(&st, &model[k]), 0);
    } else { /* left the active states */
      n_live -= live[k];
      live[k] = false;
      sched_state_remove(&st, model[k].id);
    }
    ck_assert_int_eq(st.n, n_live);

    if (step % 13 == 0 || step == STEPS - 1) {
      struct sched_state fresh;
      struct sched_position *pos;
      struct sched_count *cnt;
      int n, n_pending = 0, n_groups = 0;
      sched_state_init(&fresh);
      for (i = MODEL_MAX - 1; i >= 0; i--) /* another order */
        if (live[i])
          ck_assert_int_ge(sched_state_put(&fresh, &model[i]), 0);
      ck_assert_int_eq(sched_state_compare(&st, &fresh, NULL, NULL), 0);
      for (i = 0; i < MODEL_MAX; i++) {
        int idx = sched_state_find(&st, model[i].id);
        if (!live[i]) {
          ck_assert_int_eq(idx, -1);
          continue;
        }
        ck_assert_int_ge(idx, 0);
        ck_assert(sched_state_job_equal(&st.jobs[idx], &model[i]));
      }
      ck_assert_int_eq(sched_state_positions(&st, &pos, &n), 0);
      for (i = 0; i < n; i++) {
        const struct sched_state_job *j = &st.jobs[pos[i].job];
        int64_t g, g2;
        ck_assert_int_eq(pos[i].pos_cq,
                         ahead_of(model, live, MODEL_MAX, j, true, &g));
        ck_assert_int_eq(pos[i].pos_queue,
                         ahead_of(model, live, MODEL_MAX, j, false, &g2));
        ck_assert_int_eq(pos[i].ahead_gpus, g);
        ck_assert(i == 0 || strcmp(st.jobs[pos[i - 1].job].cq->s, j->cq->s) <=
                                0); /* by cluster queue */
      }
      for (i = 0; i < MODEL_MAX; i++)
        n_pending += live[i] && !strcmp(model[i].state, "PENDING");
      ck_assert_int_eq(n, n_pending);
      free(pos);
      ck_assert_int_eq(sched_state_counts(&st, &cnt, &n), 0);
      for (i = 0; i < n; i++) {
        int64_t p, a;
        count_of(model, live, MODEL_MAX, cnt[i].team, cnt[i].queue, cnt[i].cq,
                 &p, &a);
        ck_assert_int_eq(cnt[i].pending, p);
        ck_assert_int_eq(cnt[i].admitted, a);
        ck_assert_int_gt(p + a, 0);
        n_groups += (int)(p + a);
        if (i > 0) { /* in name order, each group once */
          int c = strcmp(cnt[i - 1].team, cnt[i].team);
          if (!c)
            c = strcmp(cnt[i - 1].queue, cnt[i].queue);
          if (!c)
            c = strcmp(cnt[i - 1].cq, cnt[i].cq);
          ck_assert_int_lt(c, 0);
        }
      }
      ck_assert_int_eq(n_groups, st.n); /* every job in one group */
      free(cnt);
      sched_state_free(&fresh);
    }
  }

  /* a difference is found and named */
  if (st.n > 0) {
    struct sched_state other;
    struct sched_state_job j = st.jobs[0];
    sched_state_init(&other);
    for (i = 0; i < st.n; i++)
      ck_assert_int_ge(sched_state_put(&other, &st.jobs[i]), 0);
    j.attempt++;
    ck_assert_int_ge(sched_state_put(&other, &j), 0);
    ck_assert_int_eq(sched_state_compare(&st, &other, NULL, NULL), 1);
    sched_state_remove(&other, st.jobs[1 % st.n].id);
    ck_assert_int_eq(sched_state_compare(&st, &other, NULL, NULL),
                     st.n > 1 ? 2 : 1);
    sched_state_free(&other);
  }
  sched_state_free(&st);
}
END_TEST

/* Names: one per text, dense ids; a job put from another state (or from
 * the caller's names) holds the receiving state's own, and stays equal to
 * its source. */
struct name_case {
  const char *text;
  int want_id;
};

static const struct name_case name_cases[] = {
    {"team-a", 0}, {"lp", 1}, {"team-a", 0}, {"", 2},
    {"cq-1", 3},   {"lp", 1}, {"", 2},       {"cq-1", 3},
};

START_TEST(names_interned)
{
  struct sched_state a, b;
  struct sched_state_job j =
      mk("j1", "team-a", "lp", "cq-1", "PENDING", 1, 2, 3, 4);
  const struct sched_name *nm;
  size_t i;
  int k;

  sched_state_init(&a);
  sched_state_init(&b);
  for (i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
    nm = sched_state_name(&a, name_cases[i].text);
    ck_assert_ptr_nonnull(nm);
    ck_assert_str_eq(nm->s, name_cases[i].text);
    ck_assert_int_eq(nm->id, name_cases[i].want_id);
    ck_assert_ptr_eq(a.names[nm->id], nm);
  }
  ck_assert_int_eq(a.n_names, 4);
  ck_assert_ptr_eq(sched_state_name(&a, NULL), sched_state_name(&a, ""));
  /* many names: the set grows and keeps every id */
  for (k = 0; k < 500; k++) {
    char t[16];
    snprintf(t, sizeof(t), "n%d", k);
    nm = sched_state_name(&b, t);
    ck_assert_int_eq(nm->id, k);
  }
  for (k = 0; k < 500; k++) {
    char t[16];
    snprintf(t, sizeof(t), "n%d", k);
    ck_assert_int_eq(sched_state_name(&b, t)->id, k);
  }
  /* put: the job's names (the test's own set) become a's; flavor NULL
   * reads as "" */
  k = sched_state_put(&a, &j);
  ck_assert_int_ge(k, 0);
  ck_assert_ptr_eq(a.jobs[k].team, sched_state_name(&a, "team-a"));
  ck_assert_ptr_eq(a.jobs[k].cq, sched_state_name(&a, "cq-1"));
  ck_assert_ptr_eq(a.jobs[k].flavor, sched_state_name(&a, ""));
  ck_assert(sched_state_job_equal(&a.jobs[k], &j));
  /* from a into b: b's names, equal jobs, and a's names may go */
  k = sched_state_put(&b, &a.jobs[0]);
  ck_assert_int_ge(k, 0);
  ck_assert_ptr_eq(b.jobs[k].queue, sched_state_name(&b, "lp"));
  ck_assert(sched_state_job_equal(&a.jobs[0], &b.jobs[k]));
  ck_assert_int_eq(sched_state_compare(&a, &b, NULL, NULL), 0);
  sched_state_free(&a);
  ck_assert_str_eq(b.jobs[k].queue->s, "lp");
  sched_state_free(&b);
}
END_TEST

Suite *sched_state_suite(void)
{
  Suite *s = suite_create("sched_state");
  TCase *tc = tcase_create("state");

  tcase_add_test(tc, positions_table);
  tcase_add_loop_test(tc, random_walk_equals_rebuild, 0, 3);
  tcase_add_test(tc, names_interned);
  suite_add_tcase(s, tc);
  return s;
}
