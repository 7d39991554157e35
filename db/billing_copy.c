/*
 * billing_copy.c — sending a flush's new rows to billing_rows as one binary
 * COPY (db/billing_flush.c decides which rows are new and their order).
 */
#include <string.h>

#include "db/billing.h"
#include "db/billing_batch.h"
#include "db/db.h"

#define COPY_PIECE ((size_t)256 * 1024) /* bytes per PQputCopyData */

/* The field order of a row's COPY tuple: gpu_hours first, then the fields
 * db_billing_batch_add writes in that order. */
static const char sql_copy[] =
    "COPY billing_rows (gpu_hours, row_hash, team, flavor, service, sku,"
    " location, currency, usage_start, usage_day, invoice_month, cost,"
    " credits, pricing_quantity, pricing_unit, row) FROM STDIN (FORMAT binary)";

static const char copy_header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

/* Send data[0..n) as COPY data, in pieces. */
static int put_copy(PGconn *pg, const char *data, size_t n)
{
  while (n > 0) {
    size_t piece = n > COPY_PIECE ? COPY_PIECE : n;
    if (PQputCopyData(pg, data, (int)piece) != 1)
      return -1;
    data += piece;
    n -= piece;
  }
  return 0;
}

/* Send what out holds as COPY data and empty it. */
static int send_staged(PGconn *pg, struct buf *out)
{
  int rc = put_copy(pg, out->p, out->len);

  out->len = 0;
  return rc;
}

/* Append data[0..n) to the COPY data staged in out, sending it in pieces
 * of about COPY_PIECE: rows sent in key order are seldom consecutive in
 * tuples, and a CopyData message of each would cost a send() every 8 KiB
 * (libpq's threshold) and a message each to the server. */
static int stage(PGconn *pg, struct buf *out, const char *data, size_t n)
{
  if (out->len + n > COPY_PIECE && out->len > 0 && send_staged(pg, out) != 0)
    return -1;
  if (n >= COPY_PIECE)
    return put_copy(pg, data, n);
  if (bb_reserve(out, n) != 0)
    return -1;
  memcpy(out->p + out->len, data, n);
  out->len += n;
  return 0;
}

/*
 * COPY the fresh rows among the n of b->uniq. Consecutive rows lie end to
 * end in tuples, so runs of them go out as they are; a row whose GPU-hours
 * PostgreSQL computed (merged's second column) gets its field count and
 * that field sent first (merged NULL: the batch was summed here, and the
 * GPU-hours are in b->gpu).
 */
enum gg_code bb_copy_rows(struct db_conn *c, struct db_billing_batch *b,
                          size_t n, PGresult *merged)
{
  static const char trailer[2] = {'\xff', '\xff'};
  unsigned char head[2 + 4 + NUMERIC_MAX];
  size_t i, run = 0, run_end = 0; /* the run of tuples not sent yet */
  enum gg_code code = GG_OK;
  int ok;
  PGresult *res;

  res = PQexec(c->pg, sql_copy);
  if (PQresultStatus(res) != PGRES_COPY_IN) {
    code = db_code_of(res, c->pg);
    bb_log_failure("copy", c->pg, res);
    PQclear(res);
    return code;
  }
  PQclear(res);
  b->out.len = 0;
  ok = stage(c->pg, &b->out, copy_header, sizeof(copy_header)) == 0;
  for (i = 0; ok && i < n; i++) {
    const struct brow *r = &b->rows[b->uniq[i]];
    if (!r->fresh)
      continue;
    if (r->divisor == 3600) {
      const char *gpu = r->gpu_row < 0 ? NULL
                        : merged       ? PQgetvalue(merged, r->gpu_row, 2)
                                       : b->gpu.p + r->gpu_row;
      int len = gpu ? db_numeric_binary(gpu, head + 6, sizeof(head) - 6) : -1;
      if (len < 0 ||
          stage(c->pg, &b->out, b->tuples.p + run, run_end - run) != 0) {
        ok = 0;
        break;
      }
      bb_put_be16(head, COPY_FIELDS);
      bb_put_be32(head + 2, (uint32_t)len);
      ok = stage(c->pg, &b->out, (const char *)head, 6 + (size_t)len) == 0;
      run = run_end = r->tuple;
    } else if (r->tuple != run_end) {
      if (stage(c->pg, &b->out, b->tuples.p + run, run_end - run) != 0) {
        ok = 0;
        break;
      }
      run = run_end = r->tuple;
    }
    run_end += r->tuple_len;
  }
  if (ok && (stage(c->pg, &b->out, b->tuples.p + run, run_end - run) != 0 ||
             stage(c->pg, &b->out, trailer, 2) != 0 ||
             send_staged(c->pg, &b->out) != 0))
    ok = 0;
  if (PQputCopyEnd(c->pg, ok ? NULL : "client failed") != 1)
    ok = 0;
  /* drain every result, keeping the verdict of the first failure */
  while ((res = PQgetResult(c->pg)) != NULL) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK && code == GG_OK) {
      code = db_code_of(res, c->pg);
      if (code != GG_CONFLICT)
        bb_log_failure("copy", c->pg, res);
    }
    PQclear(res);
  }
  if (!ok && code == GG_OK) {
    code = PQstatus(c->pg) == CONNECTION_OK ? GG_INTERNAL : GG_UNAVAILABLE;
    bb_log_failure("copy", c->pg, NULL);
  }
  return code;
}
