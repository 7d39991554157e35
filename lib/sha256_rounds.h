/*
 * sha256_rounds.h — the body of one SHA-256 lanes function, written once
 * for vectors of any width (lib/sha256_lanes.c includes it once per
 * instruction set). Before including it, define:
 *
 *   ROUNDS_NAME    the function's name
 *   ROUNDS_TARGET  its __attribute__((target(...)))
 *   ROUNDS_LANES   32-bit lanes in a vector
 *   VEC            the vector type
 *   V_SET1(x), V_ADD(x, y), V_SRLI(x, n), V_ROTR(x, n),
 *   V_XOR3(x, y, z), V_CH(e, f, g), V_MAJ(a, b, c)
 *                  FIPS 180-4's operations, lane by lane
 *   V_WORDS(p, o)  the big-endian word at byte o of each lane's block p[]
 *   V_KEEP(st, x, live)
 *                  st + x in the lanes whose bit is set in live, st in
 *                  the others
 *   V_STORE(v, x)  the lanes of x into the uint32_t array v
 *
 * Every lane walks its own message's blocks (struct lane); a lane past its
 * last block computes on and keeps its state.
 */

ROUNDS_TARGET static void ROUNDS_NAME(const unsigned char *const *msg,
                                      const size_t *len,
                                      unsigned char (*out)[SHA256_LEN])
{
  struct lane ln[ROUNDS_LANES];
  VEC st[8];
  size_t most = 0, b;
  int i, t;

  for (i = 0; i < ROUNDS_LANES; i++) {
    lane_init(&ln[i], msg[i], len[i]);
    if (ln[i].blocks > most)
      most = ln[i].blocks;
  }
  for (i = 0; i < 8; i++)
    st[i] = V_SET1((int)IV[i]);
  for (b = 0; b < most; b++) {
    const unsigned char *p[ROUNDS_LANES];
    VEC w[16], a = st[0], bb = st[1], c = st[2], d = st[3], e = st[4],
               f = st[5], g = st[6], h = st[7];
    unsigned live = 0;
    for (i = 0; i < ROUNDS_LANES; i++) {
      p[i] = lane_block(&ln[i], b);
      live |= (unsigned)(b < ln[i].blocks) << i;
    }
    for (t = 0; t < 16; t++)
      w[t] = V_WORDS(p, 4 * (size_t)t);
    for (t = 0; t < 64; t++) {
      VEC wt, t1, t2;
      if (t < 16) {
        wt = w[t];
      } else {
        VEC w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
        VEC s0 = V_XOR3(V_ROTR(w15, 7), V_ROTR(w15, 18), V_SRLI(w15, 3));
        VEC s1 = V_XOR3(V_ROTR(w2, 17), V_ROTR(w2, 19), V_SRLI(w2, 10));
        wt = w[t & 15] =
            V_ADD(V_ADD(w[t & 15], s0), V_ADD(w[(t - 7) & 15], s1));
      }
      t1 = V_ADD(V_ADD(h, V_XOR3(V_ROTR(e, 6), V_ROTR(e, 11), V_ROTR(e, 25))),
                 V_ADD(V_CH(e, f, g), V_ADD(V_SET1((int)K[t]), wt)));
      t2 = V_ADD(V_XOR3(V_ROTR(a, 2), V_ROTR(a, 13), V_ROTR(a, 22)),
                 V_MAJ(a, bb, c));
      h = g;
      g = f;
      f = e;
      e = V_ADD(d, t1);
      d = c;
      c = bb;
      bb = a;
      a = V_ADD(t1, t2);
    }
    st[0] = V_KEEP(st[0], a, live);
    st[1] = V_KEEP(st[1], bb, live);
    st[2] = V_KEEP(st[2], c, live);
    st[3] = V_KEEP(st[3], d, live);
    st[4] = V_KEEP(st[4], e, live);
    st[5] = V_KEEP(st[5], f, live);
    st[6] = V_KEEP(st[6], g, live);
    st[7] = V_KEEP(st[7], h, live);
  }
  for (i = 0; i < 8; i++) {
    uint32_t v[ROUNDS_LANES];
    int l;
    V_STORE(v, st[i]);
    for (l = 0; l < ROUNDS_LANES; l++) {
      unsigned char *o = out[l] + 4 * (size_t)i;
      o[0] = (unsigned char)(v[l] >> 24);
      o[1] = (unsigned char)(v[l] >> 16);
      o[2] = (unsigned char)(v[l] >> 8);
      o[3] = (unsigned char)v[l];
    }
  }
}
