/*
 * sha256_lanes.c — SHA-256 of sixteen messages at once in AVX-512's lanes,
 * or eight in AVX2's (see sha256_lanes.h). The rounds are FIPS 180-4's,
 * written once for 32-bit words side by side (lib/sha256_rounds.h); each
 * lane walks its own message's blocks, its padding made in a two-block
 * tail. Lanes whose message has fewer blocks go on computing and keep their
 * state: a billing page's rows differ by a few bytes, so that little is
 * wasted.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/sha256_lanes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define LANES_X86 1
#include <immintrin.h>
#endif

static atomic_int limit = SHA256_AVX512;

void sha256_lanes_limit(enum sha256_path max)
{
  atomic_store(&limit, (int)max);
}

static int one(const unsigned char *msg, size_t len, unsigned char *out)
{
  unsigned int n = 0;

  return EVP_Digest(msg, len, out, &n, EVP_sha256(), NULL) == 1 &&
                 n == SHA256_LEN
             ? 0
             : -1;
}

#ifdef LANES_X86

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

/* The widest path the CPU has (asked once; a race only asks twice). */
static enum sha256_path cpu_path(void)
{
  static int known = -1;

  if (known < 0)
    known = __builtin_cpu_supports("avx512f") ? SHA256_AVX512
            : __builtin_cpu_supports("avx2")  ? SHA256_AVX2
                                              : SHA256_OPENSSL;
  return (enum sha256_path)known;
}

static uint32_t be32(const unsigned char *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* One lane's message: its whole blocks in place, then its padding (the
 * last bytes, 0x80, zeros, the length in bits) in one or two blocks. */
struct lane {
  const unsigned char *msg;
  size_t full, blocks;
  unsigned char tail[128];
};

static void lane_init(struct lane *l, const unsigned char *msg, size_t len)
{
  size_t rest = len % 64, pad = rest < 56 ? 64 : 128;
  uint64_t bits = (uint64_t)len * 8;
  int i;

  l->msg = msg;
  l->full = len / 64;
  memset(l->tail, 0, sizeof(l->tail));
  if (rest)
    memcpy(l->tail, msg + 64 * l->full, rest);
  l->tail[rest] = 0x80;
  for (i = 0; i < 8; i++)
    l->tail[pad - 1 - (size_t)i] = (unsigned char)(bits >> (8 * i));
  l->blocks = l->full + pad / 64;
}

static const unsigned char *lane_block(const struct lane *l, size_t b)
{
  static const unsigned char idle[64];

  if (b < l->full)
    return l->msg + 64 * b;
  if (b < l->blocks)
    return l->tail + 64 * (b - l->full);
  return idle; /* done: computed, and thrown away */
}

/* eight lanes: AVX2 */
#define ROUNDS_NAME eight
#define ROUNDS_TARGET __attribute__((target("avx2")))
#define ROUNDS_LANES 8
#define VEC __m256i
#define V_SET1(x) _mm256_set1_epi32(x)
#define V_ADD(x, y) _mm256_add_epi32((x), (y))
#define V_SRLI(x, n) _mm256_srli_epi32((x), (n))
#define V_ROTR(x, n)                                                           \
  _mm256_or_si256(_mm256_srli_epi32((x), (n)), _mm256_slli_epi32((x), 32 - (n)))
#define V_XOR3(x, y, z) _mm256_xor_si256(_mm256_xor_si256((x), (y)), (z))
#define V_CH(e, f, g)                                                          \
  _mm256_xor_si256(_mm256_and_si256((e), (f)), _mm256_andnot_si256((e), (g)))
#define V_MAJ(a, b, c)                                                         \
  V_XOR3(_mm256_and_si256((a), (b)), _mm256_and_si256((a), (c)),               \
         _mm256_and_si256((b), (c)))
#define V_WORDS(p, o)                                                          \
  _mm256_setr_epi32((int)be32((p)[0] + (o)), (int)be32((p)[1] + (o)),          \
                    (int)be32((p)[2] + (o)), (int)be32((p)[3] + (o)),          \
                    (int)be32((p)[4] + (o)), (int)be32((p)[5] + (o)),          \
                    (int)be32((p)[6] + (o)), (int)be32((p)[7] + (o)))
#define LIVE8(live)                                                            \
  _mm256_cmpeq_epi32(                                                          \
      _mm256_and_si256(_mm256_set1_epi32((int)(live)),                         \
                       _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),        \
      _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128))
#define V_KEEP(st, x, live)                                                    \
  _mm256_blendv_epi8((st), _mm256_add_epi32((st), (x)), LIVE8(live))
#define V_STORE(v, x) _mm256_storeu_si256((__m256i *)(void *)(v), (x))
#include "lib/sha256_rounds.h"
#undef ROUNDS_NAME
#undef ROUNDS_TARGET
#undef ROUNDS_LANES
#undef VEC
#undef V_SET1
#undef V_ADD
#undef V_SRLI
#undef V_ROTR
#undef V_XOR3
#undef V_CH
#undef V_MAJ
#undef V_WORDS
#undef V_KEEP
#undef V_STORE

/* sixteen lanes: AVX-512, whose rotations and three-input logic
 * (VPRORD, VPTERNLOGD: 0x96 parity, 0xCA choose, 0xE8 majority) are one
 * instruction each */
#define ROUNDS_NAME sixteen
#define ROUNDS_TARGET __attribute__((target("avx512f")))
#define ROUNDS_LANES 16
#define VEC __m512i
#define V_SET1(x) _mm512_set1_epi32(x)
#define V_ADD(x, y) _mm512_add_epi32((x), (y))
#define V_SRLI(x, n) _mm512_srli_epi32((x), (n))
#define V_ROTR(x, n) _mm512_ror_epi32((x), (n))
#define V_XOR3(x, y, z) _mm512_ternarylogic_epi32((x), (y), (z), 0x96)
#define V_CH(e, f, g) _mm512_ternarylogic_epi32((e), (f), (g), 0xCA)
#define V_MAJ(a, b, c) _mm512_ternarylogic_epi32((a), (b), (c), 0xE8)
#define V_WORDS(p, o)                                                          \
  _mm512_setr_epi32((int)be32((p)[0] + (o)), (int)be32((p)[1] + (o)),          \
                    (int)be32((p)[2] + (o)), (int)be32((p)[3] + (o)),          \
                    (int)be32((p)[4] + (o)), (int)be32((p)[5] + (o)),          \
                    (int)be32((p)[6] + (o)), (int)be32((p)[7] + (o)),          \
                    (int)be32((p)[8] + (o)), (int)be32((p)[9] + (o)),          \
                    (int)be32((p)[10] + (o)), (int)be32((p)[11] + (o)),        \
                    (int)be32((p)[12] + (o)), (int)be32((p)[13] + (o)),        \
                    (int)be32((p)[14] + (o)), (int)be32((p)[15] + (o)))
#define V_KEEP(st, x, live)                                                    \
  _mm512_mask_add_epi32((st), (__mmask16)(live), (st), (x))
#define V_STORE(v, x) _mm512_storeu_si512((void *)(v), (x))
#include "lib/sha256_rounds.h"

enum sha256_path sha256_lanes_path(void)
{
  enum sha256_path cpu = cpu_path(),
                   max = (enum sha256_path)atomic_load(&limit);

  return cpu < max ? cpu : max;
}

#else

enum sha256_path sha256_lanes_path(void)
{
  return SHA256_OPENSSL;
}

#endif

int sha256_lanes(size_t n, const unsigned char *const *msg, const size_t *len,
                 unsigned char (*out)[SHA256_LEN])
{
  size_t i = 0;

#ifdef LANES_X86
  enum sha256_path path = sha256_lanes_path();

  if (path >= SHA256_AVX512)
    for (; i + 16 <= n; i += 16)
      sixteen(msg + i, len + i, out + i);
  if (path >= SHA256_AVX2)
    for (; i + 8 <= n; i += 8)
      eight(msg + i, len + i, out + i);
#endif
  for (; i < n; i++) /* the last few, or no AVX2 */
    if (one(msg[i], len[i], out[i]) != 0)
      return -1;
  return 0;
}
