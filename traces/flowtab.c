/* Open-addressing hash table from flow keys to record indices (flowtab.h).
 *
 * The hash folds the two 16-byte addresses, their families and the QP
 * number through a 64-bit multiply-xorshift mix: a handful of multiplies
 * per lookup, good spread for addresses that differ in one byte.
 */
#include "flowtab.h"

#include <stdlib.h>

#include "jctlab/error.h"

static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15u;
  return h ^ (h >> 31);
}

uint32_t jct__ftab_hash(const jct_flow_key_t *k) {
  uint64_t w[4];
  memcpy(&w[0], k->src.bytes, 8);
  memcpy(&w[1], k->src.bytes + 8, 8);
  memcpy(&w[2], k->dst.bytes, 8);
  memcpy(&w[3], k->dst.bytes + 8, 8);
  uint64_t h = mix(0x2545f4914f6cdd1du,
                   (uint64_t)k->dest_qp << 16 | (uint64_t)k->src.family << 8 | k->dst.family);
  for (int i = 0; i < 4; i++)
    h = mix(h, w[i]);
  return (uint32_t)(h ^ (h >> 32));
}

static inline bool pair_eq(const jct_flow_key_t *a, const jct_flow_key_t *b) {
  return memcmp(a->src.bytes, b->src.bytes, 16) == 0 &&
         memcmp(a->dst.bytes, b->dst.bytes, 16) == 0 && a->src.family == b->src.family &&
         a->dst.family == b->dst.family;
}

static inline long find(const jct__ftab_t *t, const jct_flow_key_t *k, uint32_t h, const void *base,
                        size_t stride, bool pair) {
  if (!t->slot) return -1;
  for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
    const struct jct__ftab_slot *s = &t->slot[i];
    if (!s->idx1) return -1;
    if (s->hash != h) continue;
    size_t idx = s->idx1 - 1u;
    const jct_flow_key_t *rk =
        (const jct_flow_key_t *)(const void *)((const char *)base + idx * stride);
    if (pair ? pair_eq(rk, k) : jct__key_eq(rk, k)) return (long)idx;
  }
}

long jct__ftab_find(const jct__ftab_t *t, const jct_flow_key_t *k, uint32_t h, const void *base,
                    size_t stride) {
  return find(t, k, h, base, stride, false);
}

long jct__ftab_find_pair(const jct__ftab_t *t, const jct_flow_key_t *k, uint32_t h,
                         const void *base, size_t stride) {
  return find(t, k, h, base, stride, true);
}

static void put(struct jct__ftab_slot *slot, size_t mask, uint32_t h, uint32_t idx1) {
  size_t i = h & mask;
  while (slot[i].idx1)
    i = (i + 1) & mask;
  slot[i].hash = h;
  slot[i].idx1 = idx1;
}

int jct__ftab_reserve(jct__ftab_t *t) {
  size_t cap = t->slot ? t->mask + 1 : 0;
  if (4 * (t->count + 1) > 3 * cap) {
    size_t ncap = cap ? 2 * cap : 64;
    struct jct__ftab_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns) return JCT_ENOMEM;
    for (size_t i = 0; i < cap; i++)
      if (t->slot[i].idx1) put(ns, ncap - 1, t->slot[i].hash, t->slot[i].idx1);
    free(t->slot);
    t->slot = ns;
    t->mask = ncap - 1;
  }
  return 0;
}

int jct__ftab_insert(jct__ftab_t *t, uint32_t h, size_t idx) {
  if (idx >= UINT32_MAX) return JCT_ENOMEM;
  int rc = jct__ftab_reserve(t);
  if (rc < 0) return rc;
  put(t->slot, t->mask, h, (uint32_t)(idx + 1));
  t->count++;
  return 0;
}

void jct__ftab_free(jct__ftab_t *t) {
  free(t->slot);
  t->slot = NULL;
  t->mask = 0;
  t->count = 0;
}
