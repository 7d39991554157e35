/*
 * sha256_lanes.c — SHA-256 of eight messages at once in AVX2's lanes (see
 * sha256_lanes.h). The rounds are FIPS 180-4's, written once for eight
 * 32-bit words side by side; each lane walks its own message's blocks, its
 * padding made in a two-block tail. Lanes whose message has fewer blocks
 * go on computing and keep their state: a billing page's rows differ by a
 * few bytes, so that little is wasted.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/sha256_lanes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define LANES_AVX2 1
#include <immintrin.h>
#endif

static atomic_bool force_portable;

void sha256_lanes_force_portable(bool portable)
{
  atomic_store(&force_portable, portable);
}

static int one(const unsigned char *msg, size_t len, unsigned char *out)
{
  unsigned int n = 0;

  return EVP_Digest(msg, len, out, &n, EVP_sha256(), NULL) == 1 &&
                 n == SHA256_LEN
             ? 0
             : -1;
}

#ifdef LANES_AVX2

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

static bool have_avx2(void)
{
  static int known; /* 0 unknown, 1 yes, 2 no; a race only asks twice */

  if (!known)
    known = __builtin_cpu_supports("avx2") ? 1 : 2;
  return known == 1;
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

#define ROTR(x, n)                                                             \
  _mm256_or_si256(_mm256_srli_epi32((x), (n)), _mm256_slli_epi32((x), 32 - (n)))
#define XOR3(x, y, z) _mm256_xor_si256(_mm256_xor_si256((x), (y)), (z))
#define ADD(x, y) _mm256_add_epi32((x), (y))

__attribute__((target("avx2"))) static void
eight(const unsigned char *const *msg, const size_t *len,
      unsigned char (*out)[SHA256_LEN])
{
  struct lane ln[SHA256_LANES];
  __m256i st[8];
  size_t most = 0, b;
  int i, t;

  for (i = 0; i < SHA256_LANES; i++) {
    lane_init(&ln[i], msg[i], len[i]);
    if (ln[i].blocks > most)
      most = ln[i].blocks;
  }
  for (i = 0; i < 8; i++)
    st[i] = _mm256_set1_epi32((int)IV[i]);
  for (b = 0; b < most; b++) {
    const unsigned char *p[SHA256_LANES];
    __m256i w[16], a = st[0], bb = st[1], c = st[2], d = st[3], e = st[4],
                   f = st[5], g = st[6], h = st[7], live;
    for (i = 0; i < SHA256_LANES; i++)
      p[i] = lane_block(&ln[i], b);
    for (t = 0; t < 16; t++) {
      size_t o = 4 * (size_t)t;
      w[t] = _mm256_setr_epi32((int)be32(p[0] + o), (int)be32(p[1] + o),
                               (int)be32(p[2] + o), (int)be32(p[3] + o),
                               (int)be32(p[4] + o), (int)be32(p[5] + o),
                               (int)be32(p[6] + o), (int)be32(p[7] + o));
    }
    for (t = 0; t < 64; t++) {
      __m256i wt, t1, t2;
      if (t < 16) {
        wt = w[t];
      } else {
        __m256i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
        __m256i s0 =
            XOR3(ROTR(w15, 7), ROTR(w15, 18), _mm256_srli_epi32(w15, 3));
        __m256i s1 =
            XOR3(ROTR(w2, 17), ROTR(w2, 19), _mm256_srli_epi32(w2, 10));
        wt = w[t & 15] = ADD(ADD(w[t & 15], s0), ADD(w[(t - 7) & 15], s1));
      }
      t1 = ADD(ADD(h, XOR3(ROTR(e, 6), ROTR(e, 11), ROTR(e, 25))),
               ADD(_mm256_xor_si256(_mm256_and_si256(e, f),
                                    _mm256_andnot_si256(e, g)),
                   ADD(_mm256_set1_epi32((int)K[t]), wt)));
      t2 = ADD(XOR3(ROTR(a, 2), ROTR(a, 13), ROTR(a, 22)),
               XOR3(_mm256_and_si256(a, bb), _mm256_and_si256(a, c),
                    _mm256_and_si256(bb, c)));
      h = g;
      g = f;
      f = e;
      e = ADD(d, t1);
      d = c;
      c = bb;
      bb = a;
      a = ADD(t1, t2);
    }
    /* lanes past their last block keep their state */
    live =
        _mm256_setr_epi32(-(int)(b < ln[0].blocks), -(int)(b < ln[1].blocks),
                          -(int)(b < ln[2].blocks), -(int)(b < ln[3].blocks),
                          -(int)(b < ln[4].blocks), -(int)(b < ln[5].blocks),
                          -(int)(b < ln[6].blocks), -(int)(b < ln[7].blocks));
    st[0] = _mm256_blendv_epi8(st[0], ADD(st[0], a), live);
    st[1] = _mm256_blendv_epi8(st[1], ADD(st[1], bb), live);
    st[2] = _mm256_blendv_epi8(st[2], ADD(st[2], c), live);
    st[3] = _mm256_blendv_epi8(st[3], ADD(st[3], d), live);
    st[4] = _mm256_blendv_epi8(st[4], ADD(st[4], e), live);
    st[5] = _mm256_blendv_epi8(st[5], ADD(st[5], f), live);
    st[6] = _mm256_blendv_epi8(st[6], ADD(st[6], g), live);
    st[7] = _mm256_blendv_epi8(st[7], ADD(st[7], h), live);
  }
  for (i = 0; i < 8; i++) {
    uint32_t v[8];
    int l;
    _mm256_storeu_si256((__m256i *)(void *)v, st[i]);
    for (l = 0; l < SHA256_LANES; l++) {
      unsigned char *o = out[l] + 4 * (size_t)i;
      o[0] = (unsigned char)(v[l] >> 24);
      o[1] = (unsigned char)(v[l] >> 16);
      o[2] = (unsigned char)(v[l] >> 8);
      o[3] = (unsigned char)v[l];
    }
  }
}

bool sha256_lanes_simd(void)
{
  return !atomic_load(&force_portable) && have_avx2();
}

#else

bool sha256_lanes_simd(void)
{
  return false;
}

#endif

int sha256_lanes(size_t n, const unsigned char *const *msg, const size_t *len,
                 unsigned char (*out)[SHA256_LEN])
{
  size_t i = 0;

#ifdef LANES_AVX2
  if (sha256_lanes_simd())
    for (; i + SHA256_LANES <= n; i += SHA256_LANES)
      eight(msg + i, len + i, out + i);
#endif
  for (; i < n; i++) /* the last few, or no AVX2 */
    if (one(msg[i], len[i], out[i]) != 0)
      return -1;
  return 0;
}
