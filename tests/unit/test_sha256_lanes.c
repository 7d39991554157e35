/*
 * test_sha256_lanes.c — SHA-256 in sixteen lanes (AVX-512) and in eight
 * (AVX2) against OpenSSL, one message at a time: lengths at every padding
 * edge (55, 56, 63, 64, 119, 120 bytes...), lanes of different block
 * counts side by side, a count that is not a multiple of sixteen or of
 * eight, and each path forced in turn (a path the CPU lacks is the
 * narrower one it has, said once on stderr).
 */
#include <check.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sha256_lanes.h"

#define N_MSG 61 /* three groups of sixteen, one of eight, five alone */
#define MAX_LEN 1200

static void reference(const unsigned char *m, size_t n, unsigned char *out)
{
  unsigned int hn = 0;

  ck_assert_int_eq(EVP_Digest(m, n, out, &hn, EVP_sha256(), NULL), 1);
  ck_assert_uint_eq(hn, SHA256_LEN);
}

/* case _i: lengths from a table of edges or random, bytes random */
static void check_case(int seed, enum sha256_path path)
{
  static const size_t edges[] = {0,  1,   3,   55,  56,  57,  63,  64,
                                 65, 119, 120, 127, 128, 129, 680, 1199};
  static unsigned char data[N_MSG][MAX_LEN];
  const unsigned char *msg[N_MSG];
  size_t len[N_MSG], i, j;
  unsigned char got[N_MSG][SHA256_LEN], want[SHA256_LEN];
  unsigned x = 2166136261u ^ (unsigned)seed;

  for (i = 0; i < N_MSG; i++) {
    x = x * 1103515245u + 12345u;
    len[i] =
        seed % 2 == 0 ? edges[(i + (size_t)seed) % 16] : (x >> 8) % MAX_LEN;
    for (j = 0; j < len[i]; j++) {
      x = x * 1103515245u + 12345u;
      data[i][j] = (unsigned char)(x >> 16);
    }
    msg[i] = data[i];
  }
  sha256_lanes_limit(path);
  if (seed == 0 && sha256_lanes_path() != path)
    fprintf(stderr, "sha256_lanes: this CPU lacks path %d, %d tested\n",
            (int)path, (int)sha256_lanes_path());
  ck_assert_int_eq(sha256_lanes(N_MSG, msg, len, got), 0);
  sha256_lanes_limit(SHA256_AVX512);
  for (i = 0; i < N_MSG; i++) {
    reference(msg[i], len[i], want);
    ck_assert_msg(!memcmp(got[i], want, SHA256_LEN),
                  "seed %d message %zu (%zu bytes) differs", seed, i, len[i]);
  }
}

START_TEST(sixteen_lanes_match_openssl)
{
  check_case(_i, SHA256_AVX512);
}
END_TEST

START_TEST(eight_lanes_match_openssl)
{
  check_case(_i, SHA256_AVX2);
}
END_TEST

START_TEST(portable_matches_openssl)
{
  check_case(_i, SHA256_OPENSSL);
}
END_TEST

/* the known answer: SHA-256("abc") in every lane */
START_TEST(known_answer)
{
  static const unsigned char abc_hash[SHA256_LEN] = {
      0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
      0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
      0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  const unsigned char *msg[SHA256_LANES];
  size_t len[SHA256_LANES], i;
  unsigned char got[SHA256_LANES][SHA256_LEN];

  for (i = 0; i < SHA256_LANES; i++) {
    msg[i] = (const unsigned char *)"abc";
    len[i] = 3;
  }
  ck_assert_int_eq(sha256_lanes(SHA256_LANES, msg, len, got), 0);
  for (i = 0; i < SHA256_LANES; i++)
    ck_assert(!memcmp(got[i], abc_hash, SHA256_LEN));
}
END_TEST

Suite *sha256_lanes_suite(void);

Suite *sha256_lanes_suite(void)
{
  Suite *s = suite_create("sha256_lanes");
  TCase *tc = tcase_create("core");

  tcase_add_test(tc, known_answer);
  tcase_add_loop_test(tc, sixteen_lanes_match_openssl, 0, 64);
  tcase_add_loop_test(tc, eight_lanes_match_openssl, 0, 64);
  tcase_add_loop_test(tc, portable_matches_openssl, 0, 4);
  suite_add_tcase(s, tc);
  return s;
}
