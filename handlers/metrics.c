/*
 * metrics.c (handlers) — GET /metrics: the Prometheus exposition of this
 * replica's registry (server/metrics.c), text format 0.0.4, no auth.
 */
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "server/metrics.h"
#include "server/problem.h"

enum gg_code metrics_page(struct gg_req *req)
{
  char *text = metrics_render(); /* new */
  enum gg_code rc;

  if (!text)
    return problem_fail(req, GG_INTERNAL, "The metrics could not be rendered.");
  rc = req_reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8",
                      text, strlen(text));
  free(text);
  return rc;
}
