/*
 * test_logging.c — a job's logs as tables: the Cloud Logging filter gpugate
 * writes (gcp/logging.c) for each combination of its parts, refused
 * queries, LogSeverity ranks, RFC 3339 instants to the nanosecond, and what
 * the API shows of a LogEntry (text, task, attempt); then the Cloud Logging
 * emulator's filter parser (tests/emulator/log_filter.c): every filter
 * gpugate writes parses and picks exactly the entries meant, and filters
 * outside its subset are refused.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gcp/logging.h"
#include "tests/emulator/log_filter.h"

Suite *logging_suite(void);

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define LOGS                                                                   \
  "logName=(\"projects/p1/logs/batch_task_logs\" OR "                          \
  "\"projects/p1/logs/batch_agent_logs\")"

static const char *const one[] = {"j-abc"};
static const char *const two[] = {"j-abc", "J-Up\"per"};

static const struct {
  struct logging_query q;
  const char *want;
} filters[] = {
    {{"p1", NULL, one, 1, NULL, -1, NULL},
     LOGS " AND (labels.\"gpugate-job\"=\"j-abc\")"},
    {{"p1", "", one, 1, "", -1, ""},
     LOGS " AND (labels.\"gpugate-job\"=\"j-abc\")"},
    /* the label values as gcp/batch_job.c writes them: lower case, no quote */
    {{"p1", "Prod", two, 2, NULL, -1, NULL},
     LOGS " AND (labels.\"gpugate-job\"=\"j-abc\" OR "
          "labels.\"gpugate-job\"=\"j-up_per\") AND "
          "labels.\"gpugate-deployment\"=\"prod\""},
    {{"p1", NULL, one, 1, "2026-11-29T00:00:00.5Z", 3, "warning"},
     LOGS " AND (labels.\"gpugate-job\"=\"j-abc\") AND "
          "timestamp>=\"2026-11-29T00:00:00.5Z\" AND "
          "labels.task_id:\"-group0-3/\" AND severity>=WARNING"},
    {{"p1", NULL, one, 1, NULL, 0, "DEFAULT"},
     LOGS " AND (labels.\"gpugate-job\"=\"j-abc\") AND "
          "labels.task_id:\"-group0-0/\" AND severity>=DEFAULT"},
};

START_TEST(writes_filters)
{
  char buf[LOGGING_FILTER_MAX + 1], err[256];
  struct log_filter *f;

  ck_assert_int_eq(logging_filter(&filters[_i].q, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, filters[_i].want);
  /* and the emulator reads every one of them */
  f = log_filter_parse(buf, err, sizeof(err));
  ck_assert_msg(f != NULL, "%s: %s", buf, err);
  log_filter_free(f);
}
END_TEST

START_TEST(refuses_queries)
{
  static const char *const none[] = {""};
  static const struct logging_query bad[] = {
      {NULL, NULL, one, 1, NULL, -1, NULL},   /* no project */
      {"", NULL, one, 1, NULL, -1, NULL},     /* empty project */
      {"p1", NULL, one, 0, NULL, -1, NULL},   /* no job */
      {"p1", NULL, none, 1, NULL, -1, NULL},  /* an empty job id */
      {"p1", NULL, one, 1, NULL, -1, "LOUD"}, /* no such severity */
  };
  char buf[LOGGING_FILTER_MAX + 1], small[40];
  size_t i;

  for (i = 0; i < N_OF(bad); i++)
    ck_assert_msg(logging_filter(&bad[i], buf, sizeof(buf)) == -1, "case %zu",
                  i);
  /* a filter that does not fit is refused, never cut */
  ck_assert_int_eq(logging_filter(&filters[0].q, small, sizeof(small)), -1);
}
END_TEST

START_TEST(severity_ranks)
{
  static const struct {
    const char *name;
    int rank;
  } cases[] = {{"DEFAULT", 0},    {"debug", 100},   {"INFO", 200},
               {"Notice", 300},   {"WARNING", 400}, {"ERROR", 500},
               {"CRITICAL", 600}, {"ALERT", 700},   {"EMERGENCY", 800},
               {"WARN", -1},      {"", -1},         {NULL, -1}};
  size_t i;

  for (i = 0; i < N_OF(cases); i++) {
    ck_assert_int_eq(logging_severity_rank(cases[i].name), cases[i].rank);
    if (cases[i].name)
      ck_assert_int_eq(log_severity_rank(cases[i].name), cases[i].rank);
  }
}
END_TEST

START_TEST(instants)
{
  static const struct {
    const char *in;
    int64_t ns; /* -1: refused */
  } cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2026-11-29T00:13:08.034065769Z", 1795911188034065769LL},
      {"2026-11-29T00:13:08.5Z", 1795911188500000000LL},
      {"2026-11-29T01:13:08.5+01:00", 1795911188500000000LL},
      {"2026-11-28T23:13:08.5-01:00", 1795911188500000000LL},
      {"2026-11-29T00:13:08.0340657691Z", 1795911188034065769LL}, /* cut */
      {"2026-11-29T00:13:08", -1},
      {"2026-11-29 00:13:08Z", -1},
      {"2026-11-29T00:13:08.Z", -1},
      {"2026-11-29T00:13Z", -1},
      {"yesterday", -1},
  };
  size_t i;

  for (i = 0; i < N_OF(cases); i++) {
    int64_t ns = -42, ens = -42;
    int rc = logging_time_ns(cases[i].in, &ns);
    int erc = log_time_ns(cases[i].in, &ens);
    if (cases[i].ns < 0) {
      ck_assert_msg(rc == -1, "%s accepted", cases[i].in);
      ck_assert_msg(erc == -1, "%s accepted by the emulator", cases[i].in);
    } else {
      ck_assert_msg(rc == 0 && ns == cases[i].ns, "%s: %lld", cases[i].in,
                    (long long)ns);
      ck_assert_msg(erc == 0 && ens == cases[i].ns, "%s: emulator %lld",
                    cases[i].in, (long long)ens);
    }
  }
}
END_TEST

#define GROUP(job)                                                             \
  "projects/p1/locations/us-central1/jobs/" job "/taskGroups/group0"

static const struct {
  const char *entry;
  const char *want; /* the view, GG_JSON_DUMP-like (compact, in order) */
  const char *job;  /* its gpugate-job label, NULL when none */
} views[] = {
    {"{\"timestamp\": \"2026-11-29T00:00:01Z\", \"severity\": \"INFO\", "
     "\"textPayload\": \"step 1\", \"labels\": {\"gpugate-job\": \"j-1\", "
     "\"task_group_name\": \"" GROUP(
         "gpugate-j-1-a1") "\", \"task_id\": "
                           "\"task/u1-group0-0/0/0\"}}",
     "{\"time\":\"2026-11-29T00:00:01Z\",\"severity\":\"INFO\",\"task\":0,"
     "\"attempt\":1,\"retry\":0,\"text\":\"step 1\"}",
     "j-1"},
    /* a race copy of attempt 12, task 7, run again by Batch (retry 1) */
    {"{\"timestamp\": \"t\", \"severity\": \"ERROR\", \"textPayload\": "
     "\"boom\", \"labels\": {\"gpugate-job\": \"j-1\", \"task_group_name\": "
     "\"" GROUP("gpugate-j-1-a12-r2") "\", \"task_id\": "
                                      "\"task/u1-group0-7/1/0\"}}",
     "{\"time\":\"t\",\"severity\":\"ERROR\",\"task\":7,\"attempt\":12,"
     "\"retry\":1,\"text\":\"boom\"}",
     "j-1"},
    /* the agent's entry: no task; a job id with -a inside */
    {"{\"timestamp\": \"t\", \"textPayload\": \"started\", \"labels\": "
     "{\"gpugate-job\": \"j-a2\", \"task_group_name\": "
     "\"" GROUP("gpugate-j-a2-a3") "\"}}",
     "{\"time\":\"t\",\"severity\":\"DEFAULT\",\"task\":null,\"attempt\":3,"
     "\"retry\":null,\"text\":\"started\"}",
     "j-a2"},
    /* jsonPayload: its message, else the payload itself */
    {"{\"timestamp\": \"t\", \"severity\": \"WARNING\", \"jsonPayload\": "
     "{\"message\": \"hot\", \"gpu\": 0}}",
     "{\"time\":\"t\",\"severity\":\"WARNING\",\"task\":null,\"attempt\":null,"
     "\"retry\":null,\"text\":\"hot\"}",
     NULL},
    {"{\"timestamp\": \"t\", \"jsonPayload\": {\"b\": 1, \"a\": \"x\"}}",
     "{\"time\":\"t\",\"severity\":\"DEFAULT\",\"task\":null,\"attempt\":null,"
     "\"retry\":null,\"text\":\"{\\\"a\\\":\\\"x\\\",\\\"b\\\":1}\"}",
     NULL},
    /* names that are not Batch's: no task, no attempt */
    {"{\"timestamp\": \"t\", \"textPayload\": \"x\", \"labels\": "
     "{\"task_group_name\": \"projects/p/jobs/other/taskGroups/g\", "
     "\"task_id\": \"task/u-group0-x/0/0\"}}",
     "{\"time\":\"t\",\"severity\":\"DEFAULT\",\"task\":null,\"attempt\":null,"
     "\"retry\":null,\"text\":\"x\"}",
     NULL},
    /* Batch's third run of task 12 (maxRetryCount 2); a retry that is not
     * a number */
    {"{\"timestamp\": \"t\", \"textPayload\": \"r\", \"labels\": "
     "{\"task_group_name\": \"" GROUP(
         "gpugate-j-2-a1") "\", "
                           "\"task_id\": \"task/u-group0-12/2/0\"}}",
     "{\"time\":\"t\",\"severity\":\"DEFAULT\",\"task\":12,\"attempt\":1,"
     "\"retry\":2,\"text\":\"r\"}",
     NULL},
    {"{\"timestamp\": \"t\", \"textPayload\": \"r\", \"labels\": "
     "{\"task_id\": \"task/u-group0-3/x/0\"}}",
     "{\"time\":\"t\",\"severity\":\"DEFAULT\",\"task\":3,\"attempt\":null,"
     "\"retry\":null,\"text\":\"r\"}",
     NULL},
};

START_TEST(entry_views)
{
  json_t *e = json_loads(views[_i].entry, 0, NULL), *v;
  const char *job = "unset";
  char *text;

  ck_assert_ptr_nonnull(e);
  v = logging_entry_view(e, &job);
  ck_assert_ptr_nonnull(v);
  text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ck_assert_str_eq(text, views[_i].want);
  if (views[_i].job)
    ck_assert_str_eq(job, views[_i].job);
  else
    ck_assert_ptr_null(job);
  free(text);
  json_decref(v);
  json_decref(e);
}
END_TEST

/* The emulator picks what each of gpugate's filters means. */
START_TEST(emulator_matches)
{
  static const char *const entries[] = {
      /* 0: job j-abc, task 0, INFO */
      "{\"logName\": \"projects/p1/logs/batch_task_logs\", \"timestamp\": "
      "\"2026-11-29T00:00:01Z\", \"severity\": \"INFO\", \"labels\": "
      "{\"gpugate-job\": \"j-abc\", \"task_id\": \"task/u-group0-0/0/0\"}}",
      /* 1: job j-abc, task 3, ERROR, later */
      "{\"logName\": \"projects/p1/logs/batch_task_logs\", \"timestamp\": "
      "\"2026-11-29T00:00:02Z\", \"severity\": \"ERROR\", \"labels\": "
      "{\"gpugate-job\": \"j-abc\", \"task_id\": \"task/u-group0-3/0/0\"}}",
      /* 2: job j-abc, task 13 (not task 3), WARNING */
      "{\"logName\": \"projects/p1/logs/batch_task_logs\", \"timestamp\": "
      "\"2026-11-29T00:00:03Z\", \"severity\": \"WARNING\", \"labels\": "
      "{\"gpugate-job\": \"j-abc\", \"task_id\": \"task/u-group0-13/0/0\"}}",
      /* 3: the agent's, no severity */
      "{\"logName\": \"projects/p1/logs/batch_agent_logs\", \"timestamp\": "
      "\"2026-11-29T00:00:00Z\", \"labels\": {\"gpugate-job\": \"j-abc\"}}",
      /* 4: another job */
      "{\"logName\": \"projects/p1/logs/batch_task_logs\", \"timestamp\": "
      "\"2026-11-29T00:00:01Z\", \"severity\": \"INFO\", \"labels\": "
      "{\"gpugate-job\": \"j-other\"}}",
      /* 5: another log */
      "{\"logName\": \"projects/p1/logs/syslog\", \"timestamp\": "
      "\"2026-11-29T00:00:01Z\", \"labels\": {\"gpugate-job\": \"j-abc\"}}",
  };
  static const struct {
    struct logging_query q;
    const char *want; /* '1' per entry picked */
  } cases[] = {
      {{"p1", NULL, one, 1, NULL, -1, NULL}, "111100"},
      {{"p1", NULL, two, 2, NULL, -1, NULL}, "111100"},
      {{"p1", NULL, one, 1, "2026-11-29T00:00:02Z", -1, NULL}, "011000"},
      {{"p1", NULL, one, 1, NULL, 3, NULL}, "010000"},
      {{"p1", NULL, one, 1, NULL, -1, "WARNING"}, "011000"},
      {{"p1", "prod", one, 1, NULL, -1, NULL}, "000000"},
  };
  char buf[LOGGING_FILTER_MAX + 1], err[256], got[N_OF(entries) + 1];
  size_t i, k;

  for (i = 0; i < N_OF(cases); i++) {
    struct log_filter *f;
    ck_assert_int_eq(logging_filter(&cases[i].q, buf, sizeof(buf)), 0);
    f = log_filter_parse(buf, err, sizeof(err));
    ck_assert_msg(f != NULL, "%s", err);
    for (k = 0; k < N_OF(entries); k++) {
      json_t *e = json_loads(entries[k], 0, NULL);
      got[k] = log_filter_match(f, e) ? '1' : '0';
      json_decref(e);
    }
    got[N_OF(entries)] = '\0';
    ck_assert_msg(!strcmp(got, cases[i].want), "case %zu (%s): %s, want %s", i,
                  buf, got, cases[i].want);
    log_filter_free(f);
  }
}
END_TEST

START_TEST(emulator_refuses)
{
  static const char *const bads[] = {
      "resource.type=\"generic_task\"",   /* a field outside the subset */
      "labels.x!=\"a\"",                  /* an operator outside it */
      "labels.x=\"a",                     /* unterminated */
      "labels.x=\"a\" OR labels.y=\"b\"", /* OR outside parentheses */
      "(labels.x=\"a\"",
      "severity>=LOUD",
      "timestamp>=\"yesterday\"",
      "labels.x=\"a\" labels.y=\"b\"", /* implicit AND: not gpugate's */
  };
  char err[256];
  size_t i;

  for (i = 0; i < N_OF(bads); i++) {
    struct log_filter *f = log_filter_parse(bads[i], err, sizeof(err));
    ck_assert_msg(f == NULL, "%s: accepted", bads[i]);
    ck_assert_msg(strstr(err, "Unparseable filter") != NULL, "%s: %s", bads[i],
                  err);
  }
}
END_TEST

Suite *logging_suite(void)
{
  Suite *s = suite_create("logging");
  TCase *tc = tcase_create("filters");

  tcase_add_loop_test(tc, writes_filters, 0, (int)N_OF(filters));
  tcase_add_test(tc, refuses_queries);
  tcase_add_test(tc, severity_ranks);
  tcase_add_test(tc, instants);
  tcase_add_loop_test(tc, entry_views, 0, (int)N_OF(views));
  tcase_add_test(tc, emulator_matches);
  tcase_add_test(tc, emulator_refuses);
  suite_add_tcase(s, tc);
  return s;
}
