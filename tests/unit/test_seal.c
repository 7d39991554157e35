/*
 * test_seal.c — secrets sealed at rest: HKDF-SHA256 against RFC 5869's
 * vector, and a table of sealed texts opened with the right key and
 * session, another key, another session, tampered, truncated, extended,
 * in the clear, too large for the buffer; then every single-character
 * change of one sealed text is refused.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/seal.h"

Suite *seal_suite(void);

static void hex(const unsigned char *b, size_t n, char *out)
{
  size_t i;

  for (i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

START_TEST(hkdf_rfc5869)
{
  unsigned char ikm[22], key[SEAL_KEY_LEN], other[SEAL_KEY_LEN];
  char h[2 * SEAL_KEY_LEN + 1];

  /* RFC 5869 A.3: no salt, no info; the first 32 bytes of its OKM */
  memset(ikm, 0x0b, sizeof(ikm));
  ck_assert_int_eq(seal_derive_key(ikm, sizeof(ikm), "", key), 0);
  hex(key, sizeof(key), h);
  ck_assert_str_eq(
      h, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d");
  /* another purpose, another key; no secret, no key */
  ck_assert_int_eq(
      seal_derive_key(ikm, sizeof(ikm), "gpugate/refresh-token/v1", other), 0);
  ck_assert_mem_ne(key, other, sizeof(key));
  ck_assert_int_eq(seal_derive_key(ikm, 0, "x", other), -1);
  ck_assert_int_eq(seal_derive_key(NULL, 3, "x", other), -1);
}
END_TEST

enum change { NONE, FLIP_IV, FLIP_TEXT, FLIP_TAG, TRUNCATE, EXTEND, CLEAR };

struct open_case {
  const char *name;
  const char *plain;
  const char *aad_sealed, *aad_opened;
  bool other_key;
  enum change change;
  size_t outlen; /* 0: plenty */
  bool ok;
};

/* One base64url character of s at i changed to another valid one. */
static void flip(char *s, size_t i)
{
  s[i] = s[i] == 'A' ? 'B' : 'A';
}

START_TEST(open_table)
{
  static const struct open_case cases[] = {
      {"round trip", "rt-0123456789abcdef", "h1", "h1", false, NONE, 0, true},
      {"empty token", "", "h1", "h1", false, NONE, 0, true},
      {"long token", NULL, "h1", "h1", false, NONE, 0, true},
      {"another key", "rt-1", "h1", "h1", true, NONE, 0, false},
      {"another session", "rt-1", "h1", "h2", false, NONE, 0, false},
      {"IV changed", "rt-1", "h1", "h1", false, FLIP_IV, 0, false},
      {"ciphertext changed", "rt-1", "h1", "h1", false, FLIP_TEXT, 0, false},
      {"tag changed", "rt-1", "h1", "h1", false, FLIP_TAG, 0, false},
      {"truncated", "rt-1", "h1", "h1", false, TRUNCATE, 0, false},
      {"extended", "rt-1", "h1", "h1", false, EXTEND, 0, false},
      {"in the clear", "rt-1", "h1", "h1", false, CLEAR, 0, false},
      {"buffer too small", "rt-12345", "h1", "h1", false, NONE, 8, false},
      {"buffer just right", "rt-12345", "h1", "h1", false, NONE, 9, true},
  };
  unsigned char key[SEAL_KEY_LEN], wrong[SEAL_KEY_LEN];
  static char longtok[2048];
  char sealed[SEAL_TEXT_MAX(2048) + 8], out[2100];
  size_t i, pre = sizeof(SEAL_PREFIX) - 1;

  memset(longtok, 'r', sizeof(longtok) - 1);
  ck_assert_int_eq(
      seal_derive_key((const unsigned char *)"secret-one", 10, "t", key), 0);
  ck_assert_int_eq(
      seal_derive_key((const unsigned char *)"secret-two", 10, "t", wrong), 0);
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct open_case *c = &cases[i];
    const char *plain = c->plain ? c->plain : longtok;
    size_t n, outlen = c->outlen ? c->outlen : sizeof(out);
    int rc;

    ck_assert_msg(
        seal_text(key, c->aad_sealed, plain, sealed, sizeof(sealed)) == 0,
        "%s: seal", c->name);
    ck_assert_msg(!strncmp(sealed, SEAL_PREFIX, pre), "%s", c->name);
    ck_assert_msg(!strstr(sealed, plain) || !plain[0], "%s: in the clear",
                  c->name);
    n = strlen(sealed);
    switch (c->change) {
    case NONE:
      break;
    case FLIP_IV:
      flip(sealed, pre + 1);
      break;
    case FLIP_TEXT:
      flip(sealed, pre + 17);
      break;
    case FLIP_TAG:
      flip(sealed, n - 2);
      break;
    case TRUNCATE:
      sealed[n - 4] = '\0';
      break;
    case EXTEND:
      memcpy(sealed + n, "AAAA", 5);
      break;
    case CLEAR:
      snprintf(sealed, sizeof(sealed), "%s", plain);
      break;
    }
    memset(out, 'x', sizeof(out));
    rc = seal_open(c->other_key ? wrong : key, c->aad_opened, sealed, out,
                   outlen);
    ck_assert_msg((rc == 0) == c->ok, "%s: open gave %d", c->name, rc);
    if (c->ok)
      ck_assert_msg(!strcmp(out, plain), "%s: opened to another text", c->name);
    else
      ck_assert_msg(out[0] == '\0', "%s: a refused open left text", c->name);
  }
}
END_TEST

/* Each position of a sealed text changed to each other base64url
 * character: never opens (the prefix included). */
START_TEST(every_change_refused)
{
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.v";
  unsigned char key[SEAL_KEY_LEN];
  char sealed[SEAL_TEXT_MAX(64)], copy[sizeof(sealed)], out[128];
  size_t i, j, n, opened = 0;

  ck_assert_int_eq(
      seal_derive_key((const unsigned char *)"secret-one", 10, "t", key), 0);
  ck_assert_int_eq(seal_text(key, "h1", "rt-abc", sealed, sizeof(sealed)), 0);
  n = strlen(sealed);
  for (i = 0; i < n; i++)
    for (j = 0; j < sizeof(alphabet) - 1; j++) {
      if (alphabet[j] == sealed[i])
        continue;
      memcpy(copy, sealed, n + 1);
      copy[i] = alphabet[j];
      opened += seal_open(key, "h1", copy, out, sizeof(out)) == 0;
    }
  ck_assert_uint_eq(opened, 0);
  /* two seals of one text differ (a fresh IV each) */
  ck_assert_int_eq(seal_text(key, "h1", "rt-abc", copy, sizeof(copy)), 0);
  ck_assert_str_ne(copy, sealed);
}
END_TEST

Suite *seal_suite(void)
{
  Suite *s = suite_create("seal");
  TCase *tc = tcase_create("seal");

  tcase_add_test(tc, hkdf_rfc5869);
  tcase_add_test(tc, open_table);
  tcase_add_test(tc, every_change_refused);
  suite_add_tcase(s, tc);
  return s;
}
