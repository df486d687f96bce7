/* The drop injector in a host's kernel (include/jctlab/kdrop.h): a tc
 * classifier on the egress of the host's interface, in direct-action mode,
 * returning TC_ACT_STOLEN for a packet it loses and TC_ACT_UNSPEC otherwise
 * (a redirect to nowhere from a tcx link: kdrop.h's jct_kdrop_lease)
 * (tc-bpf(8); the clsact qdisc's egress hook runs it for every packet the
 * interface sends, before the device's queue). STOLEN, not SHOT: the
 * kernel frees the packet and tells the sender NET_XMIT_SUCCESS
 * (sch_handle_egress), so the loss is the wire's, unseen by the sending
 * stack. SHOT answers NET_XMIT_DROP, which rxe's requester takes for a
 * local send error (rxe_send: -EAGAIN) and its QP goes to the error state
 * (seen in the lab: every WR flushed), where a lost frame costs a NAK.
 *
 * The loss models are drop.c's, decided the same way: Bernoulli with
 * bursts, Gilbert-Elliott and netem's 4-state chain (net/sched/sch_netem.c,
 * loss_gilb_ell and loss_4state), every-Nth, and targeted PSNs of one QP
 * with drop.c's transmission counting (@T, count=, retransmissions=yes),
 * up to JCT_KDROP_TX_PER_PSN targets of one PSN, or by position (pkt=M:K:
 * the K-th packet of the M-th message, counted over first transmissions)
 * on a QP named or found as drop.c finds it (the first, or qp-order=N).
 * delay's constant delay (JCT_KDROP_DELAY) is an earliest-departure-time
 * stamp on each packet, which the interface's fq qdisc honours; delay by
 * NAK stamps the listed NAKs and their flows' later packets only.
 * Bernoulli draws are keyed by the packet exactly as draw.c keys them (a
 * hash of the seed, the flow, opcode, PSN and the PSN's losses here), so
 * with the same seed the host loses the same packets the switch would;
 * Gilbert-Elliott and the 4-state chain draw from the seeded stream, as on
 * the switch, but see only RoCEv2 packets (the switch's stream also moves
 * on the other frames a port carries). The random models decide under one
 * bpf_spin_lock, a PSN's targets under their entry's, so two CPUs sending
 * at once still see one sequence; the counters are atomic adds.
 *
 * Built with clang -target bpf as part of jctlab and embedded in it. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <linux/types.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "jctlab/kdrop.h"

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct jct_kdrop_cfg);
} jct_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct jct_kdrop_value);
} jct_state SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct jct_kdrop_lease);
} jct_lease SEC(".maps");

/* Per flow (draw.c's flow hash of the addresses and destination QP): the
 * highest PSN of its data packets (one at or before it is a
 * retransmission, 24-bit serial arithmetic as rxe compares PSNs), its
 * CNPs so far, and (delay by NAK) the departure time of its held NAK. */
struct flow_val {
  __u32 highest_psn, data_seen;
  __u64 cnps;
  __u64 hold_until_ns;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, struct flow_val);
} jct_flows SEC(".maps");

/* Per flow and packet identity (PSN, and whether an ACK's): how many
 * times it was lost here (draw.c's loss records). */
struct loss_key {
  __u64 flow;
  __u32 id, pad;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, struct loss_key);
  __type(value, __u32);
} jct_losses SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, JCT_KDROP_MAX_TARGETS);
  __type(key, __u32);
  __type(value, struct jct_kdrop_target);
} jct_targets SEC(".maps");

/* pkt= mode: targets by position (kdrop.h's JCT_KDROP_POS_KEY). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, JCT_KDROP_MAX_TARGETS);
  __type(key, __u64);
  __type(value, struct jct_kdrop_pos);
} jct_positions SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 18);
} jct_events SEC(".maps");

/* A packet this program lets through: TC_ACT_UNSPEC, not TC_ACT_OK, so
 * the next filter on the hook (another injector at the same host, in the
 * chain's order) sees it too; after the last, UNSPEC is the hook's
 * default, pass (OK would end the filter chain here: cls_bpf's
 * direct-action mode). */
#define PASS TC_ACT_UNSPEC

#define ETH_P_8021Q_ 0x8100
#define ETH_P_IP_ 0x0800
#define ETH_P_IPV6_ 0x86DD

static __always_inline __u64 rotl(__u64 x, int k) {
  return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (common/rng.h): the top 32 bits of the next number. */
static __always_inline __u32 draw(struct jct_kdrop_state *s) {
  __u64 r = rotl(s->rng[1] * 5, 7) * 9, t = s->rng[1] << 17;
  s->rng[2] ^= s->rng[0];
  s->rng[3] ^= s->rng[1];
  s->rng[1] ^= s->rng[2];
  s->rng[0] ^= s->rng[3];
  s->rng[2] ^= t;
  s->rng[3] = rotl(s->rng[3], 45);
  return (__u32)(r >> 32);
}

/* common/rng.h's jct__rng_hit: p = 2^32-1 always fires, 0 never. */
static __always_inline int hit(__u32 u, __u32 p) {
  return p == 0xffffffffu || u < p;
}

static __always_inline __s32 psn_diff(__u32 a, __u32 b) {
  return (__s32)((a - b) << 8) >> 8;
}

static __always_inline int loss_gilb_ell(const struct jct_kdrop_cfg *c, struct jct_kdrop_state *s) {
  if (s->ge_state == 0) {
    if (hit(draw(s), c->p)) s->ge_state = 1;
    return hit(draw(s), c->lose_good);
  }
  if (hit(draw(s), c->r)) s->ge_state = 0;
  return hit(draw(s), c->lose_bad);
}

static __always_inline int loss_4state(const struct jct_kdrop_cfg *c, struct jct_kdrop_state *s) {
  __u32 u = draw(s);
  switch (s->state4) {
  case 1:
    if (hit(u, c->to4))
      s->state4 = 4;
    else if (hit(u, c->to4_or_3))
      s->state4 = 3;
    break;
  case 2:
    if (hit(u, c->to3)) s->state4 = 3;
    break;
  case 3:
    if (hit(u, c->to2))
      s->state4 = 2;
    else if (hit(u, c->to2_or_1))
      s->state4 = 1;
    break;
  default:
    s->state4 = 1;
    break;
  }
  return s->state4 == 3 || s->state4 == 4;
}

/* drop.c's loss_targeted for psn= targets, on the PSN's entry t: a first
 * transmission loses the targets at transmission 1; a re-sent copy is
 * transmission 1 + the PSN's losses here (+ 1 when its first transmission
 * got through). Called with t's lock held. */
static __always_inline int loss_targeted(const struct jct_kdrop_cfg *c, struct jct_kdrop_target *t,
                                         int retx) {
  int lose = 0;
  __u32 target = JCT_KDROP_TX_PER_PSN; /* the one that drops it */
  __u32 tx = 1 + t->losses + (t->first_lost == 0 ? 1 : 0);
  for (__u32 i = 0; i < JCT_KDROP_TX_PER_PSN; i++) {
    if (i >= t->n || t->done[i] >= c->count) continue;
    if (!retx ? t->tx[i] == 1 : c->retransmissions || (t->tx[i] >= 2 && t->tx[i] == tx)) {
      target = i;
      break;
    }
  }
  if (target < JCT_KDROP_TX_PER_PSN) {
    t->done[target]++;
    lose = 1;
  }
  if (!retx) t->first_lost = (__s8)lose;
  if (lose && t->losses < 127) t->losses++;
  return lose;
}

/* keyed: the packet's own draw (draw.c's jct_injector_packet_u32). */
static __always_inline int decide(const struct jct_kdrop_cfg *c, struct jct_kdrop_state *s,
                                  __u32 keyed) {
  switch (c->mode) {
  case JCT_KDROP_BERNOULLI:
    if (s->burst_left) {
      s->burst_left--;
      return 1;
    }
    if (hit(keyed, c->p)) {
      s->burst_left = c->burst - 1;
      return 1;
    }
    return 0;
  case JCT_KDROP_GEMODEL:
    return loss_gilb_ell(c, s);
  case JCT_KDROP_4STATE:
    return loss_4state(c, s);
  case JCT_KDROP_EVERY: {
    __u64 pos = s->nth++ % c->every;
    return pos >= c->every - c->burst;
  }
  }
  return 0;
}

/* drop.c's nth_qp, before the target QP is known (pkt= without qp=):
 * whether qp is the qp_order-th QP seen; it becomes s->qp then. Called
 * with the state's lock held. */
static __always_inline int nth_qp(const struct jct_kdrop_cfg *c, struct jct_kdrop_state *s,
                                  __u32 qp) {
  for (__u32 i = 0; i < JCT_KDROP_MAX_QP_ORDER; i++)
    if (i < s->nseen_qps && s->seen_qps[i] == qp) return 0; /* an earlier QP */
  if (s->nseen_qps < c->qp_order && s->nseen_qps < JCT_KDROP_MAX_QP_ORDER) {
    s->seen_qps[s->nseen_qps & (JCT_KDROP_MAX_QP_ORDER - 1)] = qp;
    s->nseen_qps++;
    return 0;
  }
  s->qp = qp;
  s->qp_found = 1;
  return 1;
}

/* pkt= and qp-order= (drop.c's loss_targeted before its PSN targets):
 * whether the data packet to qp is the target QP's, and for a first
 * transmission with pkt= its position (*pos, JCT_KDROP_POS_KEY; ~0 when
 * no message has begun). Called with the state's lock held. */
static __always_inline int target_qp(const struct jct_kdrop_cfg *c, struct jct_kdrop_state *s,
                                     __u32 qp, __u8 opcode, int retx, __u64 *pos) {
  *pos = ~0ull;
  if (c->any_qp && !s->qp_found && !nth_qp(c, s, qp)) return 0;
  if (qp != (c->any_qp ? s->qp : c->qp)) return 0;
  if (!c->by_msg || retx) return 1;
  if (c->first_op[(opcode >> 3) & 31] & (1 << (opcode & 7))) {
    s->msgs++;
    s->cur_pkt = 0;
  } else {
    s->cur_pkt++;
  }
  if (s->msgs) *pos = JCT_KDROP_POS_KEY(s->msgs - 1, s->cur_pkt);
  return 1;
}

static __always_inline __u64 splitmix64(__u64 *x) {
  __u64 z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static __always_inline __u64 fold(__u64 h, const __u8 *p) {
  __u64 w;
  __builtin_memcpy(&w, p, 8);
  h = (h ^ w) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* delay by NAK (kdrop.h, JCT_KDROP_DELAY with nnaks): the listed NAKs
 * leave late, and every later packet of a flow whose NAK is held leaves no
 * earlier than it (fv->hold_until_ns); the rest pass unstamped. */
static __always_inline int hold_naks(const struct jct_kdrop_cfg *c, struct __sk_buff *skb,
                                     struct flow_val *fv, int nak, __u64 now) {
  __u32 zero = 0;
  struct jct_kdrop_value *v = bpf_map_lookup_elem(&jct_state, &zero);
  if (!v) return PASS;
  __sync_fetch_and_add(&v->s.c.seen, 1);
  __u64 until = fv->hold_until_ns;
  if (nak) {
    bpf_spin_lock(&v->lock);
    __u32 k = ++v->s.naks;
    bpf_spin_unlock(&v->lock);
    for (__u32 i = 0; i < JCT_KDROP_MAX_NAKS; i++) {
      if (i >= c->nnaks) break;
      if (c->nak_k[i] != k) continue;
      __u64 t = now + c->nak_hold_ns[i];
      if (t > until) until = t;
      fv->hold_until_ns = until;
      if (bpf_skb_set_tstamp(skb, until, BPF_SKB_TSTAMP_DELIVERY_MONO) == 0)
        __sync_fetch_and_add(&v->s.c.held, 1);
      return PASS;
    }
  }
  if (until > now) bpf_skb_set_tstamp(skb, until, BPF_SKB_TSTAMP_DELIVERY_MONO);
  return PASS;
}

/* The headers the program reads: up to Ethernet + 802.1Q + IPv6 + UDP +
 * BTH + an ACK's AETH syndrome. */
struct hdrs {
  __u8 b[14 + 4 + 40 + 8 + 12 + 4];
};

SEC("tc")
int jct_hostdrop(struct __sk_buff *skb) {
  __u32 zero = 0;
  const struct jct_kdrop_cfg *c = bpf_map_lookup_elem(&jct_cfg, &zero);
  if (!c || !c->enabled) return PASS;
  struct hdrs h;
  __builtin_memset(&h, 0, sizeof h);
  __u32 len = skb->len < sizeof h ? skb->len : sizeof h;
  if (len < 14 + 20 + 8 + 12) return PASS;
  /* Whole, or as much as the shortest RoCEv2 packets hold (an IPv4 ACK
   * with its ICRC: 62 bytes; a BTH alone: 54). */
  if (bpf_skb_load_bytes(skb, 0, &h, sizeof h) < 0 && bpf_skb_load_bytes(skb, 0, &h, 62) < 0 &&
      bpf_skb_load_bytes(skb, 0, &h, 14 + 20 + 8 + 12) < 0)
    return PASS;
  __u32 l3 = 14;
  __u16 proto = (__u16)(h.b[12] << 8 | h.b[13]);
  if (proto == ETH_P_8021Q_) {
    proto = (__u16)(h.b[16] << 8 | h.b[17]);
    l3 = 18;
  }
  __u32 udp;
  __u8 family;
  struct jct_kdrop_event ev;
  __builtin_memset(&ev, 0, sizeof ev);
  if (proto == ETH_P_IP_) {
    if (l3 + 20 > sizeof h.b) return PASS;
    __u8 vihl = h.b[l3 & 0x3f];
    if (h.b[(l3 + 9) & 0x3f] != IPPROTO_UDP || (vihl & 0xf) != 5) return PASS;
    udp = l3 + 20;
    family = 4;
    __builtin_memcpy(ev.src, &h.b[14 + 12], 4);
    if (l3 == 18) __builtin_memcpy(ev.src, &h.b[18 + 12], 4);
    if (l3 == 14)
      __builtin_memcpy(ev.dst, &h.b[14 + 16], 4);
    else
      __builtin_memcpy(ev.dst, &h.b[18 + 16], 4);
  } else if (proto == ETH_P_IPV6_) {
    if (h.b[(l3 + 6) & 0x3f] != IPPROTO_UDP) return PASS;
    udp = l3 + 40;
    family = 6;
    if (l3 == 14) {
      __builtin_memcpy(ev.src, &h.b[14 + 8], 16);
      __builtin_memcpy(ev.dst, &h.b[14 + 24], 16);
    } else {
      __builtin_memcpy(ev.src, &h.b[18 + 8], 16);
      __builtin_memcpy(ev.dst, &h.b[18 + 24], 16);
    }
  } else {
    return PASS;
  }
  if (udp + 8 + 12 > len || udp + 8 + 12 > sizeof h.b) return PASS;
  __u32 u = udp & 0x7f;
  if (u + 8 + 12 > sizeof h.b) return PASS;
  if ((__u16)(h.b[u + 2] << 8 | h.b[u + 3]) != JCT_KDROP_ROCE_PORT) return PASS;
  const __u8 *bth = &h.b[u + 8];
  __u8 opcode = bth[0];
  __u32 qp = (__u32)bth[5] << 16 | (__u32)bth[6] << 8 | bth[7];
  __u32 psn = (__u32)bth[9] << 16 | (__u32)bth[10] << 8 | bth[11];
  /* ACKs, atomic ACKs and CNPs count PSNs in the other direction's numbering. */
  int data = opcode != 0x11 && opcode != 0x12 && opcode != 0x81;

  __u64 now = bpf_ktime_get_ns();
  const struct jct_kdrop_lease *ls = bpf_map_lookup_elem(&jct_lease, &zero);
  if (ls && ls->until_ns && now >= ls->until_ns) return PASS; /* its agent is gone */
  __u64 t = now > c->start_ns ? now - c->start_ns : 0;
  if (t < c->at_ns || (c->until_ns && t >= c->until_ns)) return PASS;

  if (c->mode == JCT_KDROP_DELAY && !c->nnaks) { /* delay: a departure time, no loss */
    struct jct_kdrop_value *dv = bpf_map_lookup_elem(&jct_state, &zero);
    if (!dv) return PASS;
    __sync_fetch_and_add(&dv->s.c.seen, 1);
    if (bpf_skb_set_tstamp(skb, now + c->delay_ns, BPF_SKB_TSTAMP_DELIVERY_MONO) == 0)
      __sync_fetch_and_add(&dv->s.c.held, 1);
    return PASS;
  }

  /* The packet's identity, as draw.c keys it: the flow (addresses folded
   * 8 bytes at a time with the QP, mixed), opcode, PSN (an ACK's also by
   * its syndrome), and how often that PSN was lost here before. */
  __u64 flow = qp;
  if (family == 4) {
    __u8 a[8];
    __builtin_memcpy(a, ev.src, 4);
    __builtin_memcpy(a + 4, ev.dst, 4);
    flow = fold(flow, a);
  } else {
    flow = fold(flow, ev.src);
    flow = fold(flow, ev.src + 8);
    flow = fold(flow, ev.dst);
    flow = fold(flow, ev.dst + 8);
  }
  flow = splitmix64(&flow) | 1;
  __u64 key = flow ^ (__u64)opcode << 48;
  struct flow_val *fv = bpf_map_lookup_elem(&jct_flows, &flow);
  if (!fv) {
    struct flow_val fresh = {0};
    bpf_map_update_elem(&jct_flows, &flow, &fresh, BPF_NOEXIST);
    if (!(fv = bpf_map_lookup_elem(&jct_flows, &flow))) return PASS;
  }
  if (c->mode == JCT_KDROP_DELAY) { /* by NAK: an ACK whose AETH syndrome is a PSN sequence error's */
    __u32 udp_len = (__u32)h.b[u + 4] << 8 | h.b[u + 5];
    int nak = opcode == 0x11 && udp_len >= 8 + 12 + 4 && u + 8 + 12 < sizeof h.b &&
              h.b[u + 8 + 12] == JCT_KDROP_AETH_NAK_PSN_SEQ;
    return hold_naks(c, skb, fv, nak, now);
  }
  int retx = 0, cnp = opcode == 0x81;
  struct loss_key lk = {.flow = flow, .id = psn | (__u32)(!data) << 24};
  if (cnp) {
    key ^= __sync_add_and_fetch(&fv->cnps, 1) * 0xd6e8feb86659fd93ull;
  } else {
    if (!data) {
      __u32 udp_len = (__u32)h.b[u + 4] << 8 | h.b[u + 5];
      if (udp_len >= 8 + 12 + 4 && u + 8 + 12 < sizeof h.b) key ^= (__u64)h.b[u + 8 + 12] << 56;
    } else if (!fv->data_seen || psn_diff(psn, fv->highest_psn) > 0) {
      fv->data_seen = 1; /* a first transmission */
      fv->highest_psn = psn;
      bpf_map_delete_elem(&jct_losses, &lk); /* a record from before the PSNs wrapped */
    } else {
      retx = 1;
    }
    __u32 *l = bpf_map_lookup_elem(&jct_losses, &lk);
    __u64 losses = l ? *l : 0;
    key ^= (__u64)psn << 24 ^ losses * 0x9e3779b97f4a7c15ull;
  }
  __u64 x = c->seed ^ key;
  __u32 keyed = (__u32)(splitmix64(&x) >> 32);

  struct jct_kdrop_value *v = bpf_map_lookup_elem(&jct_state, &zero);
  if (!v) return PASS;
  __sync_fetch_and_add(&v->s.c.seen, 1);
  int lose = 0;
  if (c->mode == JCT_KDROP_PSN) {
    int mine = data && qp == c->qp;
    if (data && (c->by_msg || c->any_qp)) {
      __u64 pos;
      bpf_spin_lock(&v->lock);
      mine = target_qp(c, &v->s, qp, opcode, retx, &pos);
      bpf_spin_unlock(&v->lock);
      /* A position's first transmission: its targets become the PSN's. */
      struct jct_kdrop_pos *at =
          mine && pos != ~0ull ? bpf_map_lookup_elem(&jct_positions, &pos) : 0;
      if (at) {
        struct jct_kdrop_target nt;
        __builtin_memset(&nt, 0, sizeof nt);
        nt.n = at->n;
        nt.first_lost = -1;
        __builtin_memcpy(nt.tx, at->tx, sizeof nt.tx);
        bpf_map_update_elem(&jct_targets, &psn, &nt, BPF_ANY);
      }
    }
    struct jct_kdrop_target *t = mine ? bpf_map_lookup_elem(&jct_targets, &psn) : 0;
    if (t) {
      bpf_spin_lock(&t->lock);
      lose = loss_targeted(c, t, retx);
      bpf_spin_unlock(&t->lock);
    }
  } else {
    bpf_spin_lock(&v->lock);
    lose = decide(c, &v->s, keyed);
    bpf_spin_unlock(&v->lock);
  }
  if (!lose) return PASS;
  __sync_fetch_and_add(&v->s.c.dropped, 1);
  if (!cnp) { /* its next copy draws anew */
    __u32 *l = bpf_map_lookup_elem(&jct_losses, &lk);
    if (l) {
      if (*l < 127) __sync_fetch_and_add(l, 1);
    } else {
      __u32 one = 1;
      bpf_map_update_elem(&jct_losses, &lk, &one, BPF_ANY);
    }
  }

  ev.t_ns = now;
  ev.qp = qp;
  ev.psn = psn;
  ev.opcode = opcode;
  ev.retransmission = (__u8)retx;
  ev.family = family;
  if (bpf_ringbuf_output(&jct_events, &ev, sizeof ev, 0) < 0)
    __sync_fetch_and_add(&v->s.c.events_lost, 1);
  if (ls && ls->tcx) return (int)bpf_redirect(0, 0); /* lost: kdrop.h's jct_kdrop_lease */
  return TC_ACT_STOLEN;
}

char LICENSE[] SEC("license") = "GPL";
