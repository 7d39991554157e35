/*
 * bench/ingest.c — the two helpers of bench/ingest.sh (not a test):
 *
 *   bench_ingest gen FILE ROWS   write ROWS rows of a synthetic Cloud Billing
 *                                standard usage cost export as NDJSON, as
 *                                BigQuery writes it (≈ 1 KB a row: project
 *                                with ancestry, labels, system_labels,
 *                                location, credits, usage, invoice, tags,
 *                                adjustment_info, ...). Every row is distinct;
 *                                the output is the same for the same ROWS.
 *   bench_ingest run OUT -- CMD ...
 *                                run CMD (stdout to OUT, stderr inherited) and
 *                                print "SECONDS PEAK_RSS_KIB EXIT CPU_SECONDS"
 *                                — the wall time, the peak resident set and
 *                                the CPU time (user + system) of CMD itself
 *                                (getrusage of the waited child, as
 *                                /usr/bin/time -v reports them).
 *   bench_ingest cpu PID         print the CPU seconds used so far by process
 *                                PID and all its children, waited for or not
 *                                (for the postmaster: the whole cluster).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- generator */

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static unsigned pick(unsigned n)
{
  return (unsigned)(next() % n);
}

struct sku {
  const char *service_id, *service, *sku_id, *sku, *unit, *pricing_unit;
  double price; /* per pricing unit */
  double per;   /* usage units per pricing unit */
  int gpu;      /* GPUs per row's VM */
};

static const struct sku skus[] = {
    {"6F81-5844-456A", "Compute Engine", "039F-D0DA-4055",
     "Nvidia L4 GPU running in Americas", "seconds", "hour", 0.560645, 3600, 1},
    {"6F81-5844-456A", "Compute Engine", "2DA0-8E9B-BAF6",
     "Spot Preemptible Nvidia L4 GPU running in Americas", "seconds", "hour",
     0.2232, 3600, 1},
    {"6F81-5844-456A", "Compute Engine", "C2D8-F1B5-3E8A",
     "Nvidia Tesla A100 GPU running in Americas", "seconds", "hour", 2.933908,
     3600, 1},
    {"6F81-5844-456A", "Compute Engine", "2E27-4F75-95CD",
     "G2 Instance Core running in Americas", "seconds", "hour", 0.024988, 3600,
     0},
    {"6F81-5844-456A", "Compute Engine", "6B8F-E63D-832B",
     "G2 Instance Ram running in Americas", "byte-seconds", "gibibyte hour",
     0.002927, 3865470566400.0, 0},
    {"6F81-5844-456A", "Compute Engine", "D973-5D65-BAB2",
     "Storage PD Capacity", "byte-seconds", "gibibyte month", 0.04,
     2.8454795e15, 0},
    {"95FF-2EF5-5EA1", "Cloud Storage", "E5F0-6A5D-7BAD",
     "Standard Storage US Regional", "byte-seconds", "gibibyte month", 0.02,
     2.8454795e15, 0},
    {"5490-F7B7-8DF6", "Cloud Logging", "143F-A1B0-E0BE", "Log Volume", "bytes",
     "gibibyte", 0.5, 1073741824.0, 0},
};
#define N_SKUS ((long)(sizeof(skus) / sizeof(skus[0])))

static const char *const teams[] = {"ml-research", "vision", "speech", "recsys",
                                    NULL /* unlabelled */};
static const char *const flavors[] = {"l4-spot", "l4", "a100", "cpu"};
static const char *const regions[] = {"us-central1", "us-east4",
                                      "europe-west4"};
#define N_PROJECTS 5 /* per team */

/* A row's combination of team, project and SKU: 5 × 5 × 8 = 200 rows an
 * hour, so that 1,000,000 rows span 5,000 hours (≈ 7 months). */
#define COMBOS (5 * N_PROJECTS * N_SKUS)

/* A double as BigQuery writes FLOAT64: the shortest text that reads back
 * as the same value. */
static const char *num(double v, char *buf, size_t n)
{
  int prec;

  for (prec = 15; prec < 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      return buf;
  }
  snprintf(buf, n, "%.17g", v);
  return buf;
}

static void print_ts(FILE *f, time_t t)
{
  struct tm tm;

  gmtime_r(&t, &tm);
  fprintf(f, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900,
          tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void gen_row(FILE *f, long i)
{
  const time_t t0 = 1767225600; /* 2026-01-01 00:00:00 UTC */
  long hour = i / COMBOS, combo = i % COMBOS;
  const struct sku *s = &skus[combo % N_SKUS];
  int team = (int)(combo / N_SKUS / N_PROJECTS);
  int project = (int)(combo / N_SKUS % N_PROJECTS);
  const char *region = regions[(team + project) % 3];
  time_t start = t0 + hour * 3600, end = start + 3600;
  struct tm tm;
  double usage, cost, spot;
  int gpus = s->gpu ? 1 + (int)pick(8) : 0;
  unsigned ncredits = pick(3);
  char n1[32], n2[32];

  gmtime_r(&start, &tm);
  usage = s->per * (0.25 + (double)pick(1000) / 1000.0) *
          (s->gpu ? (double)gpus : 1.0 + pick(64));
  cost = usage / s->per * s->price;
  /* BigQuery writes FLOAT64s; a few carry binary noise */
  cost = (double)(long long)(cost * 1e6) / 1e6;
  if (pick(50) == 0)
    cost += 0.1 + 0.2 - 0.3;

  fprintf(f, "{\"billing_account_id\":\"01A2B3-C4D5E6-F7A8B9\",");
  fprintf(f, "\"service\":{\"id\":\"%s\",\"description\":\"%s\"},",
          s->service_id, s->service);
  fprintf(f, "\"sku\":{\"id\":\"%s\",\"description\":\"%s\"},", s->sku_id,
          s->sku);
  fprintf(f, "\"usage_start_time\":\"");
  print_ts(f, start);
  fprintf(f, "\",\"usage_end_time\":\"");
  print_ts(f, end);
  fprintf(f,
          "\",\"project\":{\"id\":\"%s-prj-%d\",\"number\":\"%d%08d\","
          "\"ancestry_numbers\":\"/512345678901/%d%06d/\"},",
          teams[team] ? teams[team] : "shared", project, 7 + team, project,
          3 + team, team);
  fprintf(f, "\"labels\":[");
  if (teams[team])
    fprintf(f,
            "{\"key\":\"gpugate-team\",\"value\":\"%s\"},{\"key\":\"gpugate-"
            "flavor\",\"value\":\"%s\"},{\"key\":\"gpugate-job\","
            "\"value\":\"job-%ld\"},",
            teams[team], flavors[combo % 4], (hour * 7 + combo) % 100000);
  fprintf(f, "{\"key\":\"env\",\"value\":\"%s\"}],",
          project % 2 ? "prod" : "dev");
  fprintf(f,
          "\"system_labels\":[{\"key\":\"compute.googleapis.com/"
          "machine_spec\",\"value\":\"g2-standard-%d\"},{\"key\":"
          "\"compute.googleapis.com/cores\",\"value\":\"%d\"}],",
          4 << (gpus > 4   ? 2
                : gpus > 2 ? 1
                           : 0),
          4 * (gpus ? gpus : 1));
  fprintf(f,
          "\"location\":{\"location\":\"%s\",\"country\":\"%s\","
          "\"region\":\"%s\",\"zone\":\"%s-%c\"},",
          region, region[0] == 'e' ? "NL" : "US", region, region,
          "abc"[pick(3)]);
  fprintf(f, "\"tags\":[],\"transaction_type\":\"GOOGLE\","
             "\"seller_name\":\"Google\",");
  fprintf(f, "\"export_time\":\"");
  print_ts(f, end + 3600 * 5 + pick(3600));
  fprintf(f,
          "\",\"cost\":%s,\"currency\":\"%s\","
          "\"currency_conversion_rate\":%s,",
          num(cost, n1, sizeof(n1)), team == 2 ? "EUR" : "USD",
          team == 2 ? "0.9215" : "1.0");
  fprintf(f,
          "\"usage\":{\"amount\":%s,\"unit\":\"%s\","
          "\"amount_in_pricing_units\":%s,\"pricing_unit\":\"%s\"},",
          num(usage, n1, sizeof(n1)), s->unit,
          num(usage / s->per, n2, sizeof(n2)), s->pricing_unit);
  fprintf(f, "\"credits\":[");
  spot = -(double)(long long)(cost * 0.3 * 1e6) / 1e6;
  if (ncredits >= 1)
    fprintf(f,
            "{\"name\":\"Committed use discount: GPU\",\"amount\":%s,"
            "\"full_name\":null,\"id\":\"CUD-%d\",\"type\":"
            "\"COMMITTED_USAGE_DISCOUNT\"}",
            num(spot, n1, sizeof(n1)), team);
  if (ncredits >= 2)
    fprintf(f, ",{\"name\":\"FreeTier\",\"amount\":-0.0001,"
               "\"full_name\":\"Free tier \\\"usage\\\"\",\"id\":\"FT\","
               "\"type\":\"FREE_TIER\"}");
  fprintf(f,
          "],\"invoice\":{\"month\":\"%04d%02d\",\"publisher_type\":"
          "\"GOOGLE\"},",
          tm.tm_year + 1900, tm.tm_mon + 1);
  fprintf(f,
          "\"cost_type\":\"regular\",\"adjustment_info\":null,"
          "\"cost_at_list\":%s}\n",
          num(cost * 1.25, n1, sizeof(n1)));
}

static int gen(const char *path, long rows)
{
  FILE *f = fopen(path, "w");
  static char buf[1 << 20];
  long i;

  if (!f) {
    fprintf(stderr, "bench_ingest: %s: %s\n", path, strerror(errno));
    return 1;
  }
  setvbuf(f, buf, _IOFBF, sizeof(buf));
  for (i = 0; i < rows; i++)
    gen_row(f, i);
  if (fclose(f) != 0) {
    fprintf(stderr, "bench_ingest: %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- runner */

static int run(const char *out, char **argv)
{
  struct timespec t0, t1;
  struct rusage ru;
  int status = 0, fd;
  pid_t pid;

  fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    fprintf(stderr, "bench_ingest: %s: %s\n", out, strerror(errno));
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0) {
    dup2(fd, STDOUT_FILENO);
    close(fd);
    execvp(argv[0], argv);
    fprintf(stderr, "bench_ingest: %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fd);
  if (wait4(pid, &status, 0, &ru) != pid)
    return 1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%.3f %ld %d %.3f\n",
         (double)(t1.tv_sec - t0.tv_sec) +
             (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
         ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128,
         (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
  return 0;
}

/* Clock ticks of /proc/PID/stat: utime + stime, plus cutime + cstime
 * (its waited-for children) when children is set; and its parent. */
static long ticks(long pid, bool children, long *ppid)
{
  char path[64], buf[1024], *p;
  unsigned long v[4];
  long parent;
  size_t n;
  FILE *f;
  int i;

  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  if (!(f = fopen(path, "r")))
    return -1;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (!(p = strrchr(buf, ')')) || sscanf(p + 2, "%*c %ld", &parent) != 1)
    return -1;
  for (i = 0, p += 2; i < 11 && p; i++) /* to field 14, utime */
    p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
  if (!p || sscanf(p, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
    return -1;
  if (ppid)
    *ppid = parent;
  return (long)(v[0] + v[1] + (children ? v[2] + v[3] : 0));
}

static int cpu(long root)
{
  long total = ticks(root, true, NULL), pid, parent, t;
  struct dirent *e;
  DIR *d;

  if (total < 0 || !(d = opendir("/proc")))
    return 1;
  while ((e = readdir(d)) != NULL) {
    pid = strtol(e->d_name, NULL, 10);
    if (pid > 0 && pid != root && (t = ticks(pid, false, &parent)) >= 0 &&
        parent == root)
      total += t;
  }
  closedir(d);
  printf("%.2f\n", (double)total / (double)sysconf(_SC_CLK_TCK));
  return 0;
}

int main(int argc, char **argv)
{
  if (argc == 4 && !strcmp(argv[1], "gen"))
    return gen(argv[2], strtol(argv[3], NULL, 10));
  if (argc >= 5 && !strcmp(argv[1], "run") && !strcmp(argv[3], "--"))
    return run(argv[2], argv + 4);
  if (argc == 3 && !strcmp(argv[1], "cpu"))
    return cpu(strtol(argv[2], NULL, 10));
  fprintf(stderr, "usage: bench_ingest gen FILE ROWS\n"
                  "       bench_ingest run OUT -- CMD [ARG...]\n"
                  "       bench_ingest cpu PID\n");
  return 2;
}
