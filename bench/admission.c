/*
 * bench/admission.c — admission cycles against PostgreSQL with 100,000
 * pending jobs (not a test; bench/admission.sh runs it).
 *
 * The leader's own code (control/admission.c) on its own connection, on a
 * database holding one flavor, one cluster queue (8 GPUs, full after the
 * first cycle) and BENCH_ADM_PENDING (100,000) pending 1-GPU jobs of three
 * priorities, inserted in one statement:
 *
 *   load    — the first cycle: the full read of the state, one scheduler
 *             run and its decisions (8 admissions, 100,000 reasons), then
 *             the cycles that follow until nothing changes, and the first
 *             publication of every queue position;
 *   idle    — IDLE_CYCLES cycles with nothing new (lock, change feed,
 *             commit): the cost of an admission cycle while nothing
 *             happens, whatever the backlog;
 *   +1,000  — NEW_ROUNDS times: 1,000 new pending jobs inserted (one
 *             statement, as submissions would), then the cycle that sees
 *             them (feed; the scheduler on the 1,000 new jobs, the
 *             older ones left out as control/admission.c may when only
 *             submissions and admissions happened since; 1,000 reasons
 *             written in one statement), the cycle after it (its own
 *             writes read back), and the publication of the new jobs'
 *             positions and of the counts (the positions merged into the
 *             admission order the state keeps; the positions that moved
 *             written in one statement).
 *
 * The jobs alternate between two team queues of the cluster queue. Then
 * the same idle and +1,000 rounds again with the cluster queue's
 * usage_fair_sharing on (fair share over time: the heads of the two team
 * queues ordered by decayed usage, the leader's accounts accruing from the
 * admissions), and the ratio of the +1,000 cycles on ÷ off (goal ≤ 1.2).
 *
 * Prints p50 and p99 (and max) of wall time and of this thread's CPU time
 * per cycle, in milliseconds. Usage: bench_admission DATABASE_URL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db.h"
#include "control/admission.h"

#define IDLE_CYCLES 300
#define NEW_ROUNDS 15
#define NEW_JOBS 1000

static double clock_ms(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
  int i = (int)(p * (double)(n - 1) + 0.5);

  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return v[i < n ? i : n - 1];
}

static const char sql_insert[] =
    "INSERT INTO jobs (id, team, queue, cluster_queue, name, "
    "priority_class, priority, can_preempt, state, gpu, cpu_milli, "
    "memory_mib, max_run_duration_s, spec) "
    "SELECT 'j-bench' || lpad(g::text, 9, '0'), 'bench', "
    "CASE WHEN g % 2 = 0 THEN 'q' ELSE 'q2' END, 'cq', "
    "'bench', 'default', (g % 3) * 10, false, 'PENDING', 1, 1000, 1024, "
    "3600, '{}'::json FROM generate_series($1::int, $2::int) g";

static void insert(struct db_conn *c, int from, int to)
{
  char a[16], b[16], err[256];
  const char *params[2] = {a, b};

  snprintf(a, sizeof(a), "%d", from);
  snprintf(b, sizeof(b), "%d", to);
  if (db_run(c, sql_insert, 2, params, NULL, err, sizeof(err))) {
    fprintf(stderr, "bench_admission: insert: %s\n", err);
    exit(1);
  }
}

/* One cycle; its wall and CPU time in ms. Exits on failure. */
static int cycle(struct admission *a, struct db_conn *c, double *wall,
                 double *cpu, struct admission_result *r)
{
  char err[256] = "";
  double w0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  int rc = admission_cycle(a, c, r, err, sizeof(err));

  *wall = clock_ms(CLOCK_MONOTONIC) - w0;
  *cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  if (rc < 0) {
    fprintf(stderr, "bench_admission: cycle failed: %s\n", err);
    exit(1);
  }
  return rc;
}

/* One publication of the positions and counts; its wall and CPU time in
 * ms. Exits on failure. */
static void publish(struct admission *a, struct db_conn *c, double *wall,
                    double *cpu)
{
  char err[256] = "";
  double w0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);

  if (admission_publish(a, c, 1000000, err, sizeof(err)) < 0) {
    fprintf(stderr, "bench_admission: publish failed: %s\n", err);
    exit(1);
  }
  *wall = clock_ms(CLOCK_MONOTONIC) - w0;
  *cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static const char sql_fs_on[] =
    "UPDATE cluster_queues SET spec = jsonb_set(spec::jsonb, "
    "'{usage_fair_sharing}', '{\"half_life_s\": 3600, \"resource_weights\": "
    "{\"gpu\": 1, \"cpu\": 0, \"memory\": 0}, \"precedence\": "
    "\"usage\"}')::json WHERE name = 'cq'";

static void row(const char *what, double *wall, double *cpu, int n)
{
  double w50 = pct(wall, n, 0.5), w99 = pct(wall, n, 0.99), wmax = wall[n - 1];
  double c50 = pct(cpu, n, 0.5), c99 = pct(cpu, n, 0.99);

  printf("%-52s %5d %9.3f %9.3f %9.3f %9.3f %9.3f\n", what, n, w50, w99, wmax,
         c50, c99);
}

/* The timings of one setting (usage fair sharing off or on). */
struct run {
  double wall[IDLE_CYCLES], cpu[IDLE_CYCLES];
  double nw[NEW_ROUNDS], nc[NEW_ROUNDS], fw[NEW_ROUNDS], fc[NEW_ROUNDS],
      pw[NEW_ROUNDS], pc[NEW_ROUNDS];
};

/* Idle cycles, then NEW_ROUNDS rounds of NEW_JOBS new jobs. */
static int rounds(struct admission *a, struct db_conn *c, int *next,
                  struct run *t)
{
  struct admission_result r;
  double w, cp;
  int i, k;

  for (i = 0; i < IDLE_CYCLES; i++) {
    cycle(a, c, &t->wall[i], &t->cpu[i], &r);
    if (r.ran || r.changed) {
      fprintf(stderr, "bench_admission: an idle cycle saw changes\n");
      return 1;
    }
  }
  for (i = 0; i < NEW_ROUNDS; i++) {
    insert(c, *next, *next + NEW_JOBS - 1);
    *next += NEW_JOBS;
    cycle(a, c, &t->nw[i], &t->nc[i], &r);
    if (r.changed != NEW_JOBS) {
      fprintf(stderr, "bench_admission: the feed brought %d of %d jobs\n",
              r.changed, NEW_JOBS);
      return 1;
    }
    t->fw[i] = t->fc[i] = 0;
    for (k = 0; k < 20; k++) {
      int again = cycle(a, c, &w, &cp, &r);
      t->fw[i] += w;
      t->fc[i] += cp;
      if (!again)
        break;
    }
    publish(a, c, &t->pw[i], &t->pc[i]);
  }
  return 0;
}

static void rows(struct run *t, const char *suffix)
{
  char what[4][64];

  snprintf(what[0], sizeof(what[0]), "idle cycle (nothing new)%s", suffix);
  snprintf(what[1], sizeof(what[1]), "+1,000 new: the cycle that sees them%s",
           suffix);
  snprintf(what[2], sizeof(what[2]), "+1,000 new: the cycle after%s", suffix);
  snprintf(what[3], sizeof(what[3]), "+1,000 new: publish positions%s", suffix);
  row(what[0], t->wall, t->cpu, IDLE_CYCLES);
  row(what[1], t->nw, t->nc, NEW_ROUNDS);
  row(what[2], t->fw, t->fc, NEW_ROUNDS);
  row(what[3], t->pw, t->pc, NEW_ROUNDS);
}

int main(int argc, char **argv)
{
  static struct run off, on;
  struct db_conn c = {0};
  struct admission *a = admission_new(false, 600);
  struct admission_result r;
  char err[256];
  const char *env = getenv("BENCH_ADM_PENDING");
  int pending = env ? (int)strtol(env, NULL, 10) : 100000;
  double w, cp, load_w, load_c, settle_w = 0, pub_w, pub_c, off_c, on_c;
  int k, next;

  if (argc != 2 || !a || pending <= 0) {
    fprintf(stderr, "usage: bench_admission DATABASE_URL\n");
    return 2;
  }
  c.pg = db_connect(argv[1], err, sizeof(err));
  if (!c.pg) {
    fprintf(stderr, "bench_admission: %s\n", err);
    return 1;
  }
  insert(&c, 1, pending);
  next = pending + 1;

  cycle(a, &c, &load_w, &load_c, &r);
  settle_w = load_w;
  for (k = 0; k < 20 && cycle(a, &c, &w, &cp, &r) != 0; k++)
    settle_w += w;
  settle_w += w;
  publish(a, &c, &pub_w, &pub_c);
  if (rounds(a, &c, &next, &off))
    return 1;

  /* usage fair sharing on: the configuration reloads, then settles */
  if (db_run(&c, sql_fs_on, 0, NULL, NULL, err, sizeof(err))) {
    fprintf(stderr, "bench_admission: %s\n", err);
    return 1;
  }
  for (k = 0; k < 20 && cycle(a, &c, &w, &cp, &r) != 0; k++)
    ;
  cycle(a, &c, &w, &cp, &r);
  publish(a, &c, &w, &cp);
  if (rounds(a, &c, &next, &on))
    return 1;

  printf("admission cycles, %d pending jobs in one cluster queue (two team "
         "queues), %d jobs in memory\n",
         pending, admission_jobs(a));
  printf("%-52s %5s %9s %9s %9s %9s %9s\n", "ms", "n", "wall p50", "wall p99",
         "wall max", "CPU p50", "CPU p99");
  printf("%-52s %5d %9.1f %9s %9s %9.1f %9s\n", "load: first cycle (full read)",
         1, load_w, "-", "-", load_c, "-");
  printf("%-52s %5d %9.1f %9s %9s %9s %9s\n", "load: until settled", 1,
         settle_w, "-", "-", "-", "-");
  printf("%-52s %5d %9.1f %9s %9s %9.1f %9s\n", "load: publish all positions",
         1, pub_w, "-", "-", pub_c, "-");
  rows(&off, "");
  rows(&on, ", fair share on");
  off_c = pct(off.nc, NEW_ROUNDS, 0.5);
  on_c = pct(on.nc, NEW_ROUNDS, 0.5);
  printf("+1,000 new, the cycle that sees them, CPU p50 with usage fair "
         "sharing on / off: %.2f (goal <= 1.2)\n",
         off_c > 0 ? on_c / off_c : 0);
  admission_free(a);
  PQfinish(c.pg);
  return 0;
}
