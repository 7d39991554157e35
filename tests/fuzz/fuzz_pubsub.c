/*
 * fuzz_pubsub.c — Pub/Sub push bodies: the input is the body of
 * POST /v1/batch/notifications, read by notifications_parse_push() (what
 * the handler does after authenticating the push). Any body is classified:
 * a state change of one of gpugate's Batch jobs names a job gpugate could
 * have created and a state of upper-case letters and '_'; anything else
 * says why it is acknowledged and dropped. A crash, a leak or undefined
 * behaviour is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/notifications_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct push_msg msg;
  enum push_kind kind;
  const char *base, *p;

  if (size > 65536)
    return 0;
  memset(&msg, 0x5A, sizeof(msg));
  kind = notifications_parse_push((const char *)data, size, &msg);
  if (kind != msg.kind)
    abort();
  switch (kind) {
  case PUSH_JOB_STATE:
    if (!memchr(msg.job_name, '\0', sizeof(msg.job_name)) ||
        !memchr(msg.state, '\0', sizeof(msg.state)) || !msg.state[0])
      abort();
    base = strrchr(msg.job_name, '/');
    if (!notifications_is_gpugate_job(base ? base + 1 : msg.job_name))
      abort(); /* only gpugate's own jobs are acted on */
    for (p = msg.state; *p; p++)
      if (!((*p >= 'A' && *p <= 'Z') || *p == '_'))
        abort();
    break;
  case PUSH_IGNORED:
  case PUSH_FOREIGN:
  case PUSH_MALFORMED:
    if (!msg.why || !*msg.why)
      abort(); /* acknowledged with a reason */
    break;
  default:
    abort();
  }
  return 0;
}
