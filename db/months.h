/*
 * months.h — invoice months as text ("YYYY-MM") and where a billing row is
 * reported once months can be closed: pure functions, shared by the loader
 * (db/billing.c), the month close (db/month_close.c) and the tests.
 */
#ifndef GPUGATE_DB_MONTHS_H
#define GPUGATE_DB_MONTHS_H

#include <stdbool.h>
#include <stddef.h>

#define DB_MONTH_LEN 8 /* "YYYY-MM" and its NUL */

/* Whether s is a month "YYYY-MM" (year 0001..9999, month 01..12). */
bool db_month_valid(const char *s);

/* The month after m (valid) into out; "9999-12" has none: -1. */
int db_month_next(const char *m, char out[DB_MONTH_LEN]);

/*
 * The day a row is reported on (the day reports select it by), given the
 * month it is reported in (db_month_attribute): its usage day, unless that
 * lies in a closed month other than this one (a correction, or a row
 * invoiced in an open month for usage in a closed one): then the first day
 * of the month it is reported in, so that a closed month's reports answer
 * the same bytes ever after. usage_day and month valid; out: 11 bytes.
 */
void db_month_report_day(const char *usage_day, const char *month,
                         const char (*closed)[DB_MONTH_LEN], size_t n,
                         char out[11]);

/*
 * The invoice month ("YYYY-MM") at instant now: Cloud Billing's invoice
 * months are US/Pacific months (PST, UTC-8; PDT, UTC-7 from the second
 * Sunday of March, 02:00 local, to the first Sunday of November, 02:00
 * local). A month may be closed only once this has moved past it. Pure.
 */
void db_month_pacific(long long now, char out[DB_MONTH_LEN]);

/*
 * Where a row is reported, given the closed months (closed[0..n), valid
 * and in ascending order). Its own month is invoice_month ("YYYY-MM") or,
 * when that is "", the month of usage_day ("YYYY-MM-DD"). When its own
 * month is open, the row is regular there (*correction false), whatever
 * its usage month: a row invoiced in open September for usage in closed
 * August changes no issued invoice. When its own month is closed, it came
 * late for an issued invoice: a correction (*correction true) reported in
 * the first month from its own on that is not closed. Returns 0, or -1 on
 * malformed input (or no month left before 10000).
 */
int db_month_attribute(const char *usage_day, const char *invoice_month,
                       const char (*closed)[DB_MONTH_LEN], size_t n,
                       char month[DB_MONTH_LEN], bool *correction);

#endif
