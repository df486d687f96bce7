/* The seeded PRNG every random choice in jctlab uses (internal): xoshiro256**
 * (Blackman and Vigna, "Scrambled linear pseudorandom number generators",
 * 2018), its state filled by splitmix64 from a 64-bit seed as the authors
 * recommend. The same seed gives the same sequence, so runs repeat.
 *
 * Probabilities as Linux netem keeps them (net/sched/sch_netem.c): a
 * 32-bit fraction, which tc makes from a percentage as rint(p * UINT32_MAX)
 * (iproute2 tc/q_netem.c, set_percent), compared with a uniform 32-bit
 * draw (`prandom_u32() < q->loss` in loss_4state and loss_gilb_ell). The
 * resolution is 2^-32; p = 1 (UINT32_MAX) is special-cased so that it
 * always fires, and p = 0 never does. */
#ifndef JCT_RNG_H
#define JCT_RNG_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static inline uint64_t jct__splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static inline void jct__rng_seed(uint64_t s[4], uint64_t seed) {
  for (int i = 0; i < 4; i++)
    s[i] = jct__splitmix64(&seed);
}

static inline uint64_t jct__rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static inline uint64_t jct__rng_next(uint64_t s[4]) {
  uint64_t r = jct__rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = jct__rotl64(s[3], 45);
  return r;
}

/* Uniform in [0, 1), 53 bits. */
static inline double jct__rng_unit(uint64_t s[4]) {
  return (double)(jct__rng_next(s) >> 11) * 0x1.0p-53;
}

/* Uniform 32 bits: the top half of the next number (the generator's
 * strongest bits), one step of the same sequence, so a seed draws the same
 * values, at 32 bits, as jct__rng_unit does at 53. */
static inline uint32_t jct__rng_u32(uint64_t s[4]) {
  return (uint32_t)(jct__rng_next(s) >> 32);
}

/* p in [0, 1] as a 32-bit fraction, as tc's set_percent: rint(p *
 * UINT32_MAX). 1, or a sum of probabilities rounded just above it, is
 * UINT32_MAX; 0 or below is 0. */
static inline uint32_t jct__rng_prob32(double p) {
  if (!(p > 0)) return 0;
  if (p >= 1) return UINT32_MAX;
  return (uint32_t)rint(p * UINT32_MAX);
}

/* A Bernoulli trial with p32 for a uniform 32-bit draw: draw < p32, as
 * netem; p32 = UINT32_MAX (p = 1) always fires, where draw < p32 alone
 * would miss the draw UINT32_MAX. */
static inline bool jct__rng_hit(uint32_t draw, uint32_t p32) {
  return draw < p32 || p32 == UINT32_MAX;
}

#endif
