/*
 * bq_fixture.h — the BigQuery emulator's billing export: a deterministic
 * table of days × rows per day, generated on demand (nothing is stored,
 * so a million rows cost no memory), with per-day revisions that change
 * every cost of the day and move its export_time, as Google's late
 * corrections do.
 *
 * Row i of day d: team team-a, team-b or team-c by i % 4 (i % 4 == 3: no
 * team label, "(unattributed)"), cost_type tax when i % 10 == 8,
 * adjustment when i % 10 == 9, else regular; cost in whole micro-dollars
 * (six decimals, exact); a credit of -cost/10 (rounded down to the
 * micro-dollar) on every third row. Revision r adds r × 0.001 to every
 * cost of the day and r hours to its export_time; a touch moves the
 * export_time by a minute and leaves the amounts.
 */
#ifndef GPUGATE_BQ_FIXTURE_H
#define GPUGATE_BQ_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#define BQ_FIX_MAX_DAYS 800
#define BQ_FIX_ACCOUNT "012345-6789AB-CDEF01" /* every row's account */

struct bq_fixture {
  int days;          /* usage days, from start on */
  long rows_per_day; /* rows of every day */
  long start;        /* days since 1970-01-01 of the first day */
  int revision[BQ_FIX_MAX_DAYS];
  int touched[BQ_FIX_MAX_DAYS]; /* export_time moved, amounts unchanged */
  /* 0, or the partition (days since start: the day the export wrote it)
   * of one late row of the day, its row rows_per_day, exported at 04:00:30
   * that day: a row for an old usage day in a recent partition */
  int late[BQ_FIX_MAX_DAYS];
};

/* Rows of day d: rows_per_day, and its late row. */
long bq_fixture_day_rows(const struct bq_fixture *f, int d);

/* Partition p (its rows exported on day start + p: day p - 1's rows and
 * the late rows written then): 0 when it holds no row, else 1 with its
 * MAX(export_time) (as bq_fixture_export_time) into et and the first
 * usage day it holds into first (11 bytes). */
int bq_fixture_partition(const struct bq_fixture *f, int p, char et[40],
                         char first[11]);

/* "YYYY-MM-DD" of day d into out (11 bytes). */
void bq_fixture_day(const struct bq_fixture *f, int d, char out[11]);

/* The day index of "YYYY-MM-DD", or -1 outside the fixture. */
int bq_fixture_day_index(const struct bq_fixture *f, const char *day);

/* The day's MAX(export_time) (its late row's too),
 * "YYYY-MM-DDTHH:MM:SS.000000Z", into out (40 bytes). */
void bq_fixture_export_time(const struct bq_fixture *f, int d, char out[40]);

/* The texts every row of day d repeats, made once per day or page. */
struct bq_fixture_daytext {
  char day[11];     /* "YYYY-MM-DD" */
  char et[40];      /* its rows' export_time, as FORMAT_TIMESTAMP %E6S
                       writes it */
  char late_et[40]; /* its late row's, or "" */
  char et_json[40]; /* the same as TO_JSON_STRING writes it */
  char month[7];    /* its invoice month, "YYYYMM" */
};

void bq_fixture_daytext(const struct bq_fixture *f, int d,
                        struct bq_fixture_daytext *t);

/* Row i of day d (t: its texts) as the export's JSON, as BigQuery's
 * TO_JSON_STRING writes the row with money cast to NUMERIC (ZetaSQL
 * json_format.cc: a NUMERIC with a fraction quoted, NULL fields present,
 * TIMESTAMP at its shortest scale; tests/emulator/README.md) into out (cap
 * bytes; no NUL): its length, 0 when it does not fit. escaped: as the text of a
 * JSON string (each quote preceded by a backslash; the fixture's values hold no
 * other byte to escape), as a query reply carries it. */
size_t bq_fixture_row(const struct bq_fixture *f,
                      const struct bq_fixture_daytext *t, int d, long i,
                      bool escaped, char *out, size_t cap);

/* The same row as BigQuery's own NDJSON export writes it (EXPORT DATA, bq
 * extract): TIMESTAMP as "2026-08-01 04:00:00 UTC", the FLOAT64 money as
 * numbers, NULL fields left out. */
/* Row i of day d as a page of the rows query carries it, the cell
 * {"f":[{"v":"…"}]} around bq_fixture_row's escaped text, into out (cap
 * bytes; no NUL): its length, 0 when it does not fit. */
size_t bq_fixture_cell(const struct bq_fixture *f,
                       const struct bq_fixture_daytext *t, int d, long i,
                       char *out, size_t cap);

size_t bq_fixture_row_export(const struct bq_fixture *f,
                             const struct bq_fixture_daytext *t, int d, long i,
                             char *out, size_t cap);

/* Σ cost and Σ credits of the first rows rows of day d (its late row is
 * row rows_per_day), in micro-dollars. */
void bq_fixture_day_sums(const struct bq_fixture *f, int d, long rows,
                         long long *cost, long long *credits);

/* Σ cost and Σ credits of the whole fixture, in micro-dollars, for team
 * (NULL: all teams; "(unattributed)" for rows without the label). */
void bq_fixture_totals(const struct bq_fixture *f, const char *team,
                       long long *cost, long long *credits);

#endif
