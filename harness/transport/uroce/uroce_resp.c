/* uroce responder: accepting the peer's RDMA WRITE requests in PSN order,
 * and owing it ACK/NAKs, which the QP file sends before any data.
 *
 * Sources: IBA Vol. 1 ch. 9 (9.7.4 responder side, 9.7.5 ACK/NAK
 * generation, C9-105 duplicates) and Linux rxe_resp.c (check_psn,
 * check_op_seq, duplicate_request, send_ack/acknowledge). The QP file has
 * already checked the ICRC, the headers, the destination QP and that the
 * opcode is an RC RDMA WRITE.
 *
 * - PSN == expected: accepted; the expected PSN advances; a message whose
 *   LAST/ONLY packet is accepted completes (MSN + 1, and a RECV event with
 *   the byte count and, for *_WITH_IMMEDIATE, the immediate data). If the
 *   packet asked for an ACK (AckReq), one is owed.
 * - PSN > expected (a gap): one NAK PSN-sequence-error (AETH syndrome 0x60)
 *   carrying the expected PSN, then silence for further out-of-order
 *   packets until the expected PSN arrives (rxe resp.sent_psn_nak).
 * - PSN < expected (a duplicate): re-ACKed with the latest accepted PSN,
 *   whether or not it asked (IBA C9-105; rxe duplicate_request), and not
 *   delivered again.
 * - ACKs are coalesced: the owed ACK is built when the caller pulls it, for
 *   the latest accepted PSN and the current MSN, with the syndrome rxe uses
 *   for "credits unlimited" (0x1f). An owed NAK is cancelled if the
 *   expected PSN arrives before it was pulled (it would only cause a
 *   needless go-back-N), and a NAK pulled replaces an owed ACK (it
 *   acknowledges everything before its PSN).
 * - Opcode order within a message is checked (FIRST only outside a
 *   message, MIDDLE/LAST only inside); a violation is dropped and counted.
 *   IBA would NAK it as an invalid request and move the QP to error; our
 *   requester never produces one.
 * - DCQCN's notification point (qp->cc): a request that arrives ECN-CE
 *   marked (in sequence or not) owes the sender a CNP, at most one per
 *   min_time_between_cnps (dcqcn.h). The CNP is a BTH with opcode 0x81,
 *   BECN set, the sender's QP as destination, PSN 0 and the QP's P_Key,
 *   then 16 reserved zero bytes and the ICRC (IBA Annex A17.9.2); it goes
 *   before any ACK/NAK, as NICs send CNPs ahead of data. (A ConnectX sends
 *   it at DSCP 48, priority 6; uroce's rank has one socket and sends it on
 *   the data priority.)
 * - A captured responder (cfg.go_backs, a postmortem's): the NAK of a gap
 *   at a packet the capture shows a go-back to goes out as late after the
 *   gap as the capture's did (hole_to_nak_ns: rxe's responder task, slow
 *   under load, works through what it received before it), else
 *   nak_delay_ns after it. Time, not the count of PSNs past the hole that
 *   arrived before the capture's NAK (nak_ahead_psns), decides: in the
 *   shipped capture the 15 PSNs past its first hole arrived within 0.41 ms
 *   of it (frames 54-68) and the NAK came 7.3 ms after the last of them
 *   (frame 69), so the count was not what rxe waited for; a replay that
 *   NAKed on it answered 6.5 ms early on a link that carries them in
 *   1.2 ms. How far the requester sends meanwhile is its own bound
 *   (first_tx, uroce_req.c).
 * - Receive queue credits and RNR NAKs are not modelled: write-with-imm
 *   always finds a receive buffer (NCCL keeps them posted).
 */
#include <string.h>

#include "uroce_loc.h"

bool jct__uroce_resp_pending(const jct_uroce_qp_t *qp) {
  return qp->resp.ack_pending || qp->resp.nak_pending || qp->resp.cnp_pending;
}

static size_t cnp(jct_uroce_qp_t *qp, uint8_t *p, size_t cap) {
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  h.bth.opcode = JCT_OP_CNP;
  h.bth.becn = true;
  h.bth.pkey = qp->cfg.pkey;
  h.bth.dest_qp = qp->cfg.remote_qpn;
  size_t n = jct_roce_write(p, cap, &h);
  if (!n || n + JCT_CNP_PAYLOAD_BYTES + JCT_ICRC_BYTES > cap) return 0;
  memset(p + n, 0, JCT_CNP_PAYLOAD_BYTES);
  qp->resp.cnp_pending = false;
  qp->stats.tx_cnps++;
  return n + JCT_CNP_PAYLOAD_BYTES + JCT_ICRC_BYTES;
}

uint64_t jct__uroce_resp_nak_due_ns(const jct_uroce_qp_t *qp, uint64_t now_ns) {
  const struct jct__uroce_resp *s = &qp->resp;
  return s->nak_pending && s->nak_due_ns > now_ns ? s->nak_due_ns : UINT64_MAX;
}

size_t jct__uroce_resp_ack(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *p, size_t cap) {
  struct jct__uroce_resp *s = &qp->resp;
  if (s->cnp_pending) return cnp(qp, p, cap);
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  bool nak_now = s->nak_pending && now_ns >= s->nak_due_ns;
  if (nak_now) {
    h.bth.psn = s->nak_psn;
    h.aeth.syndrome = (uint8_t)(JCT_AETH_NAK << 5 | JCT_NAK_PSN_SEQ_ERR);
    qp->stats.tx_naks++;
  } else if (s->ack_pending) {
    h.bth.psn = jct_psn_add(s->epsn, JCT_PSN_MASK); /* epsn - 1 */
    h.aeth.syndrome = JCT_UROCE_ACK_CREDIT_UNLIMITED;
    qp->stats.tx_acks++;
  } else {
    return 0;
  }
  if (nak_now) s->nak_pending = false;
  s->ack_pending = false;
  h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  h.bth.pkey = qp->cfg.pkey;
  h.bth.dest_qp = qp->cfg.remote_qpn;
  h.aeth.msn = s->msn;
  size_t n = jct_roce_write(p, cap, &h);
  return n && n + JCT_ICRC_BYTES <= cap ? n + JCT_ICRC_BYTES : 0;
}

/* When the NAK of the gap at the expected PSN, seen at now_ns, falls due:
 * as a captured go-back's (cfg.go_backs) for the packet it is (the
 * repetition's message received next, the packet of it), once: its
 * hole_to_nak_ns after the gap; else cfg.nak_delay_ns after it. */
static void nak_due(jct_uroce_qp_t *qp, uint64_t now_ns) {
  struct jct__uroce_resp *s = &qp->resp;
  uint64_t msg = qp->stats.msgs_recv - qp->rep_msgs_recv;
  uint32_t pkt = s->in_msg ? s->msg_pkts : 0;
  s->nak_due_ns = now_ns + qp->cfg.nak_delay_ns;
  for (uint32_t i = 0; i < qp->cfg.ngo_backs; i++) {
    const jct_uroce_go_back_t *g = &qp->captured.go_backs[i];
    if (!qp->captured.used[i] && g->hole_to_nak_ns && g->msg == msg && g->pkt == pkt) {
      qp->captured.used[i] = true;
      s->nak_due_ns = now_ns + g->hole_to_nak_ns;
      return;
    }
  }
}

jct_uroce_rx_t jct__uroce_resp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  const struct jct_opcode_info *op, uint32_t payload_bytes,
                                  bool ce, uint64_t now_ns) {
  struct jct__uroce_resp *s = &qp->resp;
  if (ce) {
    qp->stats.rx_ce_pkts++;
    if (qp->cc && jct_dcqcn_np_on_ce(&s->np, now_ns)) s->cnp_pending = true;
  }
  int32_t d = jct_psn_diff(h->bth.psn, s->epsn);
  if (d > 0) {
    qp->stats.out_of_seq_pkts++;
    if (!s->nak_sent) {
      s->nak_sent = true;
      s->nak_pending = true;
      s->nak_psn = s->epsn;
      nak_due(qp, now_ns);
    }
    return JCT_UROCE_RX_OUT_OF_SEQ;
  }
  if (d < 0) {
    qp->stats.dup_pkts++;
    s->ack_pending = true;
    return JCT_UROCE_RX_DUPLICATE;
  }
  bool first = op->pos & JCT_POS_FIRST, last = op->pos & JCT_POS_LAST;
  if (first == s->in_msg) {
    qp->stats.rx_bad_op_seq++;
    return JCT_UROCE_RX_IGNORED;
  }
  s->epsn = jct_psn_add(s->epsn, 1);
  s->nak_sent = s->nak_pending = false;
  if (first) s->msg_bytes = s->msg_pkts = 0;
  s->msg_bytes += payload_bytes;
  s->msg_pkts++;
  s->in_msg = !last;
  if (h->bth.ackreq) s->ack_pending = true;
  if (!last) return JCT_UROCE_RX_ACCEPTED;

  s->msn = jct_psn_add(s->msn, 1);
  qp->stats.msgs_recv++;
  jct_uroce_event_t ev = {.type = JCT_UROCE_EV_RECV,
                          .status = JCT_UROCE_WC_SUCCESS,
                          .bytes = s->msg_bytes,
                          .has_imm = (op->ext & JCT_EXT_IMMDT) != 0,
                          .imm = (op->ext & JCT_EXT_IMMDT) ? h->immdt : 0,
                          .time_ns = now_ns};
  jct__uroce_emit(qp, &ev);
  return JCT_UROCE_RX_ACCEPTED;
}
