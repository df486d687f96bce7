/* The streaming RoCEv2 flow analyser behind `jctlab inspect` (inspect.h).
 *
 * One pass, one decoded frame at a time. Each RoCE packet is charged to its
 * flow (source, destination, BTH destination QP), found through a one-entry
 * "last flow" cache and then a hash table (flowtab.h). Per flow we keep the
 * highest data PSN (24-bit serial arithmetic, jct_psn_diff()) to classify
 * each data packet as new, a gap (PSNs skipped before the capture point) or
 * a retransmission; the first retransmission after a new packet is a
 * rewind, a go-back-N one when the peer flow sent a NAK since the last
 * rewind (IBA 9.7.5.2.1), else a retransmission-timeout episode (IBA
 * 9.7.6.1.3; Linux rxe_comp.c). Messages are rebuilt the way the responder
 * at the capture point accepts them: strictly in PSN order, as rxe_resp.c
 * does, so a message completes when its LAST (or ONLY) packet is the next
 * expected PSN. Its start time is the first transmission of its FIRST
 * packet; when the responder cannot take that packet at once (PSNs before
 * it are missing), the start is remembered in a ring of MSG_RING entries
 * that the flow borrows from a pool and gives back once it is empty.
 * A packet whose ICRC is wrong is counted but changes no transport state:
 * the receiver drops it (rxe_icrc.c).
 *
 * Each lost PSN (a gap, a re-sent PSN skipped in a go-back, or one a NAK
 * names) is a hole (holes.h) until its retransmission is seen: the loss's
 * recovery latency. The profile of the captured system (profile_int.h) is
 * gathered on the way; what it needs per flow (the PSNs acknowledged so
 * far, the address pair's number) is in the flow's record.
 *
 * PFC and PAUSE frames are handed to pause.c (links and paused time).
 *
 * Memory per flow is what inspect.h budgets: the flow's record (its
 * public part, transport state, four opcode counters: opcount.h), one slot
 * in the flow table and, for the first flow of each (source, destination),
 * one in the address-pair table, whose flows are chained through their
 * records (no record of its own). Nothing is allocated per packet: only a
 * new flow, address pair, link, fifth opcode of a flow, a flow with
 * message starts waiting on missing PSNs (a ring, reused from the pool
 * when one is free), an open hole or a profile sample grows the arrays and
 * tables.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "flowtab.h"
#include "holes.h"
#include "inspect_int.h"
#include "opcount.h"
#include "pause.h"
#include "profile_int.h"
#include "jctlab/error.h"
#include "jctlab/inspect.h"

#define MSG_RING 64         /* message starts remembered while in flight */
#define PAIR_QP 0xffffffffu /* dest_qp of an address-pair key (QPNs are 24-bit) */
#define MIN_MTU_BYTES 256u  /* IBA's smallest path MTU: bounds a READ's PSN span */
#define DEFAULT_RATE_BPS 100000000000u
#define HOLES_PER_SKIP 64u        /* holes opened per gap or skip; a bigger one is a capture hole */
#define NAK_BEFORE_FIRST_PSNS 128 /* a NAK pairs with a flow up to this far before its first PSN   \
                                   */

struct flow {
  jct_flow_t pub; /* first: its key is at offset 0, as flowtab.h wants */
  jct__opcount_t ops;
  uint64_t rewind_ns;
  uint64_t asm_start_ns, asm_bytes; /* the message being accepted: start, bytes, */
  uint32_t asm_psn;                 /* first PSN */
  uint32_t pair_next1;              /* 1 + the next flow with the same (src, dst); 0: none */
  uint32_t pair_tail;  /* the last flow with the same (src, dst): in the first one only */
  uint32_t last_slack; /* PSNs the last data packet used past its own (a READ request) */
  uint32_t expected;   /* the PSN the responder accepts next */
  uint32_t last_psn;   /* of the last data packet */
  uint32_t reach_psn;  /* the last PSN sent when the go-back under way began (its depth's end) */
  uint32_t acc_slack;  /* ... or up to this many after it (READ request) */
  uint32_t ring_lost_hi;
  uint32_t ring1;      /* 1 + the ring borrowed from the pool; 0: none */
  uint32_t link;       /* its address pair's number, for the profile */
  uint32_t acked_psn;  /* the highest PSN its peer acknowledged (when acked) */
  jct__holes_t *holes; /* lost PSNs waiting for their retransmission; NULL: none yet */
  uint8_t ring_head, ring_len;
  uint8_t asm_kind;
  bool data_seen, rewinding, nak_pending, asm_open, ring_lost;
  bool run_timeout; /* the go-back under way began with a timeout */
  bool acked;
};

/* First transmissions of FIRST/ONLY packets the responder has not taken
 * yet. A free ring holds the next free one in psn[0] (1 + index; 0: end). */
struct ring {
  uint32_t psn[MSG_RING];
  uint64_t ns[MSG_RING];
};

struct jct_inspect {
  jct_inspect_opts_t opts;
  jct_totals_t tot;
  struct flow *flows;
  size_t nflows, capflows;
  struct ring *rings;
  size_t nrings, caprings;
  uint32_t free_ring1; /* 1 + the first free ring; 0: none */
  jct__links_t links;
  jct__ftab_t ftab; /* (src, dst, dest_qp) -> flow */
  jct__ftab_t ptab; /* (src, dst) -> the first flow between them */
  long last;        /* the flow of the last RoCE packet, -1 */
  uint32_t npairs;  /* address pairs numbered so far */
  jct__prof_t prof;
};

/* Where the packet being handled stands, for events. */
struct ctx {
  jct_inspect_t *ins;
  const jct_packet_t *pkt;
  uint64_t ts_ns, frame_no;
  uint64_t prev_ns; /* the flow's packet before this one (this one's time for a new flow) */
  uint32_t wire_len;
  long fi;
};

static const char *const event_names[JCT_EV__COUNT] = {
    "msg_done", "gap",    "nak",      "rewind", "timeout", "recovered",
    "cnp",      "ecn_ce", "bad_icrc", "pause",  "resume",  "hole_resent"};

const char *jct_event_name(jct_event_type_t t) {
  return (unsigned)t < JCT_EV__COUNT ? event_names[t] : "unknown";
}

/* How far PSN a is past b going forward, in [0, 2^24): for windows of
 * PSNs, which may span more than half the PSN space (a flow's PSNs seen
 * so far; a READ of 2 GiB or more), where jct_psn_diff()'s order no longer
 * holds. */
static inline uint32_t psn_ahead(uint32_t a, uint32_t b) {
  return (uint32_t)jct_psn_diff(a, b) & JCT_PSN_MASK;
}

static inline uint64_t elapsed(uint64_t from, uint64_t to) {
  return to > from ? to - from : 0;
}

static void emit_ahead(const struct ctx *c, jct_event_type_t type, uint32_t psn, uint64_t value,
                       uint64_t dur_ns, uint32_t nak_ahead) {
  const jct_inspect_opts_t *o = &c->ins->opts;
  if (!o->on_event) return;
  jct_event_t ev = {.type = type,
                    .ts_ns = c->ts_ns,
                    .frame_no = c->frame_no,
                    .flow = c->fi,
                    .link = -1,
                    .psn = psn,
                    .value = value,
                    .dur_ns = dur_ns,
                    .nak_ahead_psns = nak_ahead};
  o->on_event(&ev, o->arg);
}

static void emit(const struct ctx *c, jct_event_type_t type, uint32_t psn, uint64_t value,
                 uint64_t dur_ns) {
  emit_ahead(c, type, psn, value, dur_ns, 0);
}

int jct_inspect_new(jct_inspect_t **out, const jct_inspect_opts_t *opts) {
  *out = NULL;
  jct_inspect_t *ins = calloc(1, sizeof *ins);
  if (!ins) return JCT_ENOMEM;
  if (opts) ins->opts = *opts;
  ins->links.rate_bps = ins->opts.link_rate_bps ? ins->opts.link_rate_bps : DEFAULT_RATE_BPS;
  ins->last = -1;
  *out = ins;
  return 0;
}

const jct_inspect_opts_t *jct__inspect_opts(const jct_inspect_t *ins) {
  return &ins->opts;
}

long jct__inspect_last_flow(const jct_inspect_t *ins) {
  return ins->last;
}

const uint64_t *jct__inspect_go_backs(const jct_inspect_t *ins, size_t *n) {
  *n = ins->prof.go_back.n;
  return ins->prof.go_back.v;
}

void jct_inspect_free(jct_inspect_t *ins) {
  if (!ins) return;
  for (size_t i = 0; i < ins->nflows; i++) {
    jct__opcount_free(&ins->flows[i].ops);
    jct__holes_free(ins->flows[i].holes);
  }
  jct__prof_free(&ins->prof);
  free(ins->flows);
  free(ins->rings);
  jct__links_free(&ins->links);
  jct__ftab_free(&ins->ftab);
  jct__ftab_free(&ins->ptab);
  free(ins);
}

static void make_key(jct_flow_key_t *k, const jct_addr_t *src, const jct_addr_t *dst, uint32_t qp) {
  memset(k, 0, sizeof *k);
  k->src = *src;
  k->dst = *dst;
  k->dest_qp = qp;
}

/* The hash of the address pair src -> dst in the pair table. */
static uint32_t pair_hash(const jct_addr_t *src, const jct_addr_t *dst) {
  jct_flow_key_t k;
  make_key(&k, src, dst, PAIR_QP);
  return jct__ftab_hash(&k);
}

/* The first flow from src to dst, or -1. */
static long pair_head(const jct_inspect_t *ins, const jct_addr_t *src, const jct_addr_t *dst,
                      uint32_t h) {
  jct_flow_key_t k;
  make_key(&k, src, dst, PAIR_QP);
  return jct__ftab_find_pair(&ins->ptab, &k, h, ins->flows, sizeof *ins->flows);
}

static long flow_new(jct_inspect_t *ins, const jct_flow_key_t *k, uint32_t h) {
  if (ins->nflows >= UINT32_MAX - 1 ||
      jct__grow((void **)&ins->flows, &ins->capflows, ins->nflows, sizeof *ins->flows))
    return -1;
  uint32_t ph = pair_hash(&k->src, &k->dst);
  long head = pair_head(ins, &k->src, &k->dst, ph);
  size_t fi = ins->nflows;
  /* Room in both tables first, so that neither insert can fail. */
  if ((head < 0 && jct__ftab_reserve(&ins->ptab)) || jct__ftab_reserve(&ins->ftab)) return -1;
  if (head < 0) jct__ftab_insert(&ins->ptab, ph, fi);
  jct__ftab_insert(&ins->ftab, h, fi);
  ins->nflows++;
  struct flow *f = &ins->flows[fi];
  memset(f, 0, sizeof *f);
  f->pub.key = *k;
  f->pub.peer = -1;
  f->pair_tail = (uint32_t)fi;
  f->link = head >= 0 ? ins->flows[head].link : ins->npairs++;
  if (head >= 0) {
    struct flow *hf = &ins->flows[head];
    ins->flows[hf->pair_tail].pair_next1 = (uint32_t)fi + 1;
    hf->pair_tail = (uint32_t)fi;
  }
  return (long)fi;
}

static long flow_of(jct_inspect_t *ins, const jct_packet_t *pkt) {
  uint32_t qp = pkt->roce.bth.dest_qp;
  if (ins->last >= 0) {
    const jct_flow_key_t *k = &ins->flows[ins->last].pub.key;
    if (k->dest_qp == qp && jct_addr_eq(&k->src, &pkt->src) && jct_addr_eq(&k->dst, &pkt->dst))
      return ins->last;
  }
  jct_flow_key_t k;
  make_key(&k, &pkt->src, &pkt->dst, qp);
  uint32_t h = jct__ftab_hash(&k);
  long fi = jct__ftab_find(&ins->ftab, &k, h, ins->flows, sizeof *ins->flows);
  if (fi < 0) fi = flow_new(ins, &k, h);
  if (fi >= 0) ins->last = fi;
  return fi;
}

/* Pair ACK flow fi with the unpaired data flow in the other direction
 * whose seen PSN range holds the acknowledged psn, if there is one. */
static void try_pair(jct_inspect_t *ins, long fi, uint32_t psn, bool seq_err) {
  const jct_flow_key_t *k = &ins->flows[fi].pub.key;
  long head = pair_head(ins, &k->dst, &k->src, pair_hash(&k->dst, &k->src));
  for (long d = head; d >= 0; d = (long)ins->flows[d].pair_next1 - 1) {
    struct flow *df = &ins->flows[d];
    if (d == fi || df->pub.peer >= 0 || !df->data_seen) continue;
    const jct_flow_stats_t *s = &df->pub.st;
    /* A NAK may name a PSN before the first the capture saw on the flow:
     * its first packets were lost before the capture point (up to a
     * window of them, rxe's 128). */
    bool before_first = seq_err && jct_psn_diff(psn, s->psn_first) < 0 &&
                        jct_psn_diff(s->psn_first, psn) <= NAK_BEFORE_FIRST_PSNS;
    if (before_first || psn_ahead(psn, s->psn_first) <= psn_ahead(s->psn_highest, s->psn_first)) {
      df->pub.peer = fi;
      ins->flows[fi].pub.peer = d;
      return;
    }
  }
}

/* An ACK, or a NAK for a PSN sequence error (which acknowledges every PSN
 * before the one it names, IBA), for data flow df: ACK coalescing, and the
 * NAK noted on the hole it names. Errors: JCT_ENOMEM. */
static int acked(const struct ctx *c, struct flow *df, uint32_t psn, bool seq_err) {
  const jct_flow_stats_t *ds = &df->pub.st;
  if (!df->acked) df->acked_psn = jct_psn_add(ds->psn_first, JCT_PSN_MASK); /* none yet */
  df->acked = true;
  uint32_t upto = seq_err ? jct_psn_add(psn, JCT_PSN_MASK) : psn;
  int32_t d = jct_psn_diff(upto, df->acked_psn);
  if (d > 0) { /* not a duplicate */
    if (!seq_err) jct__prof_acked(&c->ins->prof, (uint64_t)d);
    df->acked_psn = upto;
  }
  if (seq_err && jct_psn_diff(psn, ds->psn_highest) <= 0) /* where the requester was: */
    return jct__holes_nak(&df->holes, psn, c->ts_ns,
                          df->rewinding ? df->last_psn : ds->psn_highest);
  return 0;
}

static int on_aeth(const struct ctx *c, struct flow *f) {
  const jct_packet_t *pkt = c->pkt;
  jct_flow_stats_t *s = &f->pub.st;
  uint8_t syn = pkt->roce.aeth.syndrome;
  uint32_t psn = pkt->roce.bth.psn & JCT_PSN_MASK;
  bool nak = true, seq_err = false;
  switch (jct_aeth_type(syn)) {
  case JCT_AETH_ACK:
    s->acks++;
    nak = false;
    break;
  case JCT_AETH_RNR_NAK:
    s->nak_rnr++;
    break;
  case JCT_AETH_NAK:
    if (jct_aeth_value(syn) == JCT_NAK_PSN_SEQ_ERR)
      s->nak_seq_err++, seq_err = true;
    else
      s->nak_other++;
    break;
  default: /* reserved: neither */
    return 0;
  }
  if (f->pub.peer < 0) try_pair(c->ins, c->fi, psn, seq_err);
  struct flow *df = f->pub.peer >= 0 ? &c->ins->flows[f->pub.peer] : NULL;
  if (df && (!nak || seq_err) && acked(c, df, psn, seq_err) < 0) return JCT_ENOMEM;
  if (!nak) return 0;
  if (df) df->nak_pending = true;
  emit(c, JCT_EV_NAK, psn, syn, 0);
  return 0;
}

/* The message each opcode kind starts: one table for the inspector and
 * the schedule inference (jct__msg_kind(), inspect_int.h). */
static const int8_t msg_kind_of[] = {
    [JCT_OPK_SEND] = JCT_MSG_SEND,
    [JCT_OPK_WRITE] = JCT_MSG_WRITE,
    [JCT_OPK_READ_REQ] = JCT_MSG_READ_REQ,
    [JCT_OPK_READ_RESP] = JCT_MSG_READ_RESP,
    [JCT_OPK_ACK] = -1,
    [JCT_OPK_ATOMIC] = JCT_MSG_ATOMIC,
    [JCT_OPK_ATOMIC_ACK] = -1,
    [JCT_OPK_CNP] = -1,
};

int jct__msg_kind(uint8_t op_kind) {
  return op_kind < sizeof msg_kind_of ? msg_kind_of[op_kind] : -1;
}

/* PSNs after a READ request at most its responses can take, less one. */
static uint32_t read_slack(const jct_packet_t *pkt) {
  uint32_t len = pkt->roce.reth.dma_len_bytes;
  uint32_t n = len ? (len - 1) / MIN_MTU_BYTES + 1 : 1;
  return n - 1;
}

static struct ring *ring_of(jct_inspect_t *ins, const struct flow *f) {
  return &ins->rings[f->ring1 - 1];
}

/* Lend f a ring, a free one if there is one. Errors: JCT_ENOMEM. */
static int ring_take(jct_inspect_t *ins, struct flow *f) {
  uint32_t r1 = ins->free_ring1;
  if (r1) {
    ins->free_ring1 = ins->rings[r1 - 1].psn[0];
  } else {
    if (ins->nrings >= UINT32_MAX - 1 ||
        jct__grow((void **)&ins->rings, &ins->caprings, ins->nrings, sizeof *ins->rings))
      return JCT_ENOMEM;
    r1 = (uint32_t)++ins->nrings;
  }
  f->ring1 = r1;
  f->ring_head = f->ring_len = 0;
  return 0;
}

/* Forget the oldest start; an empty ring goes back to the pool. */
static void ring_pop(jct_inspect_t *ins, struct flow *f) {
  f->ring_head = (uint8_t)((f->ring_head + 1) % MSG_RING);
  if (--f->ring_len) return;
  ring_of(ins, f)->psn[0] = ins->free_ring1;
  ins->free_ring1 = f->ring1;
  f->ring1 = 0;
}

/* Remember the first transmission of a FIRST packet the responder did not
 * take. Errors: JCT_ENOMEM (no ring could be had). */
static int ring_push(jct_inspect_t *ins, struct flow *f, uint32_t psn, uint64_t ts_ns) {
  if (!f->ring1 && ring_take(ins, f) < 0) return JCT_ENOMEM;
  struct ring *r = ring_of(ins, f);
  if (f->ring_len == MSG_RING) { /* forget the oldest, remember that we did */
    f->ring_lost = true;
    f->ring_lost_hi = r->psn[f->ring_head];
    f->ring_head = (uint8_t)((f->ring_head + 1) % MSG_RING);
    f->ring_len--;
  }
  unsigned i = (f->ring_head + f->ring_len) % MSG_RING;
  r->psn[i] = psn;
  r->ns[i] = ts_ns;
  f->ring_len++;
  return 0;
}

/* The start of the message whose FIRST packet psn the responder accepts.
 * fresh: this is the packet's first transmission (already counted as a
 * message started), so the message starts now. Otherwise its first
 * transmission's time, or now when that was not seen (and then the
 * message starts now, counted as started). Starts before psn are
 * forgotten: the responder will not take those packets any more. */
static uint64_t message_start(jct_inspect_t *ins, struct flow *f, uint32_t psn, int kind,
                              bool fresh, uint64_t now_ns) {
  while (f->ring_len && jct_psn_diff(psn, ring_of(ins, f)->psn[f->ring_head]) > 0)
    ring_pop(ins, f);
  if (fresh) return now_ns;
  if (f->ring_len && ring_of(ins, f)->psn[f->ring_head] == psn) {
    uint64_t t = ring_of(ins, f)->ns[f->ring_head];
    ring_pop(ins, f);
    return t;
  }
  bool counted = f->ring_lost && jct_psn_diff(psn, f->ring_lost_hi) <= 0;
  if (f->ring_lost && jct_psn_diff(psn, f->ring_lost_hi) > 0) f->ring_lost = false;
  if (!counted) f->pub.st.messages[kind]++;
  return now_ns;
}

/* The responder's view: psn is the next PSN it takes. */
static void accept(const struct ctx *c, struct flow *f, const struct jct_opcode_info *op,
                   uint32_t psn, int kind, bool fresh) {
  jct_flow_stats_t *s = &f->pub.st;
  f->expected = jct_psn_add(psn, 1);
  f->acc_slack = op->kind == JCT_OPK_READ_REQ ? read_slack(c->pkt) : 0;
  if (kind < 0) return;
  if (op->pos & JCT_POS_FIRST) {
    f->asm_open = true;
    f->asm_kind = (uint8_t)kind;
    f->asm_psn = psn;
    f->asm_start_ns = message_start(c->ins, f, psn, kind, fresh, c->ts_ns);
    f->asm_bytes = 0;
  } else if (!f->asm_open || f->asm_kind != kind) {
    f->asm_open = false; /* middle of a message we did not see start */
    return;
  }
  f->asm_bytes += c->pkt->payload_bytes;
  if (!(op->pos & JCT_POS_LAST)) return;
  uint64_t dur = elapsed(f->asm_start_ns, c->ts_ns);
  if (!s->messages_completed || dur < s->msg_time_min_ns) s->msg_time_min_ns = dur;
  if (dur > s->msg_time_max_ns) s->msg_time_max_ns = dur;
  s->messages_completed++;
  s->last_done_ns = c->ts_ns;
  s->message_bytes += f->asm_bytes;
  s->msg_time_sum_ns += dur;
  f->asm_open = false;
  emit(c, JCT_EV_MSG_DONE, f->asm_psn, f->asm_bytes, dur);
}

/* Holes at n PSNs from psn on, seen now. Errors: JCT_ENOMEM. */
static int open_holes(const struct ctx *c, struct flow *f, uint32_t psn, uint32_t n) {
  for (uint32_t i = 0; i < n && i < HOLES_PER_SKIP; i++)
    if (jct__holes_open(&f->holes, jct_psn_add(psn, i), c->ts_ns)) return JCT_ENOMEM;
  return 0;
}

/* A retransmission of psn: when it fills a hole, that loss is recovered. */
static void resent(const struct ctx *c, struct flow *f, uint32_t psn) {
  jct__hole_t h;
  if (!jct__holes_take(f->holes, psn, &h)) return;
  uint64_t dur = elapsed(h.seen_ns, c->ts_ns);
  f->holes->recovered++;
  f->holes->recovery_ns += dur;
  jct__prof_resent(&c->ins->prof, &h, c->ts_ns, f->reach_psn, f->run_timeout);
  int32_t ahead = h.has_nak && !h.from_nak ? jct_psn_diff(h.hi_at_nak, h.psn) : 0;
  emit_ahead(c, JCT_EV_HOLE_RESENT, psn, h.has_nak ? elapsed(h.nak_ns, c->ts_ns) : 0, dur,
             ahead > 0 ? (uint32_t)ahead : 0);
}

/* A timeout episode: how long the flow had heard nothing, neither its own
 * packets nor an ACK or NAK on its peer. */
static uint64_t timed_out(const struct ctx *c, const struct flow *f) {
  uint64_t last = c->prev_ns;
  if (f->pub.peer >= 0) {
    const jct_flow_stats_t *ps = &c->ins->flows[f->pub.peer].pub.st;
    if (ps->packets && ps->last_ns > last) last = ps->last_ns;
  }
  if (c->ts_ns < last) return 0;
  jct__prof_timeout(&c->ins->prof, c->ts_ns - last);
  return c->ts_ns - last;
}

static int on_data(const struct ctx *c, struct flow *f, const struct jct_opcode_info *op) {
  const jct_packet_t *pkt = c->pkt;
  jct_flow_stats_t *s = &f->pub.st;
  uint32_t psn = pkt->roce.bth.psn & JCT_PSN_MASK;
  int kind = jct__msg_kind(op->kind);
  bool resync = op->kind == JCT_OPK_READ_RESP && (op->pos & JCT_POS_FIRST);
  bool continues = f->data_seen && !(op->pos & JCT_POS_FIRST) && psn == jct_psn_add(f->last_psn, 1);
  /* PSNs a READ request just before (the highest) may have used. */
  uint32_t gap_slack = f->data_seen && f->last_psn == s->psn_highest ? f->last_slack : 0;
  bool fresh, acc;

  if (!f->data_seen) {
    f->data_seen = true;
    s->psn_first = s->psn_highest = psn;
    fresh = acc = true;
  } else {
    int32_t d = jct_psn_diff(psn, s->psn_highest);
    fresh = d > 0;
    acc = psn_ahead(psn, f->expected) <= f->acc_slack ||
          (resync && jct_psn_diff(psn, f->expected) >= 0);
    if (!fresh) {
      s->retransmitted_packets++;
      s->retransmitted_bytes += pkt->payload_bytes;
      /* A rewind is any step back: the first retransmission after new
       * packets, or a second go-back while one is under way (a NAK for a
       * packet lost again). The recovery time runs from the first. */
      if (!f->rewinding || jct_psn_diff(psn, f->last_psn) <= 0) {
        /* Its depth runs to where the requester was: the highest PSN,
         * or, when it cuts a go-back short, the last that one re-sent. */
        f->reach_psn = f->rewinding ? f->last_psn : s->psn_highest;
        uint64_t ahead = (uint64_t)(-(int64_t)jct_psn_diff(psn, f->reach_psn)) + 1u; /* <= 2^23 */
        if (!f->rewinding) f->rewind_ns = c->ts_ns;
        f->rewinding = true;
        f->run_timeout = !f->nak_pending;
        uint64_t idle = 0;
        if (f->nak_pending) {
          s->rewinds++;
        } else {
          s->timeouts++;
          idle = timed_out(c, f);
        }
        emit(c, f->nak_pending ? JCT_EV_REWIND : JCT_EV_TIMEOUT, psn, ahead, idle);
        f->nak_pending = false;
      } else {
        /* Forward within a go-back: PSNs it skipped were re-sent and lost. */
        uint32_t step = psn_ahead(psn, f->last_psn);
        if (step > 1 + f->last_slack &&
            open_holes(c, f, jct_psn_add(f->last_psn, 1 + f->last_slack), step - 1 - f->last_slack))
          return JCT_ENOMEM;
      }
      resent(c, f, psn);
    } else {
      if (f->rewinding) {
        /* New PSNs before the go-back reached the highest: the rest of
         * what it re-sent was lost. */
        uint32_t left = psn_ahead(s->psn_highest, f->last_psn);
        if (left > f->last_slack &&
            open_holes(c, f, jct_psn_add(f->last_psn, 1 + f->last_slack), left - f->last_slack))
          return JCT_ENOMEM;
        uint64_t dur = elapsed(f->rewind_ns, c->ts_ns);
        f->rewinding = false;
        s->recovery_ns += dur;
        emit(c, JCT_EV_RECOVERED, psn, 0, dur);
      }
      if ((uint32_t)d - 1 > gap_slack && !resync) {
        uint32_t missing = (uint32_t)d - 1 - gap_slack;
        uint32_t hole = jct_psn_add(s->psn_highest, 1 + gap_slack);
        s->gaps++;
        s->gap_psns += missing;
        emit(c, JCT_EV_GAP, hole, missing, 0);
        if (open_holes(c, f, hole, missing)) return JCT_ENOMEM;
      }
      s->psn_highest = psn;
    }
  }
  /* A message starts with the first transmission of its FIRST packet; its
   * start waits in the ring only when the responder cannot take it now. */
  bool starts = fresh && kind >= 0 && (op->pos & JCT_POS_FIRST);
  if (starts) {
    s->messages[kind]++;
    if (!acc && ring_push(c->ins, f, psn, c->ts_ns) < 0) return JCT_ENOMEM;
  }
  f->last_slack = op->kind == JCT_OPK_READ_REQ ? read_slack(pkt) : 0;
  f->last_psn = psn;
  jct__prof_data(&c->ins->prof, f->link, pkt, c->ts_ns, c->wire_len, continues);
  if (acc) accept(c, f, op, psn, kind, starts);
  return 0;
}

static int on_roce(struct ctx *c, uint32_t wire_len) {
  jct_inspect_t *ins = c->ins;
  const jct_packet_t *pkt = c->pkt;
  long fi = flow_of(ins, pkt);
  if (fi < 0) return JCT_ENOMEM;
  c->fi = fi;
  struct flow *f = &ins->flows[fi];
  jct_flow_stats_t *s = &f->pub.st;
  uint8_t opcode = pkt->roce.bth.opcode;
  c->prev_ns = s->packets ? s->last_ns : c->ts_ns;
  c->wire_len = wire_len;
  if (!s->packets || c->ts_ns < s->first_ns) s->first_ns = c->ts_ns;
  if (c->ts_ns > s->last_ns) s->last_ns = c->ts_ns;
  s->packets++;
  s->wire_bytes += wire_len;
  s->payload_bytes += pkt->payload_bytes;
  if (jct__opcount_add(&f->ops, opcode) < 0) return JCT_ENOMEM;
  f->pub.pcp = pkt->pcp;
  f->pub.dscp = pkt->dscp;

  if (!pkt->icrc_checked) {
    ins->tot.icrc_unchecked++;
  } else if (!pkt->icrc_ok) {
    s->bad_icrc++;
    emit(c, JCT_EV_BAD_ICRC, pkt->roce.bth.psn & JCT_PSN_MASK, pkt->icrc, 0);
    return 0;
  }
  if (pkt->ecn == JCT_ECN_CE) {
    s->ecn_ce++;
    emit(c, JCT_EV_ECN_CE, pkt->roce.bth.psn & JCT_PSN_MASK, 0, 0);
  }
  const struct jct_opcode_info *op = pkt->op ? pkt->op : jct_opcode_info(opcode);
  if (!op) return 0;
  switch (op->kind) {
  case JCT_OPK_ACK:
  case JCT_OPK_ATOMIC_ACK:
    return on_aeth(c, f);
  case JCT_OPK_CNP:
    s->cnps++;
    emit(c, JCT_EV_CNP, pkt->roce.bth.psn & JCT_PSN_MASK, 0, 0);
    break;
  default:
    return on_data(c, f, op);
  }
  return 0;
}

int jct_inspect_add(jct_inspect_t *ins, const jct_packet_t *pkt, uint64_t ts_ns, uint64_t frame_no,
                    uint32_t wire_len) {
  jct_totals_t *t = &ins->tot;
  if (!t->frames || ts_ns < t->first_ns) t->first_ns = ts_ns;
  if (ts_ns > t->last_ns) t->last_ns = ts_ns;
  t->frames++;
  t->wire_bytes += wire_len;
  struct ctx c = {.ins = ins, .pkt = pkt, .ts_ns = ts_ns, .frame_no = frame_no, .fi = -1};
  switch (pkt->kind) {
  case JCT_PKT_ROCE:
    t->roce_packets++;
    t->opcode_packets[pkt->roce.bth.opcode]++;
    return on_roce(&c, wire_len);
  case JCT_PKT_PFC:
    t->pfc_frames++;
    return jct__links_add(&ins->links, pkt, ts_ns, frame_no, ins->opts.on_event, ins->opts.arg);
  case JCT_PKT_OTHER:
    t->other_frames++;
    break;
  case JCT_PKT_MALFORMED:
    t->malformed_frames++;
    break;
  }
  if ((unsigned)pkt->reason < JCT_REASON__COUNT) t->by_reason[pkt->reason]++;
  return 0;
}

void jct_inspect_finish(jct_inspect_t *ins) {
  jct_totals_t *t = &ins->tot;
  t->messages = t->messages_completed = 0;
  t->acks = t->nak_seq_err = t->nak_rnr = t->nak_other = 0;
  t->retransmitted_packets = t->retransmitted_bytes = 0;
  t->gaps = t->gap_psns = t->rewinds = t->timeouts = t->recovery_ns = 0;
  t->losses_recovered = t->loss_recovery_ns = 0;
  t->cnps = t->ecn_ce = t->bad_icrc = 0;
  t->paused_ns = t->pause_frames_xoff = t->pause_frames_xon = 0;
  for (size_t i = 0; i < ins->nflows; i++) {
    const jct_flow_stats_t *s = &ins->flows[i].pub.st;
    for (int k = 0; k < JCT_MSG__COUNT; k++)
      t->messages += s->messages[k];
    t->messages_completed += s->messages_completed;
    t->acks += s->acks;
    t->nak_seq_err += s->nak_seq_err;
    t->nak_rnr += s->nak_rnr;
    t->nak_other += s->nak_other;
    t->retransmitted_packets += s->retransmitted_packets;
    t->retransmitted_bytes += s->retransmitted_bytes;
    t->gaps += s->gaps;
    t->gap_psns += s->gap_psns;
    t->rewinds += s->rewinds;
    t->timeouts += s->timeouts;
    t->recovery_ns += s->recovery_ns;
    if (ins->flows[i].holes) {
      t->losses_recovered += ins->flows[i].holes->recovered;
      t->loss_recovery_ns += ins->flows[i].holes->recovery_ns;
    }
    t->cnps += s->cnps;
    t->ecn_ce += s->ecn_ce;
    t->bad_icrc += s->bad_icrc;
  }
  jct__links_finish(&ins->links, t);
}

const jct_totals_t *jct_inspect_totals(const jct_inspect_t *ins) {
  return &ins->tot;
}

size_t jct_inspect_nflows(const jct_inspect_t *ins) {
  return ins->nflows;
}

const jct_flow_t *jct_inspect_flow(const jct_inspect_t *ins, size_t i) {
  return i < ins->nflows ? &ins->flows[i].pub : NULL;
}

size_t jct_inspect_flow_opcodes(const jct_inspect_t *ins, size_t i, jct_opcode_count_t out[256]) {
  return i < ins->nflows ? jct__opcount_get(&ins->flows[i].ops, out) : 0;
}

size_t jct_inspect_nlinks(const jct_inspect_t *ins) {
  return ins->links.n;
}

const jct_link_t *jct_inspect_link(const jct_inspect_t *ins, size_t i) {
  return jct__links_get(&ins->links, i);
}

uint64_t jct_inspect_link_rate_bps(const jct_inspect_t *ins) {
  return ins->links.rate_bps;
}

void jct_inspect_flow_losses(const jct_inspect_t *ins, size_t i, uint64_t *recovered,
                             uint64_t *recovery_ns) {
  const jct__holes_t *h = i < ins->nflows ? ins->flows[i].holes : NULL;
  *recovered = h ? h->recovered : 0;
  *recovery_ns = h ? h->recovery_ns : 0;
}

int jct_inspect_profile(const jct_inspect_t *ins, jct_profile_t **out) {
  return jct__prof_result(&ins->prof, out);
}
