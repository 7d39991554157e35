/*
 * batch_names.c — Cloud Batch's job ids and states as gpugate reads them
 * (see batch_names.h): the jobId "gpugate-<job>-a<attempt>[-r<k>]" written
 * and parsed, and Batch → gpugate states given what gpugate asked of the
 * job. No I/O and no globals.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/batch_names.h"

/* ------------------------------------------------------------- ids */

static bool lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ^[a-z]([a-z0-9-]*[a-z0-9])?$ and at most max characters */
static bool batch_id_ok(const char *s, size_t max)
{
  size_t i, n = strlen(s);

  if (n == 0 || n > max || !(s[0] >= 'a' && s[0] <= 'z') ||
      !lower_alnum(s[n - 1]))
    return false;
  for (i = 1; i < n; i++)
    if (!lower_alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

int batch_job_id(const char *job_id, int attempt, char *out, size_t outlen)
{
  int n;

  if (!out || outlen == 0)
    return -1;
  out[0] = '\0';
  if (!job_id || !*job_id || attempt < 1)
    return -1;
  n = snprintf(out, outlen, "gpugate-%s-a%d", job_id, attempt);
  if (n < 0 || (size_t)n >= outlen || !batch_id_ok(out, BATCH_JOB_ID_MAX)) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}

/* The decimal number of digits s[0..n) (n >= 1, at most 6 digits, no
 * leading zero), or -1. */
static int small_number(const char *s, size_t n)
{
  int v = 0;
  size_t i;

  if (n == 0 || n > 6 || (s[0] == '0' && n > 1))
    return -1;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* The start of a trailing "-<letter><digits>" of s[0..*n) as its number,
 * shortening *n to before it; -1 when s does not end so. */
static int trailing(const char *s, size_t *n, char letter)
{
  size_t end = *n, i = end;
  int v;

  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
    i--;
  if (i < 2 || s[i - 1] != letter || s[i - 2] != '-')
    return -1;
  if ((v = small_number(s + i, end - i)) < 0)
    return -1;
  *n = i - 2;
  return v;
}

int batch_job_id_parse(const char *name, char *id, size_t idlen, int *attempt,
                       int *race_k)
{
  const char *base = name ? strrchr(name, '/') : NULL;
  size_t n, idn;
  int a, k = 0;

  if (!name)
    return -1;
  base = base ? base + 1 : name;
  n = strlen(base);
  if (n <= 8 || strncmp(base, "gpugate-", 8) != 0)
    return -1;
  {
    size_t m = n;
    int r = trailing(base, &m, 'r');
    if (r >= 1) {
      k = r;
      n = m;
    }
  }
  if ((a = trailing(base, &n, 'a')) < 1 || n <= 8)
    return -1;
  idn = n - 8;
  if (idn >= idlen)
    return -1;
  memcpy(id, base + 8, idn);
  id[idn] = '\0';
  *attempt = a;
  if (race_k)
    *race_k = k;
  return 0;
}

/* ---------------------------------------------------------- states */

enum batch_state batch_state_parse(const char *s)
{
  static const struct {
    const char *name;
    enum batch_state st;
  } map[] = {{"QUEUED", BATCH_STATE_QUEUED},
             {"SCHEDULED", BATCH_STATE_QUEUED},
             {"RUNNING", BATCH_STATE_RUNNING},
             {"SUCCEEDED", BATCH_STATE_SUCCEEDED},
             {"FAILED", BATCH_STATE_FAILED},
             {"CANCELLATION_IN_PROGRESS", BATCH_STATE_CANCELLING},
             {"CANCELLED", BATCH_STATE_CANCELLED},
             {"DELETION_IN_PROGRESS", BATCH_STATE_DELETED}};
  size_t i;

  for (i = 0; s && i < sizeof(map) / sizeof(map[0]); i++)
    if (!strcmp(s, map[i].name))
      return map[i].st;
  return BATCH_STATE_UNKNOWN;
}

const char *batch_state_target(enum batch_state st, enum batch_intent intent,
                               const char **reason)
{
  const char *to = NULL, *why = NULL;
  bool stopping = intent != BATCH_INTENT_NONE;

  switch (st) {
  case BATCH_STATE_QUEUED:
    to = stopping ? NULL : "QUEUED";
    break;
  case BATCH_STATE_RUNNING:
    to = stopping ? NULL : "RUNNING";
    break;
  case BATCH_STATE_CANCELLING:
    /* the Batch job may still run: a cancel or an eviction (and the quota
     * it holds) waits for CANCELLED; one cancelled outside gpugate is
     * judged then too (db/batch.c, the invariant) */
    break;
  case BATCH_STATE_SUCCEEDED: /* finished before our cancel took effect */
    to = "SUCCEEDED";
    break;
  case BATCH_STATE_FAILED:
  case BATCH_STATE_CANCELLED:
  case BATCH_STATE_DELETED:
    if (intent == BATCH_INTENT_EVICT) {
      to = "PENDING";
      why = "Evicted";
    } else if (intent == BATCH_INTENT_CANCEL) {
      to = "CANCELLED";
      why = "CancelledByUser";
    } else if (st == BATCH_STATE_FAILED) {
      to = "FAILED";
      why = "BatchJobFailed";
    } else if (st == BATCH_STATE_CANCELLED) {
      to = "FAILED";
      why = "BatchJobCancelledOutsideGpugate";
    } else {
      to = "FAILED";
      why = "BatchJobDeleted";
    }
    break;
  case BATCH_STATE_UNKNOWN:
  default:
    break;
  }
  if (reason)
    *reason = why;
  return to;
}
