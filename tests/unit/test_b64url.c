/*
 * test_b64url.c — base64url without padding as a table: RFC 4648's test
 * vectors both ways, canonical decoding (no padding, no other alphabet,
 * trailing bits zero, no impossible length), and bounded buffers.
 */
#include <check.h>
#include <string.h>

#include "lib/b64url.h"

Suite *b64url_suite(void);

struct pair {
  const char *bytes;
  const char *text;
};

/* RFC 4648 §10, in the URL alphabet and without padding, and bytes that
 * use the two characters base64url changes */
static const struct pair pairs[] = {
    {"", ""},
    {"f", "Zg"},
    {"fo", "Zm8"},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg"},
    {"fooba", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy"},
    {"\xfb\xff", "-_8"},
    {"\x3e\x3f", "Pj8"},
};

static const char *const bads[] = {
    "Zg==",  /* padding */
    "Zm9v=", /* padding */
    "Z",     /* no encoding is one character long */
    "Zm9vY", /* nor 4k + 1 */
    "Zh",    /* trailing bits not zero: "Zg" is the one encoding */
    "Zm9",   /* ditto: "Zm8" */
    "Zm+v",  /* base64's alphabet, not base64url's */
    "Zm/v",  "Zm v", "Zm\nv",
};

START_TEST(encodes)
{
  const struct pair *p = &pairs[_i];
  char out[32];
  size_t n = strlen(p->bytes);

  ck_assert_uint_eq(
      b64url_encode((const unsigned char *)p->bytes, n, out, sizeof(out)),
      strlen(p->text));
  ck_assert_str_eq(out, p->text);
}
END_TEST

START_TEST(decodes)
{
  const struct pair *p = &pairs[_i];
  unsigned char out[32];
  size_t n = 99;

  ck_assert_int_eq(
      b64url_decode(p->text, strlen(p->text), out, sizeof(out), &n), 0);
  ck_assert_uint_eq(n, strlen(p->bytes));
  ck_assert(memcmp(out, p->bytes, n) == 0);
}
END_TEST

START_TEST(rejects)
{
  unsigned char out[32];
  size_t n = 0;

  ck_assert_int_eq(
      b64url_decode(bads[_i], strlen(bads[_i]), out, sizeof(out), &n), -1);
}
END_TEST

START_TEST(bounded)
{
  unsigned char out[8];
  char text[8];
  size_t n = 0;

  /* "foobar" needs 6 bytes to decode into and 9 to encode into */
  ck_assert_int_eq(b64url_decode("Zm9vYmFy", 8, out, 5, &n), -1);
  ck_assert_int_eq(b64url_decode("Zm9vYmFy", 8, out, 6, &n), 0);
  ck_assert_uint_eq(b64url_encode((const unsigned char *)"foobar", 6, text, 8),
                    0);
  ck_assert_uint_eq(b64url_encode((const unsigned char *)"fooba", 5, text, 8),
                    7);
  ck_assert_str_eq(text, "Zm9vYmE");
  ck_assert_uint_eq(b64url_encode((const unsigned char *)"f", 1, text, 0), 0);
  ck_assert_int_eq(b64url_value('-'), 62);
  ck_assert_int_eq(b64url_value('_'), 63);
  ck_assert_int_eq(b64url_value('='), -1);
}
END_TEST

Suite *b64url_suite(void)
{
  Suite *s = suite_create("b64url");
  TCase *tc = tcase_create("core");

  tcase_add_loop_test(tc, encodes, 0, (int)(sizeof(pairs) / sizeof(pairs[0])));
  tcase_add_loop_test(tc, decodes, 0, (int)(sizeof(pairs) / sizeof(pairs[0])));
  tcase_add_loop_test(tc, rejects, 0, (int)(sizeof(bads) / sizeof(bads[0])));
  tcase_add_test(tc, bounded);
  suite_add_tcase(s, tc);
  return s;
}
