/*
 * metrics.c (handlers) — GET /metrics: the Prometheus exposition of this
 * replica's registry (lib/metrics.c), text format 0.0.4.
 *
 * Without a token the page shows only what belongs to no team: HTTP,
 * Batch, dispatch, admission timing, billing ingest, connections and
 * process metrics. Team spend and everything labelled by cluster queue
 * (pending jobs, admissions, evictions, usage and quotas) need a token of
 * role admin or metrics (the route table lets no other role in).
 */
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "lib/metrics.h"
#include "server/problem.h"

enum gg_code metrics_page(struct gg_req *req)
{
  bool full = req->principal.role == AUTH_ROLE_ADMIN ||
              req->principal.role == AUTH_ROLE_METRICS;
  char *text = full ? metrics_render() : metrics_render_public(); /* new */
  enum gg_code rc;

  if (!text)
    return problem_fail(req, GG_INTERNAL, "The metrics could not be rendered.");
  rc = req_reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8",
                      text, strlen(text));
  free(text);
  return rc;
}
