/* The draws an injector kind makes (injector.h), below the framework so
 * that the kinds call only this file and spec.c, and the framework
 * (injector.c) calls the kinds through the registry without a cycle.
 *
 * The injector's own stream: xoshiro256** (Blackman and Vigna, "Scrambled
 * linear pseudorandom number generators", 2018), its four words of state
 * filled by splitmix64 from the injector's seed, as the authors recommend
 * (common/rng.h). Draws are 32 bits, the top half of a 64-bit number, for
 * kinds to compare with probabilities kept as 32-bit fractions, as netem.
 * jct_injector_crandom is netem's correlated draw (get_crandom()).
 *
 * Packet-keyed draws: a frame's RoCEv2 flow (addresses and destination QP)
 * and its PSN, with whether it is a retransmission and of which go-back,
 * make a key; the draw is a hash of the seed and the key, so the same
 * packets meet the same fate however the fabric's timing interleaves them.
 */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/wire.h"
#include "jctlab/injector.h"
#include "jctlab/roce.h"
#include "traces/frame.h"

#define FLOW_SLOTS 4096 /* a power of two */

uint64_t jct_injector_u64(jct_injector_t *inj) {
  return jct__rng_next(inj->rng);
}

uint32_t jct_injector_u32(jct_injector_t *inj) {
  return jct__rng_u32(inj->rng);
}

uint32_t jct_injector_crandom(jct_injector_t *inj, uint32_t rho, uint32_t *last) {
  uint64_t value = jct_injector_u32(inj);
  if (rho == 0) return (uint32_t)value;
  uint64_t r = (uint64_t)rho + 1;
  *last = (uint32_t)((value * ((1ull << 32) - r) + (uint64_t)*last * r) >> 32);
  return *last;
}

typedef struct {
  uint64_t key; /* 0: empty */
  uint32_t last_psn, highest_psn, rewinds;
  uint32_t acks; /* ACKs and CNPs seen on the flow */
  bool data_seen;
} flow_slot_t;

bool jct_frame_roce(jct_frame_t *f) {
  if (f->parsed) return f->parsed == 2;
  size_t udp, udp_len, l3;
  f->parsed = 1;
  if (!jct__frame_roce_l3(f->data, f->len, &l3, &udp, &udp_len)) return false;
  /* The flow: addresses and destination QP, folded 8 bytes at a time and
   * mixed (splitmix64's finaliser): a few multiplies, not one per byte. */
  const uint8_t *ip = f->data + l3, *bth = f->data + udp + 8;
  bool v6 = ip[0] >> 4 == 6;
  size_t alen = v6 ? 32 : 8, aoff = v6 ? 8 : 12;
  uint64_t h = jct__be24(bth + 5);
  for (size_t i = 0; i < alen; i += 8) {
    uint64_t w;
    memcpy(&w, ip + aoff + i, sizeof w);
    h = (h ^ w) * 0x9e3779b97f4a7c15u;
    h ^= h >> 29;
  }
  h = jct__splitmix64(&h);
  f->l3 = (uint16_t)l3;
  f->udp = (uint16_t)udp;
  f->udp_len = (uint16_t)udp_len;
  f->flow_hash = h | 1;
  f->parsed = 2;
  return true;
}

void *jct_flows_new(void) {
  return calloc(FLOW_SLOTS, sizeof(flow_slot_t));
}

void jct_flows_clear(void *flows) {
  if (flows) memset(flows, 0, FLOW_SLOTS * sizeof(flow_slot_t));
}

void jct_flows_free(void *flows) {
  free(flows);
}

/* The packet's identity as a 64-bit hash, by the history in table t, or 0
 * when it is not RoCEv2 or its flow does not fit the table. */
static uint64_t flow_key(flow_slot_t *t, jct_frame_t *f) {
  if (!jct_frame_roce(f)) return 0;
  const uint8_t *bth = f->data + f->udp + 8;
  uint64_t h = f->flow_hash;
  uint32_t psn = jct__be24(bth + 9);
  size_t i = (size_t)(h >> 32) & (FLOW_SLOTS - 1);
  for (size_t n = 0; t[i].key && t[i].key != h; i = (i + 1) & (FLOW_SLOTS - 1))
    if (++n == FLOW_SLOTS) return 0;
  flow_slot_t *fl = &t[i];
  fl->key = h;
  /* ACKs and CNPs carry PSNs of the other direction's numbering, and the
   * same ACK comes again when a retransmission is re-acknowledged: they
   * are known by their place in the flow's sequence of ACKs, so a repeat
   * draws anew (a dropped ACK is not dropped forever), and leave the
   * data's history alone. */
  const struct jct_opcode_info *op = jct_opcode_info(bth[0]);
  if (op->kind == JCT_OPK_ACK || op->kind == JCT_OPK_ATOMIC_ACK || op->kind == JCT_OPK_CNP)
    return h ^ (uint64_t)++fl->acks * 0xd6e8feb86659fd93u ^ (uint64_t)bth[0] << 48;
  bool fresh = true; /* a first transmission: above every PSN the flow sent */
  if (!fl->data_seen) {
    fl->data_seen = true;
    fl->last_psn = fl->highest_psn = psn;
  } else {
    fresh = jct_psn_diff(psn, fl->highest_psn) > 0;
    if (!fresh && jct_psn_diff(psn, fl->last_psn) <= 0) fl->rewinds++;
    if (fresh) fl->highest_psn = psn;
    fl->last_psn = psn;
  }
  /* A first transmission is known by its flow and PSN alone, so the same
   * packets draw the same numbers however the NAKs' timing interleaves
   * them with go-backs; a retransmission also by the go-back it belongs
   * to, so each one draws anew. */
  uint64_t episode = fresh ? 0 : fl->rewinds;
  return h ^ (uint64_t)psn << 24 ^ (uint64_t)bth[0] << 48 ^ episode * 0x9e3779b97f4a7c15u;
}

/* The frame's key: once per frame from its site's history when it has one
 * (every injector there then agrees on it), else from the injector's. */
static uint64_t packet_key(jct_injector_t *inj, jct_frame_t *f) {
  if (f->site_flows) {
    if (!f->keyed) {
      f->packet_key = flow_key(f->site_flows, f);
      f->keyed = true;
    }
    return f->packet_key;
  }
  return inj->flows ? flow_key(inj->flows, f) : 0;
}

uint32_t jct_injector_packet_u32(jct_injector_t *inj, jct_frame_t *f, uint64_t salt) {
  uint64_t key = packet_key(inj, f);
  if (!key) return jct_injector_u32(inj);
  uint64_t x = inj->seed ^ key ^ salt * 0xd1b54a32d192ed03u;
  return (uint32_t)(jct__splitmix64(&x) >> 32);
}

