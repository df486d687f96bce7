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

uint32_t jct__sw_ecmp_pick(jct_switch_t *sw, uint32_t group, const uint8_t *frame, size_t len,
                           uint64_t now_ns) {
  ecmp_group_t *g = &sw->group[group];
  if (sw->cfg.ecmp_mode == JCT_SW_ECMP_PER_PACKET) return g->port[g->next++ % g->n];
  uint32_t h = jct_switch_ecmp_hash(sw->cfg.ecmp_seed, frame, len);
  if (sw->cfg.ecmp_mode == JCT_SW_ECMP_FLOWLET) {
    /* a new flowlet after the gap: a new draw (LetFlow picks at random) */
    flowlet_t *e = &sw->flowlet[h % FLOWLET_ENTRIES];
    if (e->last_ns == 0 || now_ns - e->last_ns > sw->cfg.ecmp_flowlet_gap_ns)
      e->draw = fmix32(h ^ (uint32_t)jct__rng_next(sw->rng));
    e->last_ns = now_ns ? now_ns : 1;
    return g->port[e->draw % g->n];
  }
  return g->port[h % g->n];
}
