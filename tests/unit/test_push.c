/*
 * test_push.c — Pub/Sub push authentication and parsing as tables:
 * push bodies (handlers/notifications_parse.c) and gpugate's Batch job
 * names. The push tokens' verification is test_jwks.c's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/notifications_parse.h"

Suite *push_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---------------------------------------------------------- push bodies */

#define ENV(attrs)                                                             \
  "{\"message\": {\"attributes\": {" attrs "}, \"data\": \"e30=\", "           \
  "\"messageId\": \"1\"}, \"subscription\": \"s\"}"

static const struct {
  const char *body;
  enum push_kind kind;
  const char *name, *state; /* PUSH_JOB_STATE only */
} body_cases[] = {
    {ENV("\"Type\": \"JOB_STATE_CHANGED\", \"JobName\": \"projects/p/"
         "locations/us-central1/jobs/gpugate-j-0a1b-a1\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_JOB_STATE, "projects/p/locations/us-central1/jobs/gpugate-j-0a1b-a1",
     "RUNNING"},
    {ENV("\"JobName\": \"gpugate-j-1-a12-r2\", \"NewJobState\": "
         "\"SUCCEEDED\""),
     PUSH_JOB_STATE, "gpugate-j-1-a12-r2", "SUCCEEDED"},
    /* the poison of issue 11: a user's job named with gpugate's prefix */
    {ENV("\"JobName\": \"projects/p/locations/l/jobs/gpugate-x-abar\", "
         "\"NewJobState\": \"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-x-a9999999999\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"JobName\": \"my-training\", \"NewJobState\": \"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"Type\": \"TASK_STATE_CHANGED\", \"JobName\": \"gpugate-j-a1\""),
     PUSH_IGNORED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\""), PUSH_IGNORED, NULL, NULL},
    {"{\"message\": {\"data\": \"e30=\"}}", PUSH_IGNORED, NULL, NULL},
    {ENV("\"JobName\": 1, \"NewJobState\": \"RUNNING\""), PUSH_MALFORMED, NULL,
     NULL},
    {ENV("\"Type\": null, \"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": \"running\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": \"\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1\\u0000-a1\", \"NewJobState\": \"X\""),
     PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": {\"attributes\": [1]}}", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": 1}", PUSH_MALFORMED, NULL, NULL},
    {"{\"subscription\": \"x\"}", PUSH_MALFORMED, NULL, NULL},
    {"[]", PUSH_MALFORMED, NULL, NULL},
    {"", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": ", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": {}, \"message\": {}}", PUSH_MALFORMED, NULL, NULL},
};

START_TEST(parse_body)
{
  struct push_msg m;
  enum push_kind k = notifications_parse_push(body_cases[_i].body,
                                              strlen(body_cases[_i].body), &m);

  ck_assert_msg(k == body_cases[_i].kind && m.kind == k,
                "%s: kind %d, want %d (%s)", body_cases[_i].body, (int)k,
                (int)body_cases[_i].kind, m.why ? m.why : "");
  if (k == PUSH_JOB_STATE) {
    ck_assert_str_eq(m.job_name, body_cases[_i].name);
    ck_assert_str_eq(m.state, body_cases[_i].state);
  } else {
    ck_assert_ptr_nonnull(m.why);
  }
}
END_TEST

static const struct {
  const char *base;
  bool ours;
} name_cases[] = {
    {"gpugate-j-0a1b-a1", true},
    {"gpugate-nosuchjob-a1", true},
    {"gpugate-x-a123456789", true},
    {"gpugate-j-1-a2-r1", true},
    {"gpugate-j-1-a2-r9999", true},
    {"gpugate-x-abar", false},
    {"gpugate-x-a", false},
    {"gpugate-x-a1234567890", false}, /* past int range */
    {"gpugate-x-a1-r", false},
    {"gpugate-x-a1-r12345", false},
    {"gpugate-x-r1", false},
    {"gpugate--a1", false},
    {"gpugate-x--a1", false},
    {"gpugate-a1", false},
    {"gpugate-X-a1", false},
    {"gpugate-x_y-a1", false},
    {"other-x-a1", false},
    {"", false},
    {"gpugate-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-a1",
     false}, /* 64 characters */
};

START_TEST(gpugate_job_names)
{
  ck_assert_msg(notifications_is_gpugate_job(name_cases[_i].base) ==
                    name_cases[_i].ours,
                "\"%s\": want %d", name_cases[_i].base, name_cases[_i].ours);
}
END_TEST

Suite *push_suite(void)
{
  Suite *s = suite_create("push");
  TCase *tc = tcase_create("push");

  tcase_add_loop_test(tc, parse_body, 0, N_OF(body_cases));
  tcase_add_loop_test(tc, gpugate_job_names, 0, N_OF(name_cases));
  suite_add_tcase(s, tc);
  return s;
}
