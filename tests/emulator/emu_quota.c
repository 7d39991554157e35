/*
 * emu_quota.c — the per-region mutation quota (see emu_quota.h). Each
 * region keeps the acceptance times of its last EMU_MUTATION_QUOTA
 * mutations in a ring; a new one is accepted when the oldest of them is at
 * least a window old, so no window of that length ever holds more.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_quota.h"

#define MAX_REGIONS 32
#define MAX_QUOTA 100000

struct region {
  char name[64];
  long long *ring; /* acceptance times, ms; MAX_QUOTA slots */
  long long n;     /* accepted so far */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct region regions[MAX_REGIONS];
static size_t n_regions;
static long long refused;

/* The region of /v1/projects/{p}/locations/{r}/jobs… into out; false when
 * path is not a job mutation path. */
static bool region_of(const char *path, char *out, size_t outlen)
{
  const char *p = strstr(path, "/locations/"), *end;

  if (strncmp(path, "/v1/projects/", 13) != 0 || !p)
    return false;
  p += 11;
  end = strchr(p, '/');
  if (!end || strncmp(end, "/jobs", 5) != 0 || (size_t)(end - p) >= outlen)
    return false;
  memcpy(out, p, (size_t)(end - p));
  out[end - p] = '\0';
  return true;
}

static struct region *find(const char *name)
{
  size_t i;

  for (i = 0; i < n_regions; i++)
    if (!strcmp(regions[i].name, name))
      return &regions[i];
  if (n_regions == MAX_REGIONS)
    return NULL;
  regions[n_regions].ring = calloc(MAX_QUOTA, sizeof(long long));
  if (!regions[n_regions].ring)
    return NULL;
  snprintf(regions[n_regions].name, sizeof(regions[n_regions].name), "%s",
           name);
  return &regions[n_regions++];
}

bool emu_quota_admit(const char *method, const char *path, long long now)
{
  struct emu_config c;
  struct region *r;
  char name[64];
  long long quota;
  bool ok = true;

  if ((strcmp(method, "POST") != 0 && strcmp(method, "DELETE") != 0) ||
      !region_of(path, name, sizeof(name)))
    return true;
  emu_config_get(&c);
  quota = c.mutation_quota;
  if (quota <= 0)
    return true;
  if (quota > MAX_QUOTA)
    quota = MAX_QUOTA;
  pthread_mutex_lock(&mu);
  r = find(name);
  if (r) {
    /* the quota-th acceptance back from now must be a window old */
    if (r->n >= quota &&
        now - r->ring[(r->n - quota) % MAX_QUOTA] < c.quota_window_ms) {
      ok = false;
      refused++;
    } else {
      r->ring[r->n % MAX_QUOTA] = now;
      r->n++;
    }
  }
  pthread_mutex_unlock(&mu);
  return ok;
}

long long emu_quota_refused(void)
{
  long long n;

  pthread_mutex_lock(&mu);
  n = refused;
  pthread_mutex_unlock(&mu);
  return n;
}
