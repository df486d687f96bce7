/* ECMP next-hop choice (include/jctlab/switch.h, jct_switch_add_mac_ecmp):
 * a CRC-32 over the 5-tuple with the seed mixed in after it, or
 * round-robin spraying as a what-if.
 *
 * Why the seed is not the CRC's initial value: CRC is affine over GF(2),
 * so crc(seed, key) = crc(0, key) ^ c(seed) for keys of one length -- a
 * seed given as the initial value (or prepended, or XORed into the key)
 * only XORs a constant into every flow's hash, and with 2^k members that
 * relabels the members without changing which flows share one. The seed
 * therefore goes through MurmurHash3's 32-bit finalizer (fmix32, a
 * bijection with full avalanche) together with the CRC, as ASICs offer
 * hash-output mixing beyond the raw CRC for the same reason. */
#include <isa-l/crc.h>
#include <string.h>

#include "common/rng.h"
#include "jctlab/error.h"
#include "common/wire.h"
#include "jctlab/switch.h"
#include "switch_int.h"
#include "traces/frame.h"

/* MurmurHash3's fmix32 (Appleby, public domain). */
static uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static uint32_t mix(uint32_t seed, uint32_t crc) {
  return fmix32(crc ^ fmix32(seed + 0x9e3779b9u));
}

uint32_t jct_switch_ecmp_hash(uint32_t seed, const uint8_t *f, size_t len) {
  uint8_t key[16 + 16 + 1 + 4];
  size_t n = 0, l3, l4 = 0;
  uint16_t et;
  int pcp;
  uint8_t proto = 0;
  if (!jct__frame_l3(f, len, &l3, &et, &pcp)) et = 0;
  if (et == 0x0800 && len >= l3 + 20 && (f[l3] >> 4) == 4) {
    memcpy(key, f + l3 + 12, 8); /* source, destination */
    n = 8;
    proto = f[l3 + 9];
    l4 = l3 + (size_t)(f[l3] & 15u) * 4;
  } else if (et == 0x86dd && len >= l3 + 40 && (f[l3] >> 4) == 6) {
    memcpy(key, f + l3 + 8, 32);
    n = 32;
    proto = f[l3 + 6];
    l4 = l3 + 40;
  } else {
    memcpy(key, f, len < 12 ? len : 12); /* destination and source MAC */
    return mix(seed, crc32_gzip_refl(0, key, len < 12 ? len : 12));
  }
  key[n++] = proto;
  if ((proto == 17 || proto == 6) && len >= l4 + 4)
    memcpy(key + n, f + l4, 4); /* source and destination port */
  else
    memset(key + n, 0, 4);
  n += 4;
  return mix(seed, crc32_gzip_refl(0, key, n));
}

/* Member m of g, or, when it is withdrawn, the live member its flows move
 * to (resilient: nothing else moves; switch.h). */
static uint32_t member(const ecmp_group_t *g, uint32_t m, uint32_t h) {
  if (!(g->down >> m & 1)) return g->port[m];
  uint32_t live = g->n - (uint32_t)__builtin_popcount(g->down);
  if (!live) return g->port[m];
  uint32_t j = fmix32(h ^ 0x5bd1e995u) % live;
  for (uint32_t k = 0; k < g->n; k++)
    if (!(g->down >> k & 1) && j-- == 0) return g->port[k];
  return g->port[m]; /* not reached */
}

uint32_t jct__sw_ecmp_pick(jct_switch_t *sw, uint32_t group, const uint8_t *frame, size_t len,
                           uint64_t now_ns) {
  ecmp_group_t *g = &sw->group[group];
  if (sw->cfg.ecmp_mode == JCT_SW_ECMP_PER_PACKET) {
    uint32_t m = (uint32_t)(g->next++ % g->n);
    for (uint32_t k = 0; k < g->n && (g->down >> m & 1); k++)
      m = (uint32_t)(g->next++ % g->n);
    return g->port[m];
  }
  uint32_t h = jct_switch_ecmp_hash(sw->cfg.ecmp_seed, frame, len);
  if (sw->cfg.ecmp_mode == JCT_SW_ECMP_FLOWLET) {
    /* a new flowlet after the gap: a new draw (LetFlow picks at random) */
    flowlet_t *e = &sw->flowlet[h % FLOWLET_ENTRIES];
    if (e->last_ns == 0 || now_ns - e->last_ns > sw->cfg.ecmp_flowlet_gap_ns)
      e->draw = fmix32(h ^ (uint32_t)jct__rng_next(sw->rng));
    e->last_ns = now_ns ? now_ns : 1;
    return member(g, e->draw % g->n, e->draw);
  }
  return member(g, h % g->n, h);
}

int jct_switch_ecmp_group_new(jct_switch_t *sw, const uint32_t *ports, uint32_t n) {
  if (!sw || !ports || n < 2 || n > JCT_SWITCH_MAX_ECMP_WAYS) return JCT_EINVAL;
  for (uint32_t k = 0; k < n; k++)
    if (ports[k] >= sw->nports) return JCT_EINVAL;
  if (sw->ngroups == JCT_SWITCH_MAX_ECMP_GROUPS) return JCT_ENOMEM;
  ecmp_group_t *g = &sw->group[sw->ngroups];
  memset(g, 0, sizeof *g);
  g->n = n;
  g->own = true;
  memcpy(g->port, ports, n * sizeof *ports);
  return (int)sw->ngroups++;
}

int jct_switch_ecmp_member_up(jct_switch_t *sw, uint32_t group, uint32_t port, bool up) {
  if (!sw || group >= sw->ngroups) return JCT_EINVAL;
  ecmp_group_t *g = &sw->group[group];
  uint32_t k = 0;
  while (k < g->n && g->port[k] != port)
    k++;
  if (k == g->n) return JCT_EINVAL;
  g->down = up ? g->down & ~(1u << k) : g->down | 1u << k;
  return (int)(g->n - (uint32_t)__builtin_popcount(g->down));
}
