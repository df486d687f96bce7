/* uroce responder and the receive path: checking incoming packets,
 * accepting the peer's RDMA WRITE requests in PSN order, and owing it
 * ACK/NAKs, which jct_uroce_next_packet() sends before any data.
 *
 * Receive checks (Linux rxe_recv.c / rxe_icrc.c): the ICRC is recomputed
 * over the IP/UDP header the peer's kernel wrote (see uroce.h) and a packet
 * whose ICRC does not match is dropped silently and counted, as rxe does;
 * then the BTH and its extension headers must parse, the destination QP
 * must be ours, and the pad must fit. ACKNOWLEDGE packets go to the
 * completer (uroce_req.c); RC RDMA WRITE requests come here; anything else
 * is dropped as malformed (this transport sends nothing else).
 *
 * Responder (IBA 9.7.4, 9.7.5; rxe_resp.c check_psn, duplicate_request,
 * acknowledge):
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
 * - Receive queue credits and RNR NAKs are not modelled: write-with-imm
 *   always finds a receive buffer (NCCL keeps them posted).
 */
#include <string.h>

#include "uroce_int.h"
#include "common/wire.h"

void jct__uroce_resp_init(jct_uroce_qp_t *qp) {
  memset(&qp->resp, 0, sizeof qp->resp);
  qp->resp.epsn = qp->cfg.rq_psn;
}

bool jct__uroce_resp_pending(const jct_uroce_qp_t *qp) {
  return qp->resp.ack_pending || qp->resp.nak_pending;
}

size_t jct__uroce_resp_ack(jct_uroce_qp_t *qp, uint8_t *p, size_t cap) {
  struct jct__uroce_resp *s = &qp->resp;
  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  if (s->nak_pending) {
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
  s->nak_pending = s->ack_pending = false;
  h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  h.bth.pkey = qp->cfg.pkey;
  h.bth.dest_qp = qp->cfg.remote_qpn;
  h.aeth.msn = s->msn;
  size_t n = jct_roce_write(p, cap, &h);
  return n && n + JCT_ICRC_BYTES <= cap ? n + JCT_ICRC_BYTES : 0;
}

jct_uroce_rx_t jct__uroce_resp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  const struct jct_opcode_info *op, uint32_t payload_bytes,
                                  uint64_t now_ns) {
  struct jct__uroce_resp *s = &qp->resp;
  int32_t d = jct_psn_diff(h->bth.psn, s->epsn);
  if (d > 0) {
    qp->stats.out_of_seq_pkts++;
    if (!s->nak_sent) {
      s->nak_sent = true;
      s->nak_pending = true;
      s->nak_psn = s->epsn;
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
  if (first) s->msg_bytes = 0;
  s->msg_bytes += payload_bytes;
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

static bool is_rc_write(uint8_t opcode) {
  return opcode >= JCT_OP_RC_RDMA_WRITE_FIRST && opcode <= JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
}

jct_uroce_rx_t jct_uroce_rx(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len, uint16_t udp_sport,
                            uint64_t now_ns) {
  qp->last_now_ns = now_ns;
  qp->stats.rx_pkts++;
  if (len < JCT_BTH_BYTES + JCT_ICRC_BYTES || len > qp->scratch_bytes) {
    qp->stats.rx_malformed++;
    return JCT_UROCE_RX_MALFORMED;
  }
  uint32_t icrc = jct__uroce_icrc(qp, &qp->cfg.remote, &qp->cfg.local, udp_sport, pkt, len);
  if (icrc != jct__le32(pkt + len - JCT_ICRC_BYTES)) {
    qp->stats.bad_icrc++;
    return JCT_UROCE_RX_BAD_ICRC;
  }
  struct jct_roce_hdrs h;
  size_t body = len - JCT_ICRC_BYTES;
  size_t hdr = jct_roce_parse(pkt, body, &h);
  if (!hdr || hdr + h.bth.pad_count > body) {
    qp->stats.rx_malformed++;
    return JCT_UROCE_RX_MALFORMED;
  }
  if (h.bth.dest_qp != qp->cfg.local_qpn) {
    qp->stats.rx_wrong_qp++;
    return JCT_UROCE_RX_WRONG_QP;
  }
  if (qp->error) return JCT_UROCE_RX_IGNORED;
  if (h.bth.opcode == JCT_OP_RC_ACKNOWLEDGE) return jct__uroce_comp_rx(qp, &h, now_ns);
  if (!is_rc_write(h.bth.opcode)) {
    qp->stats.rx_malformed++;
    return JCT_UROCE_RX_MALFORMED;
  }
  uint32_t payload = (uint32_t)(body - hdr - h.bth.pad_count);
  return jct__uroce_resp_rx(qp, &h, jct_opcode_info(h.bth.opcode), payload, now_ns);
}

uint32_t jct_uroce_dest_qpn(const uint8_t *pkt, size_t len) {
  return len < JCT_BTH_BYTES ? UINT32_MAX : jct__be24(pkt + 5);
}
