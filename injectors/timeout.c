/* timeout: a requester's retransmit timer runs out at a packet, as when its
 * responder's ACKs come late.
 *
 *     timeout pkt=M:K[,M:K...] [qp=QPN | qp-order=N] [baseline=yes]
 *             [where=...] [port=N]
 *
 * When the first transmission of packet K (from 0) of message M (from 0)
 * of the QP passes, the injector drops every ACK (AETH syndrome ACK, IBA
 * 9.7.5.1) that its responder sends back for that packet or a later one
 * (the ACK's PSN at or after the packet's, up to the highest the QP has
 * sent), until the QP sends a PSN again: its go-back. The requester's
 * completer then hears nothing for that packet, and its retransmit timer
 * (IBA 9.7.6.1.2; Linux rxe's retrans_timer, rxe_comp.c) runs out and
 * sends it back to the oldest unacknowledged PSN, re-sending what it had
 * sent from there: a timeout with nothing lost. NAKs, RNR NAKs, other
 * ACKs and every request packet pass. Positions are counted over first
 * transmissions, anew every repetition (position.h, as drop's pkt= and
 * stall's): the QP named with qp=, or the first (qp-order=N: the N-th) QP
 * whose request packets passed where=, for devices that pick their QP
 * numbers (rxe). Each target acts once a repetition. A go-back that comes
 * before any ACK of the target is dropped (the host's own timing timed it
 * out first) still counts as its timeout. A requester with no retransmit
 * timer (--timeout 0: IBA's infinite Local ACK Timeout) never goes back:
 * its repetition does not finish and the run is invalid.
 *
 * where= must pass both directions: the QP's requests and its responder's
 * ACKs (the ACK goes from the request's destination address to its
 * source; the postmortem's specs say so, harness/plan/postmortem.c). It
 * acts where frames enter the switch (dir=in; dir=out is refused).
 *
 * A postmortem on verbs makes the capture's timer go-backs with nothing
 * lost (include/jctlab/infer.h: its hosts' late ACKs) happen in the lab's
 * rxe with it, baseline=yes, as uroce makes them itself (uroce.h's timer
 * go-backs, which hold those ACKs at the requester).
 */
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/wire.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/roce.h"
#include "position.h"
#include "spec_int.h"

#define TIMEOUT_MAX_TARGETS 64

typedef struct {
  uint32_t n;
  uint32_t msg[TIMEOUT_MAX_TARGETS], pkt[TIMEOUT_MAX_TARGETS];
  bool done[TIMEOUT_MAX_TARGETS]; /* its go-back came, this repetition */
  bool armed;                     /* a target's packet passed; its go-back has not come */
  uint32_t armed_target, armed_psn;
  uint8_t src[16], dst[16]; /* the QP's requests: their IP addresses (IPv4 in the first 4) */
  uint8_t addr_len;         /* 4 or 16; 0 before a request passed */
  jct__position_t at;
} timeout_t;

static int timeout_init(jct_injector_t *inj, jct_spec_t *spec, char *err, size_t errlen) {
  timeout_t t = {0};
  int rc;
  const char *pkts = jct_spec_get(spec, "pkt");
  if (!pkts)
    return jct__errf(err, errlen, JCT_EINVAL, "%s: timeout needs pkt= (%s)", spec->text,
                     jct_timeout_ops.usage);
  if ((rc = jct__spec_pkts(spec, "pkt", TIMEOUT_MAX_TARGETS, t.msg, t.pkt, &t.n, err, errlen)) < 0)
    return rc;
  if ((rc = jct__position_ingress_init(inj, &t.at, spec,
                                       "a timeout acts where frames enter the switch (dir=in)", err,
                                       errlen)) < 0)
    return rc;
  *(timeout_t *)inj->priv = t;
  return 0;
}

/* The frame's IP source and destination (4 or 16 bytes each); false when
 * it is not RoCEv2. */
static bool addrs(jct_frame_t *f, const uint8_t **src, const uint8_t **dst, uint8_t *len) {
  if (!jct_frame_roce(f)) return false;
  const uint8_t *ip = f->data + f->l3;
  if ((ip[0] >> 4) == 6) {
    *src = ip + 8, *dst = ip + 24, *len = 16;
  } else {
    *src = ip + 12, *dst = ip + 16, *len = 4;
  }
  return true;
}

/* Remember the QP's request addresses, from a request of it. */
static void learn_addrs(timeout_t *t, jct_frame_t *f) {
  const uint8_t *s, *d;
  uint8_t len;
  if (t->addr_len || !addrs(f, &s, &d, &len)) return;
  memcpy(t->src, s, len);
  memcpy(t->dst, d, len);
  t->addr_len = len;
}

/* An ACK from the QP's responder that acknowledges the armed packet or a
 * later one the QP has sent. */
static bool covers_armed(timeout_t *t, jct_frame_t *f) {
  const uint8_t *s, *d;
  uint8_t len;
  if (!t->addr_len || !addrs(f, &s, &d, &len) || len != t->addr_len) return false;
  const uint8_t *bth = f->data + f->udp + 8;
  if (bth[0] != JCT_OP_RC_ACKNOWLEDGE || f->udp_len < 8 + 12 + 4) return false;
  if (jct_aeth_type(bth[12]) != JCT_AETH_ACK) return false;
  if (memcmp(s, t->dst, len) != 0 || memcmp(d, t->src, len) != 0) return false;
  uint32_t psn = jct__be24(bth + 9);
  return jct_psn_diff(psn, t->armed_psn) >= 0 && jct_psn_diff(psn, t->at.highest_psn) <= 0;
}

static jct_verdict_t timeout_process(jct_injector_t *inj, jct_frame_t *f, uint64_t now_ns) {
  (void)now_ns;
  timeout_t *t = inj->priv;
  uint32_t psn;
  jct__position_kind_t k = jct__position_see(&t->at, f, &psn);
  if (k == JCT__POS_OTHER) return t->armed && covers_armed(t, f) ? JCT_DROP : JCT_PASS;
  learn_addrs(t, f);
  if (k == JCT__POS_RESENT) {
    if (t->armed) { /* its go-back: the timer ran out */
      t->armed = false;
      t->done[t->armed_target] = true;
      inj->stats.timeouts++;
    }
    return JCT_PASS;
  }
  if (t->armed) return JCT_PASS;
  for (uint32_t i = 0; i < t->n; i++)
    if (!t->done[i] && t->msg[i] == t->at.msg && t->pkt[i] == t->at.pkt) {
      t->armed = true;
      t->armed_target = i;
      t->armed_psn = psn;
      break;
    }
  return JCT_PASS;
}

const struct jct_injector_ops jct_timeout_ops = {
    .name = "timeout",
    .usage = "timeout pkt=MSG:PKT[,...] [qp=QPN | qp-order=N] [baseline=yes]  (drops the ACKs of "
             "that packet and later until its requester's retransmit timer sends it back)",
    .priv_size = sizeof(timeout_t),
    .init = timeout_init,
    .process = timeout_process,
};
