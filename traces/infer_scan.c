/* Schedule inference, first part: one streaming pass over a capture that
 * collects messages (first transmissions) and the packets lost from them.
 *
 * Each frame is decoded (decode.h) and handed to the inspector (inspect.h),
 * whose events say, in its definitions, where PSNs went missing at the
 * capture point (gap), where a requester went back (rewind after a NAK, or
 * timeout) and when a message was completely accepted (msg_done). Events of
 * one frame are held until the frame is done, then applied: gaps first
 * (they come before the packet's PSN), then the packet, then the rest. A
 * message is one distinct FIRST (or ONLY) PSN per flow, whether seen in its
 * first transmission or, when that was lost, in a retransmission; it starts
 * at its first transmission (for a lost one, when the gap showed, or just
 * before its PSN successor when that went earlier: send_order()). LAST
 * packets, first transmission or not, close the message holding them.
 * What was lost is worked out in infer_loss.c.
 * CM MADs (QP 1) never reach the inspector: they are control traffic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/grow.h"
#include "infer_int.h"
#include "inspect_int.h"
#include "jctlab/error.h"
#include "jctlab/trace.h"

#define U_BASE JCT__U_BASE
#define GSI_QP 1u /* CM MADs go to QP 1 */
#define IPPROTO_TCP_NUM 6

typedef struct {
  jct__iscan_t *sc;
  jct_event_t *ev;
  size_t nev, capev;
  int oom;
} scan_ctx_t;

/* psn unwrapped: the nearest to the flow's highest PSN, ahead by up to
 * 2^23 - 1 or behind by up to 2^23 (hi_u >= U_BASE > 2^23). */
static uint64_t unwrap(const jct__iflow_t *f, uint32_t psn) {
  return (uint64_t)((int64_t)f->hi_u + jct_psn_diff(psn, f->hi));
}

static void on_event(const jct_event_t *ev, void *arg) {
  scan_ctx_t *c = arg;
  if (jct__grow((void **)&c->ev, &c->capev, c->nev, sizeof *c->ev)) {
    c->oom = 1;
    return;
  }
  c->ev[c->nev++] = *ev;
}

/* Index in f->msgs of the last message starting at or before u, or -1. */
static long msg_pos(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u) {
  size_t lo = 0, hi = f->nmsgs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sc->msgs[f->msgs[mid]].first_u <= u)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (long)lo - 1;
}

/* For the transmit stalls (infer_stall.c): a first transmission of flow fi
 * (u unwrapped) at ts_ns, with the oldest PSN then unacknowledged; an ACK
 * or NAK of flow fi leaving una_u the oldest unacknowledged. */
static int stall_send(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t ts_ns) {
  jct__iflow_t *f = &sc->flows[fi];
  if (jct__grow((void **)&f->fresh, &f->capfresh, f->nfresh, sizeof *f->fresh)) return JCT_ENOMEM;
  f->fresh[f->nfresh++] =
      (struct jct__isend){.u = u, .ts_ns = ts_ns, .una_u = f->una_u ? f->una_u : JCT__U_BASE};
  return 0;
}

static void stall_ack(jct__iscan_t *sc, uint32_t fi, uint64_t una_u) {
  jct__iflow_t *f = &sc->flows[fi];
  if (una_u > f->una_u) f->una_u = una_u;
}

long jct__iscan_msg_at(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u) {
  long p = msg_pos(sc, f, u);
  return p < 0 ? -1 : (long)f->msgs[p];
}

/* The message whose FIRST packet is u, made when there is none yet. */
static long msg_first(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t start_ns, int kind) {
  jct__iflow_t *f = &sc->flows[fi];
  long p = msg_pos(sc, f, u);
  if (p >= 0 && sc->msgs[f->msgs[p]].first_u == u) return (long)f->msgs[p];
  if (jct__grow((void **)&sc->msgs, &sc->capmsgs, sc->nmsgs, sizeof *sc->msgs) ||
      jct__grow((void **)&f->msgs, &f->capmsgs, f->nmsgs, sizeof *f->msgs))
    return -1;
  size_t at = (size_t)(p + 1);
  long lost = jct__iloss_at(sc, f, u); /* its first transmission was lost: when it showed */
  jct__imsg_t *m = &sc->msgs[sc->nmsgs];
  memset(m, 0, sizeof *m);
  m->flow = fi;
  m->first_u = m->last_u = u;
  m->start_ns = lost >= 0 && sc->faults[lost].ts_ns < start_ns ? sc->faults[lost].ts_ns : start_ns;
  m->done_ns = JCT__NEVER;
  m->kind = (uint8_t)kind;
  memmove(&f->msgs[at + 1], &f->msgs[at], (f->nmsgs - at) * sizeof *f->msgs);
  f->msgs[at] = (uint32_t)sc->nmsgs;
  f->nmsgs++;
  return (long)sc->nmsgs++;
}

/* One more send of unwrapped PSN u on flow f, before f->hi_u takes it
 * (a fault's copy counts them: infer_loss.c): a ring of the last
 * JCT__SENT_WINDOW PSNs, cleared as the highest PSN moves on. */
static int count_send(jct__iflow_t *f, uint64_t u) {
  if (!f->sent && !(f->sent = calloc(JCT__SENT_WINDOW, sizeof *f->sent))) return JCT_ENOMEM;
  for (uint64_t v = f->hi_u + 1, n = 0; v <= u && n < JCT__SENT_WINDOW; v++, n++)
    f->sent[v % JCT__SENT_WINDOW] = 0; /* PSNs not sent before (hi_u is 0 before the first) */
  uint8_t *c = &f->sent[u % JCT__SENT_WINDOW];
  if (*c < UINT8_MAX) (*c)++;
  return 0;
}

static int on_packet(jct__iscan_t *sc, uint32_t fi, const jct_packet_t *pkt, uint64_t ts_ns) {
  jct__iflow_t *f = &sc->flows[fi];
  const struct jct_opcode_info *op = pkt->op;
  int kind = jct__msg_kind(op->kind);
  if (kind < 0 || (pkt->icrc_checked && !pkt->icrc_ok)) return 0; /* the receiver drops it */
  uint32_t psn = pkt->roce.bth.psn & JCT_PSN_MASK;
  bool fresh = !f->seen || jct_psn_diff(psn, f->hi) > 0;
  uint64_t u;
  if (!f->seen) {
    f->seen = true;
    f->psn0 = psn;
    f->epsn_u = u = U_BASE;
  } else {
    u = unwrap(f, psn);
  }
  if (count_send(f, u)) return JCT_ENOMEM;
  if (fresh) f->hi = psn, f->hi_u = u;
  if (fresh && stall_send(sc, fi, u, ts_ns)) return JCT_ENOMEM;
  if (!fresh && f->last_retx &&
      u > f->last_u + 1) { /* re-sent PSNs lost before the capture point */
    if (jct__iloss_retx_skip(sc, fi, f->last_u + 1, u, ts_ns)) return JCT_ENOMEM;
    f = &sc->flows[fi];
  }
  f->last_u = u;
  f->last_retx = !fresh;
  if (u == f->epsn_u) f->epsn_u++; /* in order: the responder takes it */
  long mi;
  if (op->pos & JCT_POS_FIRST) {
    mi = msg_first(sc, fi, u, ts_ns, kind);
    if (mi < 0) return JCT_ENOMEM;
    jct__imsg_t *m = &sc->msgs[mi];
    if (op->ext & JCT_EXT_RETH) m->has_reth = true, m->reth_len = pkt->roce.reth.dma_len_bytes;
    if (fresh || !m->first_payload) m->first_payload = pkt->payload_bytes;
  } else {
    mi = jct__iscan_msg_at(sc, f, u);
    if (mi < 0) return 0; /* the middle of a message that started before the capture */
  }
  jct__imsg_t *m = &sc->msgs[mi];
  if (fresh) m->bytes_seen += pkt->payload_bytes;
  if (u > m->last_u) m->last_u = u;
  if (op->pos & JCT_POS_LAST) {
    m->last_u = u;
    m->last_seen = true;
    if (op->ext & JCT_EXT_IMMDT) {
      m->has_imm = true, m->imm = pkt->roce.immdt;
      if (m->imm != JCT_INFER_CTS_IMM) f->has_imm_msg = true;
    }
  }
  return 0;
}

static int on_flow_event(jct__iscan_t *sc, const jct_event_t *ev) {
  if (ev->flow < 0 || (size_t)ev->flow >= sc->nflows) return 0;
  uint32_t fi = (uint32_t)ev->flow;
  jct__iflow_t *f = &sc->flows[fi];
  if (!f->seen && ev->type != JCT_EV_MSG_DONE) return 0;
  uint64_t u = f->seen ? unwrap(f, ev->psn) : U_BASE;
  switch (ev->type) {
  case JCT_EV_GAP:
    return jct__iloss_gap(sc, fi, u, ev->value, ev->ts_ns);
  case JCT_EV_REWIND:
  case JCT_EV_TIMEOUT: {
    /* The event's depth ends where the requester was; what it goes on to
     * re-send ends at the highest PSN (a re-sent packet leaves hi_u). */
    uint64_t span = f->hi_u >= u ? f->hi_u - u + 1 : ev->value;
    if (jct__grow((void **)&sc->gobacks, &sc->capgobacks, sc->ngobacks, sizeof *sc->gobacks))
      return JCT_ENOMEM;
    sc->gobacks[sc->ngobacks++] = (jct__igoback_t){.flow = fi,
                                                   .u = u,
                                                   .ahead = ev->value,
                                                   .span = span,
                                                   .timer = ev->type == JCT_EV_TIMEOUT,
                                                   .ts_ns = ev->ts_ns,
                                                   .idle_ns = ev->dur_ns};
    if (ev->type == JCT_EV_TIMEOUT && jct__itimer_go_back(sc, fi)) return JCT_ENOMEM;
    return jct__iloss_rewind(sc, fi, u, span, ev->type == JCT_EV_TIMEOUT, ev->ts_ns);
  }
  case JCT_EV_HOLE_RESENT: { /* the go-back just recorded: its hole's NAK latencies */
    if (!sc->ngobacks) return 0;
    jct__igoback_t *g = &sc->gobacks[sc->ngobacks - 1];
    if (g->flow != fi || g->u != u || !ev->value) return 0;
    if (!g->timer) g->nak_to_resend_ns = ev->value;
    if (ev->dur_ns > ev->value)
      g->hole_to_nak_ns = ev->dur_ns - ev->value, g->nak_ahead = ev->nak_ahead_psns;
    return 0;
  }
  case JCT_EV_MSG_DONE: {
    uint64_t start = ev->ts_ns - ev->dur_ns;
    long mi = msg_first(sc, fi, u, start, JCT_MSG_SEND);
    if (mi < 0) return JCT_ENOMEM;
    jct__imsg_t *m = &sc->msgs[mi];
    if (m->done_ns == JCT__NEVER) m->done_ns = ev->ts_ns, m->bytes_done = ev->value;
    return 0;
  }
  default:
    return 0;
  }
}

/* Control traffic: what a job's schedule is not made of. */
static bool control(jct__iscan_t *sc, const jct_packet_t *pkt) {
  if (pkt->kind == JCT_PKT_OTHER) {
    if (pkt->reason == JCT_REASON_NOT_UDP && pkt->ip_proto == IPPROTO_TCP_NUM)
      sc->control_tcp++;
    else
      sc->control_other++;
    return true;
  }
  if (pkt->kind == JCT_PKT_ROCE && pkt->roce.bth.dest_qp == GSI_QP) {
    sc->control_cm++;
    return true;
  }
  return false;
}

/* What rxe's retransmit timer sees of the packet (infer_timer.c): a send
 * of its flow, after the frame's events (a timer go-back takes the
 * reference before its first packet starts the timer again), or an ACK or
 * NAK of the data flow it answers. */
static int timer_packet(jct__iscan_t *sc, jct_inspect_t *ins, uint32_t fi, const jct_packet_t *pkt,
                        uint64_t ts_ns) {
  const struct jct_opcode_info *op = pkt->op;
  if (!op || (pkt->icrc_checked && !pkt->icrc_ok)) return 0;
  if (op->kind == JCT_OPK_ACK) {
    long peer = jct_inspect_flow(ins, fi)->peer;
    uint8_t syn = pkt->roce.aeth.syndrome;
    enum jct_aeth_type t = jct_aeth_type(syn);
    if (peer < 0 || (size_t)peer >= sc->nflows || (t != JCT_AETH_ACK && t != JCT_AETH_NAK))
      return 0;
    if (sc->flows[peer]
            .seen) { /* an ACK leaves its PSN's successor unacknowledged, a NAK its own */
      uint64_t u = unwrap(&sc->flows[peer], pkt->roce.bth.psn & JCT_PSN_MASK);
      stall_ack(sc, (uint32_t)peer, t == JCT_AETH_ACK ? u + 1 : u);
    }
    return jct__itimer_ack(sc, (uint32_t)peer, pkt->roce.bth.psn, t == JCT_AETH_NAK, ts_ns);
  }
  if (jct__msg_kind(op->kind) < 0 || !sc->flows[fi].seen) return 0;
  return jct__itimer_data(sc, fi, !sc->flows[fi].last_retx, ts_ns);
}

static int frame(jct__iscan_t *sc, jct_inspect_t *ins, scan_ctx_t *c, const jct_packet_t *pkt,
                 const jct_record_t *rec) {
  sc->frames++;
  if (pkt->kind == JCT_PKT_PFC) sc->pfc_frames++;
  if (pkt->kind == JCT_PKT_MALFORMED) sc->malformed_frames++;
  if (control(sc, pkt)) return 0;
  c->nev = 0;
  if (jct_inspect_add(ins, pkt, rec->ts_ns, rec->frame_no, rec->wire_len) < 0 || c->oom)
    return JCT_ENOMEM;
  if (pkt->kind != JCT_PKT_ROCE) return 0;
  sc->roce_packets++;
  long fi = jct__inspect_last_flow(ins);
  if (fi < 0) return JCT_ENOMEM;
  while ((size_t)fi >= sc->nflows) {
    if (jct__grow((void **)&sc->flows, &sc->capflows, sc->nflows, sizeof *sc->flows))
      return JCT_ENOMEM;
    jct__iflow_t *nf = &sc->flows[sc->nflows];
    memset(nf, 0, sizeof *nf);
    nf->key = jct_inspect_flow(ins, sc->nflows)->key;
    sc->nflows++;
  }
  int rc = 0;
  for (size_t i = 0; i < c->nev && !rc; i++)
    if (c->ev[i].type == JCT_EV_GAP) rc = on_flow_event(sc, &c->ev[i]);
  if (!rc) rc = on_packet(sc, (uint32_t)fi, pkt, rec->ts_ns);
  for (size_t i = 0; i < c->nev && !rc; i++)
    if (c->ev[i].type != JCT_EV_GAP) rc = on_flow_event(sc, &c->ev[i]);
  if (!rc) rc = timer_packet(sc, ins, (uint32_t)fi, pkt, rec->ts_ns);
  return rc;
}

/* An RC requester sends its messages in PSN order (IBA 9.5; rxe_req.c
 * takes its send queue in order and gives each packet the next PSN): a
 * message whose first transmission the capture never saw (lost before the
 * capture point, known only from a NAK or its retransmission) was sent
 * before its PSN successor, not when its loss showed. Each flow's messages
 * (f->msgs, by unwrapped PSN: serial-number order from the flow's first
 * PSN, RFC 1982) get starts that never decrease: such a message starts
 * 1 ns before its successor. */
static void send_order(jct__iscan_t *sc) {
  for (size_t fi = 0; fi < sc->nflows; fi++) {
    const jct__iflow_t *f = &sc->flows[fi];
    for (size_t k = f->nmsgs; k-- > 1;) {
      jct__imsg_t *m = &sc->msgs[f->msgs[k - 1]];
      uint64_t next = sc->msgs[f->msgs[k]].start_ns;
      if (m->start_ns >= next) m->start_ns = next ? next - 1 : 0;
    }
  }
}

int jct__infer_scan(jct_trace_t *t, const char *path, jct__iscan_t *sc, char *err, size_t errlen) {
  int rc;
  scan_ctx_t c = {.sc = sc};
  jct_inspect_opts_t io = {.on_event = on_event, .arg = &c};
  jct_inspect_t *ins;
  if ((rc = jct_inspect_new(&ins, &io)) < 0)
    return jct__errf(err, errlen, rc, "%s: %s", path, jct_strerror(rc));
  const int linktype = jct_trace_linktype(t);
  jct_record_t rec;
  jct_packet_t pkt;
  uint64_t last_ts = 0;
  while ((rc = jct_trace_next(t, &rec, err, errlen)) == 1) {
    if (rec.ts_ns < last_ts) sc->frames_backwards++;
    last_ts = rec.ts_ns;
    jct_decode(linktype, rec.data, rec.caplen, rec.wire_len, &pkt);
    if ((rc = frame(sc, ins, &c, &pkt, &rec)) < 0) {
      jct__errf(err, errlen, rc, "%s: out of memory at frame %llu", path,
                (unsigned long long)rec.frame_no);
      break;
    }
  }
  if (rc >= 0 && (rc = jct__itimer_resolve(sc)) < 0)
    jct__errf(err, errlen, rc, "%s: out of memory", path);
  if (rc >= 0) {
    send_order(sc);
    jct_inspect_finish(ins);
    const jct_totals_t *tot = jct_inspect_totals(ins);
    sc->messages = tot->messages;
    sc->messages_completed = tot->messages_completed;
    sc->retransmitted_packets = tot->retransmitted_packets;
    if ((rc = jct_inspect_profile(ins, &sc->profile)) < 0)
      jct__errf(err, errlen, rc, "%s: out of memory", path);
    for (size_t fi = 0; fi < sc->nflows; fi++)
      sc->flows[fi].peer = jct_inspect_flow(ins, fi)->peer;
  }
  jct_inspect_free(ins);
  free(c.ev);
  return rc < 0 ? rc : 0;
}

void jct__iscan_free(jct__iscan_t *sc) {
  for (size_t i = 0; i < sc->nflows; i++) {
    free(sc->flows[i].msgs);
    free(sc->flows[i].faults);
    free(sc->flows[i].tev);
    free(sc->flows[i].sent);
    free(sc->flows[i].fresh);
  }
  free(sc->stalls);
  free(sc->qsends);
  free(sc->flows);
  free(sc->msgs);
  free(sc->faults);
  free(sc->gobacks);
  jct_profile_free(sc->profile);
  memset(sc, 0, sizeof *sc);
}
