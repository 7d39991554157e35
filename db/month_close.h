/*
 * month_close.h — the SQL of closed invoice months: closing one, listing
 * the months with their state and totals, and the freshness every cost
 * report carries (data_through, and which of its months are closed).
 */
#ifndef GPUGATE_DB_MONTH_CLOSE_H
#define GPUGATE_DB_MONTH_CLOSE_H

#include <jansson.h>

#include "lib/err.h"

struct db_conn;

/*
 * Close month ("YYYY-MM", valid) on behalf of closed_by, recording when
 * and the data_through of the moment. It waits for loads under way (and
 * holds new ones back until it commits), so a row is either in the month
 * or a correction of it. *out is a new reference to the month as
 * db_months_list shows it. GG_CONFLICT (recorded on req) when it is closed
 * already; other failures recorded on req.
 */
enum gg_code db_month_close(struct db_conn *db, struct gg_err *err,
                            const char *month, const char *closed_by,
                            json_t **out);

/*
 * Every month that has costs or is closed, ascending: [{"month", "state",
 * "closed_at", "closed_by", "totals": [{"currency", "regular", "tax",
 * "adjustment", "rounding_error", "total", "corrections"}]}] where each
 * amount is net (cost + credits) of the rollups counted in that invoice
 * month, total = regular + tax + adjustment + rounding_error, and
 * corrections the part of total posted there for closed months. month
 * NULL: all; else only that one. *out is a new reference.
 */
enum gg_code db_months_list(struct db_conn *db, struct gg_err *err,
                            const char *month, json_t **out);

/*
 * The freshness of a report over the days from..to (valid YYYY-MM-DD):
 * *data_through the start of the latest usage hour loaded, no later than
 * the last hour of to, as "YYYY-MM-DDTHH:00:00Z" (JSON null when nothing
 * is loaded) — for a range ending in a closed month, as it was at the
 * close, so that the report keeps its bytes; *months [{"month", "closed"}]
 * for each month from..to covers. Both new references.
 */
enum gg_code db_costs_freshness(struct db_conn *db, struct gg_err *err,
                                const char *from, const char *to,
                                json_t **data_through, json_t **months);

#endif
