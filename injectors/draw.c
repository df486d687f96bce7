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
 * Packet-keyed draws: a frame's RoCEv2 flow (addresses and destination QP),
 * its PSN and opcode, and how many times that PSN was already lost at the
 * site, make a key; the draw is a hash of the seed and the key, so the same
 * packets meet the same fate however the fabric's timing interleaves them.
 * Counting losses, not transmissions or go-backs, is what makes it exact
 * under go-back-N: how many packets were in flight when a NAK came back
 * (and so which PSNs are sent twice) depends on timing, but a copy of a PSN
 * that was never lost draws what its first transmission drew, so the
 * extra copies pass or fall with it, and a lost PSN's next copy draws anew.
 * ACKs are keyed the same way by the PSN they acknowledge and their
 * syndrome; which PSNs get an ACK depends on coalescing, so their fate
 * repeats only for the ACKs that are sent. CNPs carry no PSN of their own
 * and are known by their place in the flow's sequence of CNPs.
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

/* The PSNs of a flow lost at the site, with how often: a record is
 * psn | ack << 24 | losses << 25 (0: empty), LOSS_RECS of them in a ring,
 * the oldest overwritten first. Go-back-N retransmits a lost PSN before the
 * flow moves far on, so a record is needed only while a few are out. */
#define LOSS_RECS 16
#define LOSS_ID_MASK 0x1ffffffu
#define LOSS_MAX 127u

typedef struct {
  uint64_t key; /* 0: empty */
  uint32_t loss[LOSS_RECS];
  uint32_t highest_psn; /* of the data packets, valid when data_seen */
  uint32_t cnps;        /* CNPs seen on the flow */
  uint8_t next_rec;     /* the ring's next record to overwrite */
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

/* The flow's slot in table t, taken when new; NULL when the frame is not
 * RoCEv2 or its flow does not fit the table. */
static flow_slot_t *flow_slot(flow_slot_t *t, jct_frame_t *f) {
  if (!jct_frame_roce(f)) return NULL;
  uint64_t h = f->flow_hash;
  size_t i = (size_t)(h >> 32) & (FLOW_SLOTS - 1);
  for (size_t n = 0; t[i].key && t[i].key != h; i = (i + 1) & (FLOW_SLOTS - 1))
    if (++n == FLOW_SLOTS) return NULL;
  t[i].key = h;
  return &t[i];
}

/* The frame's loss identity: its PSN, and whether it is an ACK (whose PSNs
 * are the other direction's numbering). False for a CNP. */
static bool loss_id(const jct_frame_t *f, uint32_t *id) {
  const uint8_t *bth = f->data + f->udp + 8;
  const struct jct_opcode_info *op = jct_opcode_info(bth[0]);
  if (op->kind == JCT_OPK_CNP) return false;
  bool ack = op->kind == JCT_OPK_ACK || op->kind == JCT_OPK_ATOMIC_ACK;
  *id = jct__be24(bth + 9) | (uint32_t)ack << 24;
  return true;
}

static uint32_t *loss_rec(flow_slot_t *fl, uint32_t id) {
  for (size_t i = 0; i < LOSS_RECS; i++)
    if (fl->loss[i] && (fl->loss[i] & LOSS_ID_MASK) == id) return &fl->loss[i];
  return NULL;
}

/* The packet's identity as a 64-bit hash, by the losses in table t, or 0
 * when it is not RoCEv2 or its flow does not fit the table. Sets
 * f->retransmission. */
static uint64_t flow_key(flow_slot_t *t, jct_frame_t *f) {
  flow_slot_t *fl = flow_slot(t, f);
  f->retransmission = false;
  if (!fl) return 0;
  const uint8_t *bth = f->data + f->udp + 8;
  uint64_t h = fl->key ^ (uint64_t)bth[0] << 48;
  uint32_t id;
  if (!loss_id(f, &id)) return h ^ (uint64_t)++fl->cnps * 0xd6e8feb86659fd93u;
  uint32_t psn = id & JCT_PSN_MASK;
  uint32_t *rec = loss_rec(fl, id);
  if (id >> 24) { /* an ACK: also by its syndrome (ACK or NAK, and which) */
    if (f->udp_len >= 8 + JCT_BTH_BYTES + JCT_AETH_BYTES) h ^= (uint64_t)bth[12] << 56;
  } else if (!fl->data_seen || jct_psn_diff(psn, fl->highest_psn) > 0) {
    fl->data_seen = true; /* a first transmission: after every PSN the flow sent */
    fl->highest_psn = psn;
    if (rec) *rec = 0; /* a record from before the PSNs wrapped */
    rec = NULL;
  } else {
    f->retransmission = true;
  }
  uint64_t losses = rec ? *rec >> 25 : 0;
  return h ^ (uint64_t)psn << 24 ^ losses * 0x9e3779b97f4a7c15u;
}

/* The frame's key from its site's history, found once per frame (every
 * injector there then agrees on it). */
static uint64_t site_key(jct_frame_t *f) {
  if (!f->keyed) {
    f->packet_key = flow_key(f->site_flows, f);
    f->keyed = true;
  }
  return f->packet_key;
}

/* The frame's key: from its site's history when it has one, else from the
 * injector's. */
static uint64_t packet_key(jct_injector_t *inj, jct_frame_t *f) {
  if (f->site_flows) return site_key(f);
  return inj->flows ? flow_key(inj->flows, f) : 0;
}

bool jct_frame_retransmission(jct_frame_t *f) {
  if (!f->site_flows) return false;
  site_key(f);
  return f->retransmission;
}

uint32_t jct_injector_packet_losses(jct_injector_t *inj, jct_frame_t *f) {
  flow_slot_t *t = f->site_flows ? f->site_flows : inj->flows;
  flow_slot_t *fl = t ? flow_slot(t, f) : NULL;
  uint32_t id;
  if (!fl || !loss_id(f, &id)) return 0;
  const uint32_t *rec = loss_rec(fl, id);
  return rec ? *rec >> 25 : 0;
}

void jct_injector_packet_lost(jct_injector_t *inj, jct_frame_t *f) {
  flow_slot_t *t = f->site_flows ? f->site_flows : inj->flows;
  flow_slot_t *fl = t ? flow_slot(t, f) : NULL;
  uint32_t id;
  if (!fl || !loss_id(f, &id)) return;
  uint32_t *rec = loss_rec(fl, id);
  if (!rec) {
    rec = &fl->loss[fl->next_rec];
    fl->next_rec = (uint8_t)((fl->next_rec + 1) % LOSS_RECS);
    *rec = id;
  }
  if (*rec >> 25 < LOSS_MAX) *rec += 1u << 25;
}

uint32_t jct_injector_packet_u32(jct_injector_t *inj, jct_frame_t *f, uint64_t salt) {
  uint64_t key = packet_key(inj, f);
  if (!key) return jct_injector_u32(inj);
  uint64_t x = inj->seed ^ key ^ salt * 0xd1b54a32d192ed03u;
  return (uint32_t)(jct__splitmix64(&x) >> 32);
}

