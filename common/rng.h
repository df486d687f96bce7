/* The seeded PRNG every random choice in jctlab uses (internal): xoshiro256**
 * (Blackman and Vigna, "Scrambled linear pseudorandom number generators",
 * 2018), its state filled by splitmix64 from a 64-bit seed as the authors
 * recommend. The same seed gives the same sequence, so runs repeat. */
#ifndef JCT_RNG_H
#define JCT_RNG_H

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

#endif
