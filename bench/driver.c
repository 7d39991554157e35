/*
 * driver.c — build/bench_driver: the load generator of bench/kueue.sh, on
 * libcurl multi (one thread, up to DRV_CONCURRENCY keep-alive connections).
 *
 *   bench_driver kueue URL TEAM     Kueue's scheduler-performance "baseline"
 *                                   arrivals, submitted on their schedule
 *   bench_driver burst URL TEAM N   N jobs, as fast as the gateway takes them
 *   bench_driver floor              print the theoretical floor and exit
 *
 * The bearer token is read from DRV_TOKEN (a member token of TEAM).
 *
 * kueue: the shape of kubernetes-sigs/kueue
 * test/performance/scheduler/configs/baseline/generator.yaml — 5 cohorts ×
 * 6 cluster queues; per cluster queue three sets created concurrently, each
 * waiting its interval before every creation: 350 "small" (1 CPU, 200 ms,
 * priority 50) every 100 ms, 100 "medium" (5 CPU, 500 ms, priority 100)
 * every 500 ms, 50 "large" (20 CPU, 1000 ms, priority 200) every 1200 ms;
 * 15,000 jobs. Job k of a set arrives at (k + 1) × interval × DRV_SCALE and
 * runs runtime × DRV_SCALE (passed to the emulator as the job's EMU_RUN_MS).
 * DRV_HOLD_MS (optional): also print floor_hold_s, the floor with that much
 * added to every job's runtime (bench/kueue.sh gives it the latency
 * model's mean create: a job holds its quota from admission, through its
 * create, until it ends).
 * Job of cohort c, cluster queue q goes to TEAM's queue "c{c}-q{q}" with
 * priority class small|medium|large and cpu_milli = 1000 × request;
 * DRV_REGIONS (comma-separated): each arrival names one as the job's
 * `locations`, so that Batch creates spread evenly over the regions at
 * every moment. Each class's arrivals, in order, are dealt out in blocks
 * of one per region, each block in an order drawn from the block's number
 * (region_of): every class is split evenly (the three classes are
 * admitted one after the other, and the last, 10,500 small jobs, goes at
 * the pace of the slowest region's budget). Round-robin over all arrivals
 * aliased with the shape's period (30 queues per tick: a queue's jobs
 * alternated between two of four regions, and whichever class was being
 * admitted loaded two regions and left two idle); a hash of the arrival's
 * index did not alias, but split the small jobs 2,525 to 2,687.
 *
 * burst: job i goes to queue DRV_QUEUES[i mod n] (comma-separated) and
 * region DRV_REGIONS[i mod n], requests 1 CPU, and carries
 * EMU_RUN_MS=DRV_RUN_MS (default 3600000).
 *
 * Output: key=value lines on stdout (submitted, ok, failed, statuses,
 * wall and lateness figures, floor_s for kueue), for the scripts to read.
 *
 * The floor (theoretical makespan with instantaneous, perfect admission):
 * quota is shared only inside a cohort, and a cohort's capacity C is the
 * sum of its cluster queues' nominal quota (each may borrow up to 100 CPU,
 * i.e. the whole rest of the cohort). With W(t) the CPU·seconds of the
 * cohort's jobs arriving at or after t, no schedule can finish before
 *     max over arrival times t of  t + W(t) / C         (fluid bound)
 * nor before max over jobs of arrival + runtime. The floor is the largest
 * of these over cohorts, measured from the first arrival like the wall
 * time. For the baseline: W(first) = 6 × (350·1·0.2 + 100·5·0.5 +
 * 50·20·1) = 7,920 CPU·s, C = 120 CPU → 66.0 s (≈ 65.9 s from the first
 * arrival at 100 ms).
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_COHORTS 5
#define N_CQS 6
#define NOMINAL_CPU 20.0
#define MAX_REGIONS 16

struct klass {
  const char *name;
  int count;
  int interval_ms;
  int runtime_ms;
  int cpu;
};

static const struct klass classes[] = {
    {"small", 350, 100, 200, 1},
    {"medium", 100, 500, 500, 5},
    {"large", 50, 1200, 1000, 20},
};
#define N_CLASSES (int)(sizeof(classes) / sizeof(classes[0]))

struct arrival {
  double at_s; /* scheduled, from the start */
  int cohort, cq, klass, k;
  size_t nth; /* among its class's arrivals, in time order */
};

struct xfer {
  CURL *easy;
  struct curl_slist *headers;
  char *body;
  double due_s;
  char *resp;
  size_t resp_len;
};

struct stats {
  long ok, failed, status[6]; /* 1xx..5xx, 0 = transport error */
  double *late;               /* completion minus scheduled time, per request */
  long n_late;
};

/* splitmix64's finaliser: a well-spread hash of i */
static uint64_t mix(uint64_t i)
{
  i += 0x9e3779b97f4a7c15ULL;
  i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9ULL;
  i = (i ^ (i >> 27)) * 0x94d049bb133111ebULL;
  return i ^ (i >> 31);
}

/* The region of the i-th arrival of class klass: arrivals dealt out in
 * blocks of n, one to each region, in an order drawn from the block. */
static size_t region_of(int klass, size_t i, size_t n)
{
  size_t order[MAX_REGIONS], j;
  uint64_t h = mix(((uint64_t)(i / n) << 3) | (uint64_t)klass);

  if (n < 2)
    return 0;
  for (j = 0; j < n; j++)
    order[j] = j;
  for (j = n; j > 1; j--) { /* Fisher-Yates, from the block's hash */
    size_t k = (size_t)(h % j), t = order[j - 1];
    h = mix(h);
    order[j - 1] = order[k];
    order[k] = t;
  }
  return order[i % n];
}

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double env_double(const char *name, double dflt)
{
  const char *v = getenv(name);
  char *end;
  double d;

  if (!v || !*v)
    return dflt;
  errno = 0;
  d = strtod(v, &end);
  if (errno || *end || d <= 0) {
    fprintf(stderr, "bench_driver: %s: expected a positive number\n", name);
    exit(2);
  }
  return d;
}

static const char *env_str(const char *name)
{
  const char *v = getenv(name);

  return v ? v : "";
}

static int cmp_arrival(const void *a, const void *b)
{
  const struct arrival *x = a, *y = b;

  return x->at_s < y->at_s ? -1 : x->at_s > y->at_s ? 1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y ? 1 : 0;
}

/* All arrivals of the baseline, sorted by time. */
static struct arrival *kueue_arrivals(double scale, size_t *n)
{
  size_t total = 0, i = 0;
  struct arrival *a;
  int c, q, s, k;

  for (s = 0; s < N_CLASSES; s++)
    total += (size_t)classes[s].count;
  total *= (size_t)N_COHORTS * N_CQS;
  a = calloc(total, sizeof(*a));
  if (!a)
    return NULL;
  for (c = 0; c < N_COHORTS; c++)
    for (q = 0; q < N_CQS; q++)
      for (s = 0; s < N_CLASSES; s++)
        for (k = 0; k < classes[s].count; k++) {
          a[i].at_s = (k + 1) * classes[s].interval_ms * scale / 1000.0;
          a[i].cohort = c;
          a[i].cq = q;
          a[i].klass = s;
          a[i].k = k;
          i++;
        }
  qsort(a, total, sizeof(*a), cmp_arrival);
  {
    size_t seen[N_CLASSES] = {0};
    for (i = 0; i < total; i++)
      a[i].nth = seen[a[i].klass]++;
  }
  *n = total;
  return a;
}

/* The floor described at the top, in seconds from the first arrival;
 * hold_s is added to every job's runtime (0: the floor itself; a mean
 * create latency: the floor if each job also held its quota through its
 * create, as it does from admission on, DRV_HOLD_MS). */
static double kueue_floor(const struct arrival *a, size_t n, double scale,
                          double hold_s)
{
  double floor_s = 0, first = n ? a[0].at_s : 0;
  int c;

  for (c = 0; c < N_COHORTS; c++) {
    double after = 0, cap = N_CQS * NOMINAL_CPU;
    size_t i;
    /* walk backwards: after = W(a[i].at_s) for this cohort */
    for (i = n; i-- > 0;) {
      const struct klass *k = &classes[a[i].klass];
      double run = k->runtime_ms * scale / 1000.0 + hold_s;
      if (a[i].cohort != c)
        continue;
      after += k->cpu * run;
      if (a[i].at_s + after / cap > floor_s)
        floor_s = a[i].at_s + after / cap;
      if (a[i].at_s + run > floor_s)
        floor_s = a[i].at_s + run;
    }
  }
  return floor_s - first;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
  struct xfer *x = arg;
  size_t n = size * nmemb;
  char *grown = realloc(x->resp, x->resp_len + n + 1);

  if (!grown)
    return 0;
  x->resp = grown;
  memcpy(x->resp + x->resp_len, p, n);
  x->resp_len += n;
  x->resp[x->resp_len] = '\0';
  return n;
}

static struct xfer *new_xfer(const char *url, const char *auth, json_t *body,
                             double due_s)
{
  struct xfer *x = calloc(1, sizeof(*x));

  if (!x)
    return NULL;
  x->body = json_dumps(body, JSON_COMPACT);
  x->easy = curl_easy_init();
  x->headers = curl_slist_append(NULL, auth);
  x->headers = curl_slist_append(x->headers, "Content-Type: application/json");
  x->headers = curl_slist_append(x->headers, "Expect:");
  if (!x->body || !x->easy || !x->headers) {
    fprintf(stderr, "bench_driver: out of memory\n");
    exit(1);
  }
  x->due_s = due_s;
  curl_easy_setopt(x->easy, CURLOPT_URL, url);
  curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
  curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body);
  curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
  curl_easy_setopt(x->easy, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
  return x;
}

static void free_xfer(struct xfer *x)
{
  curl_easy_cleanup(x->easy);
  curl_slist_free_all(x->headers);
  free(x->body);
  free(x->resp);
  free(x);
}

/* Collect finished transfers; returns how many finished. */
static int reap(CURLM *m, struct stats *st, double t0, int *shown)
{
  CURLMsg *msg;
  int left, done = 0;

  while ((msg = curl_multi_info_read(m, &left)) != NULL) {
    struct xfer *x;
    long code = 0;
    if (msg->msg != CURLMSG_DONE)
      continue;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
    if (msg->data.result == CURLE_OK)
      curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    st->status[code >= 100 && code < 600 ? code / 100 : 0]++;
    if (code == 201) {
      st->ok++;
    } else {
      st->failed++;
      if ((*shown)++ < 5)
        fprintf(stderr, "bench_driver: HTTP %ld (%s): %.300s\n", code,
                curl_easy_strerror(msg->data.result), x->resp ? x->resp : "");
    }
    st->late[st->n_late++] = now_s() - t0 - x->due_s;
    curl_multi_remove_handle(m, x->easy);
    free_xfer(x);
    done++;
  }
  return done;
}

static void print_stats(const struct stats *st, long submitted, double secs)
{
  double *l = st->late;
  long n = st->n_late;

  printf("submitted=%ld\nok=%ld\nfailed=%ld\n", submitted, st->ok, st->failed);
  printf("status_2xx=%ld\nstatus_4xx=%ld\nstatus_5xx=%ld\nstatus_err=%ld\n",
         st->status[2], st->status[4], st->status[5], st->status[0]);
  printf("submit_wall_s=%.3f\nsubmit_rate=%.1f\n", secs,
         secs > 0 ? (double)submitted / secs : 0.0);
  if (n > 0) {
    qsort(l, (size_t)n, sizeof(*l), cmp_double);
    printf("late_p50_ms=%.1f\nlate_p99_ms=%.1f\nlate_max_ms=%.1f\n",
           1000 * l[n / 2], 1000 * l[(size_t)((double)n * 0.99)],
           1000 * l[n - 1]);
  }
}

static size_t split(char *s, char **out, size_t max)
{
  size_t n = 0;
  char *save = NULL, *tok;

  for (tok = strtok_r(s, ",", &save); tok && n < max;
       tok = strtok_r(NULL, ",", &save))
    out[n++] = tok;
  return n;
}

static json_t *job_body(const char *name, const char *queue, const char *pc,
                        int cpu_milli, long run_ms, const char *region,
                        const char *cls)
{
  char run[32];
  json_t *b;

  snprintf(run, sizeof(run), "%ld", run_ms);
  b = json_pack("{s:s, s:s, s:{s:s, s:[s,s], s:{s:s}, s:i, s:i, s:i}, "
                "s:{s:s, s:s}}",
                "name", name, "queue", queue, "task", "image",
                "us-docker.pkg.dev/bench/sleep:1", "commands", "sleep", "1",
                "env", "EMU_RUN_MS", run, "cpu_milli", cpu_milli, "memory_mib",
                64, "gpu", 0, "labels", "bench", "gpugate", "class", cls);
  if (pc)
    json_object_set_new(b, "priority_class", json_string(pc));
  if (region)
    json_object_set_new(b, "locations", json_pack("[s]", region));
  return b;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  const char *token = getenv("DRV_TOKEN");
  double scale = env_double("DRV_SCALE", 1.0);
  const char *hold = getenv("DRV_HOLD_MS");
  double hold_s = hold && *hold ? env_double("DRV_HOLD_MS", 0) / 1000.0 : 0;
  long concurrency = (long)env_double("DRV_CONCURRENCY", 64);
  char regions_s[1024], queues_s[1024];
  char *regions[MAX_REGIONS], *queues[64], url[512], auth[4096];
  size_t n_regions, n_queues, n = 0, next = 0;
  struct arrival *arr = NULL;
  struct stats st;
  long total, run_ms = (long)env_double("DRV_RUN_MS", 3600000);
  int running = 0, shown = 0;
  double t0, first_wall = 0;
  CURLM *m;

  snprintf(regions_s, sizeof(regions_s), "%s", env_str("DRV_REGIONS"));
  snprintf(queues_s, sizeof(queues_s), "%s", env_str("DRV_QUEUES"));
  n_regions = split(regions_s, regions, MAX_REGIONS);
  n_queues = split(queues_s, queues, 64);
  if (!strcmp(mode, "floor") || !strcmp(mode, "kueue")) {
    arr = kueue_arrivals(scale, &n);
    if (!arr)
      return 1;
    if (!strcmp(mode, "floor")) {
      printf("jobs=%zu\nfloor_s=%.3f\n", n, kueue_floor(arr, n, scale, 0));
      if (hold_s > 0)
        printf("floor_hold_s=%.3f\n", kueue_floor(arr, n, scale, hold_s));
      return 0;
    }
    if (argc != 4)
      goto usage;
    total = (long)n;
  } else if (!strcmp(mode, "burst") && argc == 5) {
    total = strtol(argv[4], NULL, 10);
    if (total <= 0 || n_queues == 0)
      goto usage;
  } else {
    goto usage;
  }
  if (!token || !*token) {
    fprintf(stderr, "bench_driver: DRV_TOKEN is not set\n");
    return 2;
  }
  snprintf(url, sizeof(url), "%s/v1/teams/%s/jobs", argv[2], argv[3]);
  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);

  memset(&st, 0, sizeof(st));
  st.late = calloc((size_t)total + 1, sizeof(double));
  curl_global_init(CURL_GLOBAL_DEFAULT);
  m = curl_multi_init();
  if (!st.late || !m) {
    free(st.late);
    free(arr);
    return 1;
  }
  curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, concurrency);
  curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, concurrency);

  t0 = now_s();
  while (next < (size_t)total || running > 0) {
    double t = now_s() - t0, wait_s = 1.0;
    /* hand every due request to curl; it queues beyond the connections */
    /* at most one request per connection is handed to curl: the rest wait
     * here, late, without curl rescanning them (open loop: lateness counts
     * from the scheduled arrival) */
    while (next < (size_t)total && running < concurrency) {
      char name[96], queue[64];
      json_t *b;
      struct xfer *x;
      double due = 0;
      if (arr) {
        const struct arrival *a = &arr[next];
        const struct klass *k = &classes[a->klass];
        if (a->at_s > t) {
          wait_s = a->at_s - t;
          break;
        }
        due = a->at_s;
        snprintf(name, sizeof(name), "%s-c%d-q%d-%d", k->name, a->cohort, a->cq,
                 a->k);
        snprintf(queue, sizeof(queue), "c%d-q%d", a->cohort, a->cq);
        b = job_body(
            name, queue, k->name, 1000 * k->cpu, lround(k->runtime_ms * scale),
            n_regions ? regions[region_of(a->klass, a->nth, n_regions)] : NULL,
            k->name);
      } else {
        due = t;
        snprintf(name, sizeof(name), "burst-%zu", next);
        b = job_body(name, queues[next % n_queues], NULL, 1000, run_ms,
                     n_regions ? regions[next % n_regions] : NULL, "burst");
      }
      if (!b) {
        fprintf(stderr, "bench_driver: out of memory\n");
        exit(1);
      }
      x = new_xfer(url, auth, b, due);
      json_decref(b);
      if (next == 0)
        first_wall = wall_s();
      curl_multi_add_handle(m, x->easy);
      next++;
      running++;
    }
    curl_multi_perform(m, &running);
    reap(m, &st, t0, &shown);
    curl_multi_perform(m, &running);
    if (next < (size_t)total || running > 0) {
      int ms = (int)(wait_s * 1000);
      curl_multi_poll(m, NULL, 0, ms < 1 ? 1 : ms > 100 ? 100 : ms, NULL);
    }
  }
  reap(m, &st, t0, &shown);
  printf("first_submit_unix=%.6f\n", first_wall);
  print_stats(&st, total, now_s() - t0);
  if (arr) {
    printf("floor_s=%.3f\n", kueue_floor(arr, n, scale, 0));
    if (hold_s > 0)
      printf("floor_hold_s=%.3f\n", kueue_floor(arr, n, scale, hold_s));
  }
  curl_multi_cleanup(m);
  curl_global_cleanup();
  free(st.late);
  free(arr);
  return 0;
usage:
  fprintf(stderr, "usage: bench_driver kueue URL TEAM\n"
                  "       bench_driver burst URL TEAM N\n"
                  "       bench_driver floor\n"
                  "(DRV_TOKEN, DRV_SCALE, DRV_REGIONS, DRV_QUEUES, "
                  "DRV_CONCURRENCY, DRV_RUN_MS: see bench/driver.c)\n");
  return 2;
}
