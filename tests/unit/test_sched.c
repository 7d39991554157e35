/*
 * test_sched.c — admission and preemption as tables of cases.
 *
 * Each case is an input written in a small notation and the exact decisions
 * expected, rendered on one line. The notation:
 *
 *   now 1000
 *   cq NAME [cohort=C] [strict] [within=lower] [reclaim=lower|any]
 *           [borrow=try] [preempt] [weight=W] [minrt=S] [stop=hold|drain]
 *           FLAVOR:RES=NOMINAL[/BORROW[/LEND]][,RES=...] ...
 *           [win=FLAVOR:FROM:UNTIL]
 *   team NAME [budget=B] [spent=S] [hold]
 *   run NAME cq=Q in=FLAVOR [p=P] [at=T] [evicting] [team=T] RES=N ...
 *   job NAME cq=Q [p=P] [at=T] [seq=N] [never] [team=T] [cost=C]
 *           [maxrun=S] [preempting] RES=N ...
 *
 * Lines are separated by ';'. RES is gpu, cpu (millicores) or mem (MiB);
 * BORROW and LEND may be '*' (unlimited, the default); a resource a flavor
 * does not list has quota 0. "run" is an admitted job (admitted_at = at),
 * "job" a pending one (created_at = at, default its position; it may preempt
 * unless "never"; maxrun is its longest run in seconds; "preempting": it
 * chose victims in an earlier cycle). "win" gives the
 * CQ's flavor FLAVOR (listed before it) a capacity window [FROM, UNTIL).
 * Defaults follow Kueue: BestEffortFIFO, preemption Never,
 * whenCanBorrow Borrow, whenCanPreempt TryNextFlavor, weight 1.
 *
 * Decisions: admissions in decision order, then evictions in decision
 * order, then the reason of every job not admitted, in input order:
 *
 *   +JOB@FLAVOR (borrowed: +JOB@FLAVOR*)   -VICTIM(PREEMPTOR,Reason)
 *   -VICTIM(-,ClusterQueueStopped)         JOB=Reason
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"

Suite *sched_suite(void);

#define DSL_MAX 32
#define NAME_LEN 16

struct dsl {
  struct sched_input in;
  struct sched_cq cqs[DSL_MAX];
  struct sched_team teams[DSL_MAX];
  struct sched_job admitted[DSL_MAX];
  struct sched_job pending[DSL_MAX];
  char cq_names[DSL_MAX][NAME_LEN];
  char cohort_names[DSL_MAX][NAME_LEN];
  char flavor_names[DSL_MAX][NAME_LEN];
  char team_names[DSL_MAX][NAME_LEN];
  char run_names[DSL_MAX][NAME_LEN];
  char job_names[DSL_MAX][NAME_LEN];
  char error[160];
};

/* Index of name in names[0..*n), added when absent and add is set. */
static int lookup(char names[][NAME_LEN], int *n, const char *name, bool add)
{
  int i;

  for (i = 0; i < *n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  if (!add || *n >= DSL_MAX || strlen(name) >= NAME_LEN)
    return -1;
  snprintf(names[*n], NAME_LEN, "%s", name);
  return (*n)++;
}

static bool parse_i64(const char *s, int64_t *v)
{
  char *end;
  long long x;

  if (strcmp(s, "*") == 0) {
    *v = SCHED_UNLIMITED;
    return true;
  }
  x = strtoll(s, &end, 10);
  if (end == s || *end)
    return false;
  *v = x;
  return true;
}

static int res_of(const char *name, size_t len)
{
  if (len == 3 && strncmp(name, "gpu", 3) == 0)
    return SCHED_GPU;
  if (len == 3 && strncmp(name, "cpu", 3) == 0)
    return SCHED_CPU;
  if (len == 3 && strncmp(name, "mem", 3) == 0)
    return SCHED_MEM;
  return -1;
}

/* "res:gpu=4/2/1,cpu=8000" into a CQ's next flavor. */
static bool parse_flavor(struct dsl *d, struct sched_cq *cq, const char *tok)
{
  const char *colon = strchr(tok, ':'), *p;
  char name[NAME_LEN];
  struct sched_cq_flavor *fl;

  if (!colon || colon - tok >= NAME_LEN || cq->n_flavors >= SCHED_MAX_FLAVORS)
    return false;
  snprintf(name, sizeof(name), "%.*s", (int)(colon - tok), tok);
  fl = &cq->flavors[cq->n_flavors];
  fl->flavor = lookup(d->flavor_names, &d->in.n_flavors, name, true);
  if (fl->flavor < 0)
    return false;
  for (p = colon + 1; *p;) {
    size_t len = strcspn(p, ","), eq = strcspn(p, "=");
    char val[32], *part, *slash;
    int64_t v[3] = {0, SCHED_UNLIMITED, SCHED_UNLIMITED};
    int r = res_of(p, eq), k;

    if (r < 0 || eq >= len || len - eq >= sizeof(val))
      return false;
    snprintf(val, sizeof(val), "%.*s", (int)(len - eq - 1), p + eq + 1);
    for (part = val, k = 0; part && k < 3; k++, part = slash) {
      slash = strchr(part, '/');
      if (slash)
        *slash++ = '\0';
      if (!parse_i64(part, &v[k]))
        return false;
    }
    if (part)
      return false;
    fl->quota[r] = (struct sched_quota){v[0], v[1], v[2]};
    p += len;
    if (*p == ',')
      p++;
  }
  cq->n_flavors++;
  return true;
}

/* key=value token: value of key, or NULL. */
static const char *val_of(const char *tok, const char *key)
{
  size_t n = strlen(key);

  if (strncmp(tok, key, n) == 0 && tok[n] == '=')
    return tok + n + 1;
  return NULL;
}

/* "cal:100:200": a capacity window on the CQ's flavor cal. */
static bool parse_window(struct dsl *d, struct sched_cq *cq, const char *v)
{
  char name[NAME_LEN], *end;
  const char *colon = strchr(v, ':');
  long long from, until;
  int f, k;

  if (!colon || colon - v >= NAME_LEN)
    return false;
  snprintf(name, sizeof(name), "%.*s", (int)(colon - v), v);
  from = strtoll(colon + 1, &end, 10);
  if (*end != ':')
    return false;
  until = strtoll(end + 1, &end, 10);
  if (*end)
    return false;
  f = lookup(d->flavor_names, &d->in.n_flavors, name, false);
  for (k = 0; k < cq->n_flavors; k++)
    if (f >= 0 && cq->flavors[k].flavor == f) {
      cq->flavors[k].window_from = from;
      cq->flavors[k].window_until = until;
      return true;
    }
  return false;
}

static bool parse_cq_token(struct dsl *d, struct sched_cq *cq, const char *tok)
{
  const char *v;
  int64_t x;

  if ((v = val_of(tok, "cohort"))) {
    cq->cohort = lookup(d->cohort_names, &d->in.n_cohorts, v, true);
    return cq->cohort >= 0;
  }
  if (strcmp(tok, "strict") == 0)
    cq->strategy = SCHED_STRICT_FIFO;
  else if (strcmp(tok, "within=lower") == 0)
    cq->within = SCHED_WITHIN_LOWER_PRIORITY;
  else if (strcmp(tok, "reclaim=lower") == 0)
    cq->reclaim = SCHED_RECLAIM_LOWER_PRIORITY;
  else if (strcmp(tok, "reclaim=any") == 0)
    cq->reclaim = SCHED_RECLAIM_ANY;
  else if (strcmp(tok, "borrow=try") == 0)
    cq->when_borrow = SCHED_BORROW_TRY_NEXT;
  else if (strcmp(tok, "preempt") == 0)
    cq->when_preempt = SCHED_PREEMPT;
  else if (strcmp(tok, "stop=hold") == 0)
    cq->stop = SCHED_STOP_HOLD;
  else if (strcmp(tok, "stop=drain") == 0)
    cq->stop = SCHED_STOP_DRAIN;
  else if ((v = val_of(tok, "weight")))
    cq->weight = strtod(v, NULL);
  else if ((v = val_of(tok, "minrt")) && parse_i64(v, &x))
    cq->min_runtime_s = x;
  else if ((v = val_of(tok, "win")))
    return parse_window(d, cq, v);
  else
    return parse_flavor(d, cq, tok);
  return true;
}

static bool parse_job_token(struct dsl *d, struct sched_job *j, const char *tok)
{
  const char *v;
  int64_t x;
  size_t eq = strcspn(tok, "=");
  int r = res_of(tok, eq);

  if (r >= 0 && tok[eq] && parse_i64(tok + eq + 1, &x)) {
    j->request[r] = x;
    return true;
  }
  if ((v = val_of(tok, "cq"))) {
    j->cq = lookup(d->cq_names, &d->in.n_cqs, v, false);
    return j->cq >= 0;
  }
  if ((v = val_of(tok, "in"))) {
    j->flavor = lookup(d->flavor_names, &d->in.n_flavors, v, false);
    return j->flavor >= 0;
  }
  if ((v = val_of(tok, "team"))) {
    j->team = lookup(d->team_names, &d->in.n_teams, v, false);
    return j->team >= 0;
  }
  if (strcmp(tok, "evicting") == 0)
    j->evicting = true;
  else if (strcmp(tok, "never") == 0)
    j->can_preempt = false;
  else if (strcmp(tok, "preempting") == 0)
    j->preempting = true;
  else if ((v = val_of(tok, "cost")))
    j->estimated_cost = strtod(v, NULL);
  else if ((v = val_of(tok, "p")) && parse_i64(v, &x))
    j->priority = (int32_t)x;
  else if ((v = val_of(tok, "at")) && parse_i64(v, &x))
    j->created_at = j->admitted_at = x;
  else if ((v = val_of(tok, "seq")) && parse_i64(v, &x))
    j->seq = x;
  else if ((v = val_of(tok, "maxrun")) && parse_i64(v, &x))
    j->max_run_s = x;
  else
    return false;
  return true;
}

static bool parse_team_token(struct sched_team *t, const char *tok)
{
  const char *v;

  if (strcmp(tok, "hold") == 0)
    t->hold = true;
  else if ((v = val_of(tok, "budget")))
    t->budget = strtod(v, NULL);
  else if ((v = val_of(tok, "spent")))
    t->spent = strtod(v, NULL);
  else
    return false;
  return true;
}

/* Parse one line (its tokens in toks[0..n)). */
static bool parse_line(struct dsl *d, char **toks, int n, int lineno)
{
  int i;

  if (strcmp(toks[0], "now") == 0 && n == 2) {
    int64_t x;

    if (!parse_i64(toks[1], &x))
      return false;
    d->in.now = x;
    return true;
  }
  if (n < 2)
    return false;
  if (strcmp(toks[0], "cq") == 0) {
    int c = lookup(d->cq_names, &d->in.n_cqs, toks[1], true);
    struct sched_cq *cq;

    if (c < 0 || c != d->in.n_cqs - 1)
      return false;
    cq = &d->cqs[c];
    cq->cohort = -1;
    cq->weight = 1;
    for (i = 2; i < n; i++)
      if (!parse_cq_token(d, cq, toks[i]))
        return false;
    return true;
  }
  if (strcmp(toks[0], "team") == 0) {
    int t = lookup(d->team_names, &d->in.n_teams, toks[1], true);

    if (t < 0 || t != d->in.n_teams - 1)
      return false;
    for (i = 2; i < n; i++)
      if (!parse_team_token(&d->teams[t], toks[i]))
        return false;
    return true;
  }
  if (strcmp(toks[0], "run") == 0 || strcmp(toks[0], "job") == 0) {
    bool run = toks[0][0] == 'r';
    int *count = run ? &d->in.n_admitted : &d->in.n_pending;
    int x = lookup(run ? d->run_names : d->job_names, count, toks[1], true);
    struct sched_job *j;

    if (x < 0 || x != *count - 1)
      return false;
    j = run ? &d->admitted[x] : &d->pending[x];
    *j = (struct sched_job){.cq = -1,
                            .team = -1,
                            .can_preempt = true,
                            .created_at = lineno,
                            .seq = lineno,
                            .flavor = run ? -1 : 0};
    for (i = 2; i < n; i++)
      if (!parse_job_token(d, j, toks[i]))
        return false;
    return j->cq >= 0 && j->flavor >= 0;
  }
  return false;
}

static int dsl_parse(struct dsl *d, const char *text)
{
  char buf[4096], *line, *next;
  int lineno = 0;

  memset(d, 0, sizeof(*d));
  d->in.now = 1000;
  d->in.cqs = d->cqs;
  d->in.teams = d->teams;
  d->in.admitted = d->admitted;
  d->in.pending = d->pending;
  if (strlen(text) >= sizeof(buf))
    return -1;
  snprintf(buf, sizeof(buf), "%s", text);
  for (line = buf; line; line = next) {
    char *toks[64], *p = line;
    int n = 0;

    next = strchr(line, ';');
    if (next)
      *next++ = '\0';
    lineno++;
    for (;;) {
      p += strspn(p, " \n\t");
      if (!*p || n == 64)
        break;
      toks[n++] = p;
      p += strcspn(p, " \n\t");
      if (*p)
        *p++ = '\0';
    }
    if (n && !parse_line(d, toks, n, lineno)) {
      snprintf(d->error, sizeof(d->error), "line %d: %s", lineno, toks[0]);
      return -1;
    }
  }
  return 0;
}

/* Names for the rendering (the API's own names live in db/). */
static const char *const reason_names[] = {
    "Admitted",     "InsufficientQuota", "BudgetExceeded",
    "QueueStopped", "WaitingForHead",    "Preempting"};
static const char *const evict_names[] = {
    "?", "InClusterQueue", "InCohortReclamation", "ClusterQueueStopped"};

/* Append piece to buf (space-separated), truncating at size. */
static void put(char *buf, size_t size, size_t *len, const char *piece)
{
  int n;

  if (*len >= size)
    return;
  n = snprintf(buf + *len, size - *len, "%s%s", *len ? " " : "", piece);
  if (n > 0)
    *len += (size_t)n;
}

static void dsl_render(const struct dsl *d, const struct sched_output *out,
                       char *buf, size_t size)
{
  char piece[128];
  size_t len = 0;
  int i;

  buf[0] = '\0';
  for (i = 0; i < out->n_admissions; i++) {
    const struct sched_admission *a = &out->admissions[i];

    snprintf(piece, sizeof(piece), "+%s@%s%s", d->job_names[a->job],
             d->flavor_names[a->flavor], a->borrowed ? "*" : "");
    put(buf, size, &len, piece);
  }
  for (i = 0; i < out->n_evictions; i++) {
    const struct sched_eviction *e = &out->evictions[i];

    snprintf(piece, sizeof(piece), "-%s(%s,%s)", d->run_names[e->job],
             e->preemptor < 0 ? "-" : d->job_names[e->preemptor],
             evict_names[e->reason]);
    put(buf, size, &len, piece);
  }
  for (i = 0; i < d->in.n_pending; i++) {
    if (out->reasons[i] == SCHED_ADMITTED)
      continue;
    snprintf(piece, sizeof(piece), "%s=%s", d->job_names[i],
             reason_names[out->reasons[i]]);
    put(buf, size, &len, piece);
  }
}

struct sched_case {
  const char *what;
  const char *input;
  const char *expect;
};

/* Shared fragments: a two-CQ cohort and the like. */
#define NOW "now 1000;"

static const struct sched_case cases[] = {
    /* ---- ordering within a cluster queue ---- */
    {"fits within nominal, then runs out",
     "cq a res:gpu=4; job j1 cq=a gpu=2; job j2 cq=a gpu=2; job j3 cq=a gpu=1",
     "+j1@res +j2@res j3=InsufficientQuota"},
    {"priority before creation time",
     "cq a res:gpu=2; job j1 cq=a p=0 gpu=2; job j2 cq=a p=5 gpu=2",
     "+j2@res j1=InsufficientQuota"},
    {"earlier creation first, whatever the input order",
     "cq a res:gpu=2; job j1 cq=a at=50 gpu=2; job j2 cq=a at=30 gpu=2",
     "+j2@res j1=InsufficientQuota"},
    {"seq breaks a creation-time tie",
     "cq a res:gpu=2; job j1 cq=a at=5 seq=9 gpu=2;"
     "job j2 cq=a at=5 seq=3 gpu=2",
     "+j2@res j1=InsufficientQuota"},
    {"an evicted job keeps its place by its original creation time",
     "cq a res:gpu=2; job new cq=a at=500 gpu=2; job back cq=a at=10 gpu=2",
     "+back@res new=InsufficientQuota"},
    {"evicting jobs still hold their quota",
     "cq a res:gpu=4; run v cq=a in=res evicting gpu=3;"
     "job j cq=a never gpu=2",
     "j=InsufficientQuota"},
    {"a job that may preempt waits for evictions under way",
     "cq a res:gpu=4; run v cq=a in=res evicting gpu=3; job j cq=a gpu=2",
     "j=Preempting"},
    {"quota a preemptor waits for is not given to another job meanwhile",
     "cq a within=lower res:gpu=4; run c cq=a in=res evicting p=0 gpu=2;"
     "job hi cq=a p=10 gpu=4; job lo cq=a p=0 at=1 gpu=2",
     "hi=Preempting lo=InsufficientQuota"},
    {"gang: every resource from one flavor",
     "cq a res:gpu=4,cpu=2000 spot:gpu=0,cpu=8000;"
     "job j cq=a gpu=2 cpu=4000",
     "j=InsufficientQuota"},
    {"a resource the flavor does not list has quota 0; a 0 request fits",
     "cq a res:cpu=8000 spot:gpu=4,cpu=8000;"
     "job g cq=a gpu=1 cpu=1000; job c cq=a cpu=1000",
     "+g@spot +c@res"},

    /* ---- flavor order and fungibility ---- */
    {"flavors in order: the first that fits",
     "cq a res:gpu=2 spot:gpu=8; job j1 cq=a gpu=2; job j2 cq=a gpu=2",
     "+j1@res +j2@spot"},
    {"whenCanBorrow=Borrow: borrow in the first flavor",
     "cq a cohort=c res:gpu=2 spot:gpu=4; cq b cohort=c res:gpu=4;"
     "run a1 cq=a in=res gpu=2; job j cq=a gpu=2",
     "+j@res*"},
    {"whenCanBorrow=TryNextFlavor: a later flavor without borrowing",
     "cq a cohort=c borrow=try res:gpu=2 spot:gpu=4; cq b cohort=c res:gpu=4;"
     "run a1 cq=a in=res gpu=2; job j cq=a gpu=2",
     "+j@spot"},
    {"TryNextFlavor falls back to the first flavor it could borrow in",
     "cq a cohort=c borrow=try res:gpu=2 od:gpu=1;"
     "cq b cohort=c res:gpu=4 od:gpu=4;"
     "run a1 cq=a in=res gpu=2; run a2 cq=a in=od gpu=1; job j cq=a gpu=2",
     "+j@res*"},
    {"whenCanPreempt=TryNextFlavor: the next flavor instead of preempting",
     "cq a within=lower res:gpu=2 spot:gpu=2;"
     "run lo cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "+hi@spot"},
    {"whenCanPreempt=Preempt: preempt in the first flavor",
     "cq a within=lower preempt res:gpu=2 spot:gpu=2;"
     "run lo cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "-lo(hi,InClusterQueue) hi=Preempting"},
    {"TryNextFlavor preempts in the first flavor when no other fits",
     "cq a within=lower res:gpu=2 spot:gpu=1;"
     "run lo cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "-lo(hi,InClusterQueue) hi=Preempting"},
    {"with TryNextFlavor, borrowing is preferred over preempting",
     "cq a cohort=c within=lower borrow=try res:gpu=2 spot:gpu=1;"
     "cq b cohort=c spot:gpu=4;"
     "run lo cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "+hi@spot*"},

    /* ---- borrowing and lending limits ---- */
    {"borrowing up to the borrowing limit, not beyond",
     "cq a cohort=c res:gpu=2/2; cq b cohort=c res:gpu=8;"
     "job j1 cq=a gpu=4; job j2 cq=a gpu=1",
     "+j1@res* j2=InsufficientQuota"},
    {"borrowing limit 0: no borrowing",
     "cq a cohort=c res:gpu=2/0; cq b cohort=c res:gpu=8; job j cq=a gpu=3",
     "j=InsufficientQuota"},
    {"unlimited borrowing is bounded by the cohort's unused quota",
     "cq a cohort=c res:gpu=2; cq b cohort=c res:gpu=6;"
     "run b1 cq=b in=res gpu=4; job j1 cq=a gpu=4; job j2 cq=a gpu=1",
     "+j1@res* j2=InsufficientQuota"},
    {"without a cohort the borrowing limit does not apply",
     "cq a res:gpu=2/10; job j cq=a gpu=3", "j=InsufficientQuota"},
    {"using exactly the nominal quota is not borrowing",
     "cq a cohort=c res:gpu=4; cq b cohort=c res:gpu=4; job j cq=a gpu=4",
     "+j@res"},
    {"a lender's lending limit caps what others borrow",
     "cq a cohort=c res:gpu=0; cq b cohort=c res:gpu=8/*/3;"
     "job j1 cq=a gpu=3; job j2 cq=a gpu=1",
     "+j1@res* j2=InsufficientQuota"},
    {"quota held back by a lending limit stays the lender's",
     "cq a cohort=c res:gpu=0; cq b cohort=c res:gpu=8/*/3;"
     "run a1 cq=a in=res gpu=3; job j cq=b gpu=5; job k cq=b gpu=1",
     "+j@res k=InsufficientQuota"},
    {"lent quota is not usable by the lender without reclaim",
     "cq a cohort=c res:gpu=0; cq b cohort=c res:gpu=4;"
     "run a1 cq=a in=res gpu=4; job j cq=b p=9 gpu=1",
     "j=InsufficientQuota"},

    /* ---- queueing strategies ---- */
    {"BestEffortFIFO: a head that does not fit is skipped",
     "cq a res:gpu=4; job j1 cq=a gpu=6; job j2 cq=a gpu=2",
     "+j2@res j1=InsufficientQuota"},
    {"StrictFIFO: a head that does not fit blocks its queue",
     "cq a strict res:gpu=4; job j1 cq=a gpu=6; job j2 cq=a gpu=2",
     "j1=InsufficientQuota j2=WaitingForHead"},
    {"StrictFIFO blocks only its own queue",
     "cq a strict res:gpu=4; cq b res:gpu=4;"
     "job j1 cq=a gpu=6; job j2 cq=a gpu=2; job j3 cq=b gpu=2",
     "+j3@res j1=InsufficientQuota j2=WaitingForHead"},
    {"StrictFIFO: a preempting head blocks its queue",
     "cq a strict within=lower res:gpu=2; run lo cq=a in=res p=0 gpu=2;"
     "job hi cq=a p=10 gpu=2; job next cq=a p=10 gpu=1",
     "-lo(hi,InClusterQueue) hi=Preempting next=WaitingForHead"},
    {"BestEffortFIFO goes on behind a preempting head",
     "cq a within=lower res:gpu=4; run lo cq=a in=res p=0 gpu=3;"
     "job hi cq=a p=10 gpu=3; job small cq=a p=1 gpu=1",
     "+small@res -lo(hi,InClusterQueue) hi=Preempting"},

    /* ---- preemption within the cluster queue ---- */
    {"a higher priority job preempts within its CQ",
     "cq a within=lower res:gpu=2; run lo cq=a in=res p=0 gpu=2;"
     "job hi cq=a p=10 gpu=2",
     "-lo(hi,InClusterQueue) hi=Preempting"},
    {"withinClusterQueue=Never: no preemption",
     "cq a res:gpu=2; run lo cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "hi=InsufficientQuota"},
    {"equal priority is never preempted within the CQ",
     "cq a within=lower res:gpu=2; run lo cq=a in=res p=10 gpu=2;"
     "job hi cq=a p=10 gpu=2",
     "hi=InsufficientQuota"},
    {"a job of a Never priority class does not preempt",
     "cq a within=lower res:gpu=2; run lo cq=a in=res p=0 gpu=2;"
     "job hi cq=a p=10 never gpu=2",
     "hi=InsufficientQuota"},
    {"the lowest priority victim first",
     "cq a within=lower res:gpu=4; run v5 cq=a in=res p=5 gpu=2;"
     "run v1 cq=a in=res p=1 gpu=2; job hi cq=a p=10 gpu=2",
     "-v1(hi,InClusterQueue) hi=Preempting"},
    {"equal priority: the most recently admitted victim first",
     "cq a within=lower res:gpu=4; run new cq=a in=res p=0 at=500 gpu=2;"
     "run old cq=a in=res p=0 at=100 gpu=2; job hi cq=a p=10 gpu=2",
     "-new(hi,InClusterQueue) hi=Preempting"},
    {"the minimal victim set: victims it can do without are spared",
     "cq a within=lower res:gpu=4; run big cq=a in=res p=1 at=5 gpu=2;"
     "run s1 cq=a in=res p=0 at=10 gpu=1; run s2 cq=a in=res p=0 at=20 gpu=1;"
     "job hi cq=a p=10 gpu=3",
     "-s2(hi,InClusterQueue) -big(hi,InClusterQueue) hi=Preempting"},
    {"no victims when even all candidates would not make room",
     "cq a within=lower res:gpu=4; run lo cq=a in=res p=0 gpu=2;"
     "run eq cq=a in=res p=10 gpu=2; job hi cq=a p=10 gpu=3",
     "hi=InsufficientQuota"},
    {"a job younger than min_runtime_before_preemption is spared",
     NOW "cq a within=lower minrt=600 res:gpu=4;"
         "run young cq=a in=res p=0 at=900 gpu=2;"
         "run old cq=a in=res p=5 at=100 gpu=2; job hi cq=a p=10 gpu=2",
     "-old(hi,InClusterQueue) hi=Preempting"},
    {"only young candidates: no preemption",
     NOW "cq a within=lower minrt=600 res:gpu=2;"
         "run young cq=a in=res p=0 at=401 gpu=2; job hi cq=a p=10 gpu=2",
     "hi=InsufficientQuota"},
    {"min runtime reached exactly: preemptible",
     NOW "cq a within=lower minrt=600 res:gpu=2;"
         "run v cq=a in=res p=0 at=400 gpu=2; job hi cq=a p=10 gpu=2",
     "-v(hi,InClusterQueue) hi=Preempting"},
    {"no min runtime: a victim admitted within now's second is preemptible",
     /* admitted_at is rounded to whole seconds and may read now + 1; the
      * loop does not rerun the scheduler as time passes (no minimum) */
     NOW "cq a within=lower res:gpu=2;"
         "run v cq=a in=res p=0 at=1001 gpu=2; job hi cq=a p=10 gpu=2",
     "-v(hi,InClusterQueue) hi=Preempting"},
    {"no min runtime: reclaim from a job admitted within now's second",
     NOW "cq a cohort=c reclaim=lower res:gpu=4; cq b cohort=c res:gpu=0;"
         "run b1 cq=b in=res p=0 at=1001 gpu=4; job ja cq=a p=5 gpu=4",
     "-b1(ja,InCohortReclamation) ja=Preempting"},
    /* ---- every job that fits without borrowing before any borrower ---- */
    {"a deeper job within nominal goes before a borrower at its CQ's head",
     /* round 1 would admit x (borrowing); pa, behind big in a, fits in
      * a's own quota and is decided first */
     "cq a cohort=c reclaim=any res:gpu=4; cq b cohort=c res:gpu=0;"
     "run r cq=a in=res p=0 gpu=3; job big cq=a p=10 never gpu=4;"
     "job pa cq=a p=5 gpu=1; job x cq=b p=20 gpu=1",
     "+pa@res big=InsufficientQuota x=InsufficientQuota"},
    {"a CQ whose head borrows waits whole: its deeper jobs do not pass it",
     /* s alone would fit within a's nominal */
     "cq a cohort=c res:gpu=2; cq l cohort=c res:gpu=1;"
     "run r cq=a in=res p=0 gpu=1; job h cq=a p=10 gpu=2; job s cq=a p=5 gpu=1",
     "+h@res* s=InsufficientQuota"},

    /* ---- the preemptors of earlier cycles go first ---- */
    {"borrowers: the higher priority first",
     "cq a cohort=c res:gpu=2; cq b cohort=c res:gpu=0; cq l cohort=c "
     "res:gpu=1;"
     "run ra cq=a in=res p=0 gpu=2; job big cq=a p=10 never gpu=2;"
     "job pa cq=a p=5 gpu=1; job x cq=b p=20 gpu=1",
     "+x@res* big=InsufficientQuota pa=InsufficientQuota"},
    {"an earlier preemptor is decided before every CQ's head",
     /* as above, but pa chose victims last cycle: the quota they freed
      * is its own, not the next borrower's */
     "cq a cohort=c res:gpu=2; cq b cohort=c res:gpu=0; cq l cohort=c "
     "res:gpu=1;"
     "run ra cq=a in=res p=0 gpu=2; job big cq=a p=10 never gpu=2;"
     "job pa cq=a p=5 preempting gpu=1; job x cq=b p=20 gpu=1",
     "+pa@res* big=InsufficientQuota x=InsufficientQuota"},
    {"an earlier preemptor goes before a new head of its own CQ",
     "cq a within=lower res:gpu=2; run v cq=a in=res p=0 gpu=1;"
     "job new cq=a p=20 at=50 never gpu=1; job pa cq=a p=10 at=10 preempting "
     "gpu=1",
     "+pa@res new=InsufficientQuota"},
    {"earlier preemptors among themselves: in head order",
     "cq a cohort=c res:gpu=2; cq b cohort=c res:gpu=2;"
     "run ra cq=a in=res p=0 gpu=2; run rb cq=b in=res p=0 gpu=1;"
     "job pa cq=a p=9 preempting gpu=1; job pb cq=b p=1 preempting gpu=1",
     "+pb@res pa=InsufficientQuota"},
    {"an earlier preemptor that still waits for its victims picks no more",
     "cq a within=lower res:gpu=4; run v cq=a in=res p=0 evicting gpu=2;"
     "run w cq=a in=res p=0 gpu=2; job hi cq=a p=10 preempting gpu=2;"
     "job h2 cq=a p=10 gpu=2",
     "-w(h2,InClusterQueue) hi=Preempting h2=Preempting"},
    {"StrictFIFO: the head goes first, preempting or not",
     "cq a strict within=lower res:gpu=2; run v cq=a in=res p=0 gpu=1;"
     "job new cq=a p=20 at=50 never gpu=1; job pa cq=a p=10 at=10 preempting "
     "gpu=1",
     "+new@res -v(pa,InClusterQueue) pa=Preempting"},
    {"evictions under way make room: wait, pick no new victims",
     "cq a within=lower res:gpu=4; run v cq=a in=res p=0 evicting gpu=2;"
     "run w cq=a in=res p=0 gpu=2; job hi cq=a p=10 gpu=2",
     "hi=Preempting"},
    {"two preemptors never count on the same freed quota",
     "cq a within=lower res:gpu=4; run v cq=a in=res p=0 evicting gpu=2;"
     "run w cq=a in=res p=0 gpu=2; job h1 cq=a p=10 gpu=2;"
     "job h2 cq=a p=10 gpu=2",
     "-w(h2,InClusterQueue) h1=Preempting h2=Preempting"},

    /* ---- reclaim within the cohort ---- */
    {"reclaim nominal quota from a borrowing CQ",
     "cq a cohort=c reclaim=lower res:gpu=4; cq b cohort=c res:gpu=2;"
     "run b1 cq=b in=res p=0 at=100 gpu=2; run b2 cq=b in=res p=0 at=200 gpu=4;"
     "job ja cq=a p=5 gpu=4",
     "-b2(ja,InCohortReclamation) ja=Preempting"},
    {"reclaimWithinCohort=Never: no reclaim",
     "cq a cohort=c res:gpu=4; cq b cohort=c res:gpu=2;"
     "run b2 cq=b in=res p=0 gpu=4; run b1 cq=b in=res p=0 gpu=2;"
     "job ja cq=a p=5 gpu=4",
     "ja=InsufficientQuota"},
    {"reclaim=LowerPriority spares borrowers of equal priority",
     "cq a cohort=c reclaim=lower res:gpu=4; cq b cohort=c res:gpu=2;"
     "run b1 cq=b in=res p=5 gpu=6; job ja cq=a p=5 gpu=4",
     "ja=InsufficientQuota"},
    {"a Never class does not reclaim either",
     "cq a cohort=c reclaim=any res:gpu=4; cq b cohort=c res:gpu=2;"
     "run b1 cq=b in=res p=50 gpu=6; job ja cq=a p=5 never gpu=4",
     "ja=InsufficientQuota"},
    {"reclaim=Any takes borrowers of higher priority",
     "cq a cohort=c reclaim=any res:gpu=4; cq b cohort=c res:gpu=2;"
     "run b1 cq=b in=res p=50 gpu=6; job ja cq=a p=5 gpu=4",
     "-b1(ja,InCohortReclamation) ja=Preempting"},
    {"only CQs that borrow are reclaimed from",
     "cq a cohort=c reclaim=any res:gpu=4; cq b cohort=c res:gpu=4;"
     "cq x cohort=c res:gpu=0;"
     "run b1 cq=b in=res p=0 at=900 gpu=4; run x1 cq=x in=res p=9 gpu=4;"
     "job ja cq=a p=5 gpu=4",
     "-x1(ja,InCohortReclamation) ja=Preempting"},
    {"no reclaim when the preemptor would itself borrow",
     "cq a cohort=c reclaim=any res:gpu=2; cq b cohort=c res:gpu=2;"
     "run b1 cq=b in=res p=0 gpu=4; job ja cq=a p=5 gpu=4",
     "ja=InsufficientQuota"},
    {"borrowing CQs' jobs before lower-priority jobs of the own CQ",
     "cq a cohort=c within=lower reclaim=lower res:gpu=4;"
     "cq b cohort=c res:gpu=0;"
     "run alo cq=a in=res p=0 gpu=2; run bj cq=b in=res p=1 gpu=2;"
     "job hi cq=a p=10 gpu=2",
     "-bj(hi,InCohortReclamation) hi=Preempting"},
    {"reclaim stops taking from a CQ back within its nominal",
     "cq a cohort=c reclaim=any res:gpu=3; cq b cohort=c res:gpu=2;"
     "cq x cohort=c res:gpu=0;"
     "run b1 cq=b in=res p=0 at=100 gpu=2; run b2 cq=b in=res p=0 at=200 gpu=1;"
     "run x1 cq=x in=res p=3 gpu=2; job ja cq=a p=5 gpu=3",
     "-b2(ja,InCohortReclamation) -x1(ja,InCohortReclamation) ja=Preempting"},

    /* ---- stop policies ---- */
    {"Hold: pending jobs stay, admitted ones keep running",
     "cq a stop=hold res:gpu=4; run r cq=a in=res gpu=1; job j cq=a gpu=1",
     "j=QueueStopped"},
    {"HoldAndDrain: evict what runs, hold what waits",
     "cq a stop=drain res:gpu=4; run r1 cq=a in=res gpu=1;"
     "run r2 cq=a in=res evicting gpu=1; job j cq=a gpu=1",
     "-r1(-,ClusterQueueStopped) j=QueueStopped"},
    {"drained quota is not admitted on before it is released",
     "cq a cohort=c stop=drain res:gpu=0; cq b cohort=c res:gpu=4;"
     "run r1 cq=a in=res gpu=4; job j cq=b gpu=4 never",
     "-r1(-,ClusterQueueStopped) j=InsufficientQuota"},
    {"a preemptor waits for drained quota, picking no victims",
     "cq a cohort=c stop=drain res:gpu=0; cq b cohort=c reclaim=any res:gpu=4;"
     "run r1 cq=a in=res gpu=4; job j cq=b gpu=4",
     "-r1(-,ClusterQueueStopped) j=Preempting"},

    /* ---- budgets ---- */
    {"a budget-held team's jobs wait, others are admitted",
     "team t budget=100 spent=100 hold; team u budget=100 spent=500;"
     "cq a res:gpu=8; job j1 cq=a team=t gpu=1; job j2 cq=a team=u gpu=1",
     "+j2@res j1=BudgetExceeded"},
    {"a budget-held head does not block StrictFIFO",
     "team t budget=100 spent=150 hold; cq a strict res:gpu=8;"
     "job j1 cq=a p=9 team=t gpu=1; job j2 cq=a gpu=1",
     "+j2@res j1=BudgetExceeded"},
    {"admissions spend the budget within the cycle",
     "team t budget=100 spent=50 hold; cq a res:gpu=8;"
     "job j1 cq=a team=t cost=60 gpu=1; job j2 cq=a team=t cost=10 gpu=1;"
     "job j3 cq=a gpu=1",
     "+j1@res +j3@res j2=BudgetExceeded"},
    {"behind a blocked head, a held team's job says BudgetExceeded",
     "team t budget=1 spent=1 hold; cq a strict res:gpu=2;"
     "job j1 cq=a gpu=4; job j2 cq=a team=t gpu=1; job j3 cq=a gpu=1",
     "j1=InsufficientQuota j2=BudgetExceeded j3=WaitingForHead"},

    /* ---- order across cluster queues, fair sharing ---- */
    {"across CQs: higher priority first (shared budget decides)",
     "team t budget=10 hold; cq a res:gpu=8; cq b res:gpu=8;"
     "job ja cq=a p=0 at=1 team=t cost=10 gpu=1;"
     "job jb cq=b p=5 at=2 team=t cost=10 gpu=1",
     "+jb@res ja=BudgetExceeded"},
    {"across CQs: earlier creation first at equal priority",
     "team t budget=10 hold; cq a res:gpu=8; cq b res:gpu=8;"
     "job ja cq=a at=2 team=t cost=10 gpu=1;"
     "job jb cq=b at=1 team=t cost=10 gpu=1",
     "+jb@res ja=BudgetExceeded"},
    {"heads that fit without borrowing go before borrowing ones",
     "cq a cohort=c res:gpu=2; cq b cohort=c res:gpu=2;"
     "job jb cq=b p=100 gpu=4; job ja cq=a p=0 gpu=2",
     "+ja@res jb=InsufficientQuota"},
    {"fair sharing: the lower weighted share borrows first",
     "cq l cohort=c res:gpu=2; cq a cohort=c weight=1 res:gpu=0;"
     "cq b cohort=c weight=2 res:gpu=0;"
     "job ja cq=a at=1 p=5 gpu=2; job jb cq=b at=2 gpu=2",
     "+jb@res* ja=InsufficientQuota"},
    {"fair sharing: what a CQ already borrows counts",
     "cq l cohort=c res:gpu=6; cq a cohort=c res:gpu=0; cq b cohort=c "
     "res:gpu=0;"
     "run a1 cq=a in=res gpu=2;"
     "job ja cq=a p=10 gpu=1; job jb cq=b p=0 gpu=1",
     "+jb@res* +ja@res*"},
    {"fair sharing: weight 0 borrows last",
     "cq l cohort=c res:gpu=2; cq a cohort=c weight=0 res:gpu=0;"
     "cq b cohort=c res:gpu=0;"
     "job ja cq=a p=10 at=1 gpu=2; job jb cq=b p=0 at=2 gpu=2",
     "+jb@res* ja=InsufficientQuota"},
    {"fair sharing: equal shares fall back to priority",
     "cq l cohort=c res:gpu=2; cq a cohort=c res:gpu=0; cq b cohort=c "
     "res:gpu=0;"
     "job ja cq=a p=0 at=1 gpu=2; job jb cq=b p=3 at=2 gpu=2",
     "+jb@res* ja=InsufficientQuota"},

    /* ---- the reference architecture (SPEC §2), two teams ---- */
    {"reference: low-priority jobs, one borrowed reservation, three spot",
     "cq alp cohort=ab res:gpu=0/4 spot:gpu=12/4;"
     "cq ahp cohort=ab within=lower reclaim=lower res:gpu=4/0 od:gpu=4/4;"
     "cq blp cohort=ab res:gpu=0/4 spot:gpu=12/4;"
     "cq bhp cohort=ab within=lower reclaim=lower res:gpu=4/0 od:gpu=4/4;"
     "job a1 cq=alp p=10 never gpu=4; job b1 cq=blp p=10 never gpu=4;"
     "job a2 cq=alp p=10 never gpu=4; job b2 cq=blp p=10 never gpu=4;"
     "job a3 cq=alp p=10 never gpu=4; job b3 cq=blp p=10 never gpu=4;"
     "job a4 cq=alp p=10 never gpu=4; job b4 cq=blp p=10 never gpu=4",
     "+a1@res* +b1@res* +a2@spot +b2@spot +a3@spot +b3@spot +a4@spot"
     " +b4@spot"},
    {"reference: high-priority jobs reclaim the reservation",
     "cq alp cohort=ab res:gpu=0/4 spot:gpu=12/4;"
     "cq ahp cohort=ab within=lower reclaim=lower res:gpu=4/0 od:gpu=4/4;"
     "cq blp cohort=ab res:gpu=0/4 spot:gpu=12/4;"
     "cq bhp cohort=ab within=lower reclaim=lower res:gpu=4/0 od:gpu=4/4;"
     "run a1 cq=alp in=res p=10 gpu=4; run b1 cq=blp in=res p=10 gpu=4;"
     "run a2 cq=alp in=spot p=10 gpu=4; run b2 cq=blp in=spot p=10 gpu=4;"
     "run a3 cq=alp in=spot p=10 gpu=4; run b3 cq=blp in=spot p=10 gpu=4;"
     "run a4 cq=alp in=spot p=10 gpu=4; run b4 cq=blp in=spot p=10 gpu=4;"
     "job h1 cq=ahp p=20 gpu=4; job g1 cq=bhp p=20 gpu=4;"
     "job h2 cq=ahp p=20 gpu=4; job g2 cq=bhp p=20 gpu=4;"
     "job h3 cq=ahp p=20 gpu=4; job g3 cq=bhp p=20 gpu=4;"
     "job h4 cq=ahp p=20 gpu=4; job g4 cq=bhp p=20 gpu=4",
     "+h1@od +g1@od -b1(h2,InCohortReclamation) -a1(g2,InCohortReclamation)"
     " h2=Preempting g2=Preempting h3=InsufficientQuota g3=InsufficientQuota"
     " h4=InsufficientQuota g4=InsufficientQuota"},

    /* ---- capacity windows (DWS Calendar mode) ---- */
    {"window: nothing is admitted before it opens",
     "now 1019; cq a cal:gpu=4 win=cal:1020:2000; job j cq=a maxrun=60 gpu=2",
     "j=InsufficientQuota"},
    {"window: admitted at the second it opens",
     "now 1020; cq a cal:gpu=4 win=cal:1020:2000; job j cq=a maxrun=60 gpu=2",
     "+j@cal"},
    {"window: a run that ends exactly at the end fits, one second more not",
     "now 1500; cq a cal:gpu=4 win=cal:1000:2000;"
     "job over cq=a maxrun=501 gpu=2; job exact cq=a maxrun=500 gpu=2",
     "+exact@cal over=InsufficientQuota"},
    {"window: a job too long for what is left goes to the next flavor",
     "now 1500; cq a cal:gpu=4 spot:gpu=4 win=cal:1000:2000;"
     "job long cq=a maxrun=600 gpu=2; job short cq=a maxrun=400 gpu=2",
     "+long@spot +short@cal"},
    {"window: StrictFIFO blocks behind a head too long for the window",
     "now 1500; cq a strict cal:gpu=4 win=cal:1000:2000;"
     "job long cq=a maxrun=600 gpu=2; job short cq=a maxrun=60 gpu=2",
     "long=InsufficientQuota short=WaitingForHead"},
    {"window: its quota is gone once it has ended",
     "now 2000; cq a cal:gpu=4 spot:gpu=2 win=cal:1000:2000;"
     "job j cq=a maxrun=10 gpu=4; job k cq=a maxrun=10 gpu=2",
     "+k@spot j=InsufficientQuota"},
    {"window: a job with no known run length never goes in",
     "now 1500; cq a cal:gpu=4 win=cal:1000:2000; job j cq=a gpu=2",
     "j=InsufficientQuota"},
    {"window: a flavor without one is not limited by run length",
     "now 1500; cq a cal:gpu=4 spot:gpu=4 win=cal:1000:2000;"
     "job j cq=a maxrun=99999 gpu=2",
     "+j@spot"},
    {"window: a closed window lends nothing to the cohort",
     "now 1000; cq a cohort=c cal:gpu=0 win=cal:1020:2000;"
     "cq b cohort=c cal:gpu=4 win=cal:1020:2000; job j cq=a maxrun=10 gpu=2",
     "j=InsufficientQuota"},
    {"window: an open window lends to the cohort",
     "now 1500; cq a cohort=c cal:gpu=0 win=cal:1020:2000;"
     "cq b cohort=c cal:gpu=4 win=cal:1020:2000; job j cq=a maxrun=10 gpu=2",
     "+j@cal*"},
    {"window: jobs still in an ended window hold their quota, no preemption",
     "now 2100; cq a within=lower cal:gpu=4 spot:gpu=2 win=cal:1000:2000;"
     "run r cq=a in=cal p=0 gpu=4; job j cq=a p=9 maxrun=10 gpu=4",
     "j=InsufficientQuota"},
    {"window: preemption inside an open window that the preemptor fits",
     "now 1500; cq a within=lower cal:gpu=4 win=cal:1000:2000;"
     "run r cq=a in=cal p=0 gpu=4; job long cq=a p=9 maxrun=900 gpu=4;"
     "job j cq=a p=9 maxrun=100 gpu=4",
     "-r(j,InClusterQueue) long=InsufficientQuota j=Preempting"},
};

START_TEST(table)
{
  const struct sched_case *tc = &cases[_i];
  struct dsl *d = calloc(1, sizeof(*d));
  struct sched_output out;
  char got[1024];
  int i;

  ck_assert_ptr_nonnull(d);
  ck_assert_msg(dsl_parse(d, tc->input) == 0, "%s: parse: %s", tc->what,
                d->error);
  ck_assert_msg(sched_cycle(&d->in, &out) == 0, "%s: sched_cycle", tc->what);
  for (i = 0; i < out.n_admissions; i++)
    ck_assert(out.reasons[out.admissions[i].job] == SCHED_ADMITTED);
  dsl_render(d, &out, got, sizeof(got));
  ck_assert_msg(strcmp(got, tc->expect) == 0,
                "case %d \"%s\"\n  expected: %s\n  got:      %s", _i, tc->what,
                tc->expect, got);
  sched_output_free(&out);
  free(d);
}
END_TEST

/* sched_usage and sched_weighted_share on a small cohort. */
START_TEST(usage_and_share)
{
  struct dsl *d = calloc(1, sizeof(*d));

  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(
      dsl_parse(d, "cq l cohort=c res:gpu=6/*/4 spot:gpu=2,cpu=1000;"
                   "cq a cohort=c weight=2 res:gpu=2 spot:cpu=0;"
                   "cq z cohort=c weight=0 res:gpu=0; cq solo res:gpu=1;"
                   "run a1 cq=a in=res gpu=3; run a2 cq=a in=res gpu=2;"
                   "run a3 cq=a in=spot cpu=500; run z1 cq=z in=res gpu=1;"
                   "run s1 cq=solo in=res gpu=5"),
      0);
  ck_assert_int_eq(sched_usage(&d->in, 1, 0, SCHED_GPU), 5);
  ck_assert_int_eq(sched_usage(&d->in, 1, 1, SCHED_CPU), 500);
  ck_assert_int_eq(sched_usage(&d->in, 0, 0, SCHED_GPU), 0);
  /* a: res gpu 3 over / pool (4 + 2) = 0.5; spot cpu 500 / 1000 = 0.5;
   * weight 2 → 0.25 */
  ck_assert_double_eq_tol(sched_weighted_share(&d->in, 1), 0.25, 1e-12);
  ck_assert_double_eq_tol(sched_weighted_share(&d->in, 0), 0, 1e-12);
  ck_assert(sched_weighted_share(&d->in, 2) >= 1e9); /* weight 0 */
  ck_assert_double_eq_tol(sched_weighted_share(&d->in, 3), 0, 1e-12);
  ck_assert_double_eq_tol(sched_weighted_share(&d->in, 9), 0, 1e-12);
  free(d);
}
END_TEST

/* Indices out of range are rejected, and the output left empty. */
START_TEST(invalid_input)
{
  struct dsl *d = calloc(1, sizeof(*d));
  struct sched_output out;

  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(dsl_parse(d, "cq a res:gpu=1; run r cq=a in=res gpu=1;"
                                "job j cq=a gpu=1"),
                   0);
  d->pending[0].cq = 5;
  ck_assert_int_eq(sched_cycle(&d->in, &out), -1);
  ck_assert_ptr_null(out.reasons);
  d->pending[0].cq = 0;
  d->admitted[0].flavor = 3;
  ck_assert_int_eq(sched_cycle(&d->in, &out), -1);
  d->admitted[0].flavor = 0;
  d->cqs[0].cohort = 2;
  ck_assert_int_eq(sched_cycle(&d->in, &out), -1);
  d->cqs[0].cohort = -1;
  d->cqs[0].flavors[0].quota[SCHED_GPU].borrowing_limit = -2;
  ck_assert_int_eq(sched_cycle(&d->in, &out), -1);
  d->cqs[0].flavors[0].quota[SCHED_GPU].borrowing_limit = SCHED_UNLIMITED;
  d->cqs[0].flavors[0].window_from = 2000; /* a window ending as it starts */
  d->cqs[0].flavors[0].window_until = 2000;
  ck_assert_int_eq(sched_cycle(&d->in, &out), -1);
  d->cqs[0].flavors[0].window_from = d->cqs[0].flavors[0].window_until = 0;
  ck_assert_int_eq(sched_cycle(&d->in, &out), 0);
  ck_assert_int_eq(out.n_admissions, 0);
  ck_assert_int_eq(out.reasons[0], SCHED_INSUFFICIENT_QUOTA);
  sched_output_free(&out);
  free(d);
}
END_TEST

/* Nothing at all: a valid, empty cycle. */
START_TEST(empty_input)
{
  struct sched_input in;
  struct sched_output out;

  memset(&in, 0, sizeof(in));
  ck_assert_int_eq(sched_cycle(&in, &out), 0);
  ck_assert_int_eq(out.n_admissions, 0);
  ck_assert_int_eq(out.n_evictions, 0);
  sched_output_free(&out);
  sched_output_free(&out);
}
END_TEST

Suite *sched_suite(void)
{
  Suite *s = suite_create("sched");
  TCase *tc = tcase_create("core");

  tcase_add_loop_test(tc, table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
  tcase_add_test(tc, usage_and_share);
  tcase_add_test(tc, invalid_input);
  tcase_add_test(tc, empty_input);
  suite_add_tcase(s, tc);
  return s;
}
