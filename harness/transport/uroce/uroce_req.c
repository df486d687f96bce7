/* uroce requester: turning posted RDMA WRITE messages into request packets.
 *
 * Sources: IBA Vol. 1 ch. 9 (9.5 transaction ordering, 9.7 reliable
 * service: 9.7.1 PSNs, 9.7.2 AckReq, 9.7.4 requester side) and Linux
 * rxe_req.c (next_opcode, init_req_packet, update_state).
 *
 * - A posted message gets its PSNs at once: one per packet, 24-bit,
 *   wrapping, following the previous message's.
 * - A message is segmented at the path MTU into RDMA_WRITE_FIRST (RETH),
 *   MIDDLE..., LAST or LAST_WITH_IMMEDIATE (ImmDt); a message that fits in
 *   one packet is WRITE_ONLY (RETH) or ONLY_WITH_IMMEDIATE (RETH, ImmDt).
 *   The last packet's payload is padded to 4 bytes (BTH PadCnt). There is
 *   no memory behind the QP: the payload is zeros.
 * - AckReq is set on the last packet of each message and on the 64th packet
 *   after the previous AckReq. (rxe sets it when more than
 *   RXE_MAX_PKT_PER_ACK = 64 packets went without, i.e. on the 66th; the
 *   issue asks for "at least every 64".)
 * - At most 128 PSNs are unacknowledged (rxe's RXE_MAX_UNACKED_PSNS): the
 *   requester sends nothing new while the window is full.
 * - A packet below the highest PSN ever sent is a retransmission (the
 *   completer pointed next_psn back, go-back-N) and is counted as one.
 * - Sending starts the retransmit timer when it is not running (rxe:
 *   mod_timer in update_state); the completer restarts and stops it.
 * - DCQCN (qp->cc): while the reaction point's rate Rc is below the line
 *   rate, request packets leave no closer together than their wire time at
 *   Rc (a ConnectX QP's rate limiter); a packet the limiter holds back is
 *   not made (0), and the QP's deadline says when the slot comes. A slot
 *   missed by a late caller is not made up for (no credit builds up while
 *   idle). Every request packet sent counts in the byte counter.
 * - A captured timer go-back (cfg.go_backs timer_ns, a postmortem's) is
 *   armed when the first transmission of its message's first packet goes,
 *   as rxe's timer starts with a send (timer_lead_ns earlier when the
 *   capture's had started before the message); the completer restarts it,
 *   holds its ACKs back and fires it (uroce_comp.c). One that recovers a
 *   loss is armed in faulted repetitions only.
 * - A captured transmit stall (cfg.stalls, a postmortem's; the record
 *   qp->captured finds it, uroce_captured.c) holds the request packets
 *   when its packet is about to go for the first time: none is made for
 *   its stall_ns, and the QP's own retransmit timer stops meanwhile (the
 *   capture's did not go back in the gap; uroce.h), its captured timer
 *   go-backs running (measured across the stalls).
 * - A captured hole (cfg.go_backs first_tx, a postmortem's): in a faulted
 *   repetition, once the first transmission of the packet the capture lost
 *   and NAKed has gone, the requester sends no PSN ahead_psns or more past
 *   it (the capture's go-back re-sent that far: its sender had got no
 *   further) until the completer hears of the hole (a NAK, uroce_comp.c,
 *   whose captured go-back holds the same depth), an ACK past it (the
 *   packet got through) or a go-back. The responder NAKs at the capture's
 *   time after the hole, not on a count of PSNs (uroce_resp.c), so a
 *   replay whose link carries the capture's few PSNs past a hole sooner
 *   than rxe NAKed it would otherwise send on and re-send more than the
 *   capture: the shipped capture's first loss 94 PSNs at 107.3 Mbit/s in
 *   the 7.7 ms to its NAK, against the capture's 17.
 * - The QP file does not call here while the rank is paused (PFC). Timers
 *   keep running: a pause longer than the retransmit timeout costs
 *   retries, as it does on a NIC (rxe itself never sees PFC: its packets
 *   wait in the qdisc/NIC after its timer has started).
 */
#include <string.h>

#include "uroce_loc.h"

void jct__uroce_req_post(jct_uroce_qp_t *qp, const jct_uroce_wr_t *wr) {
  struct jct__uroce_req *r = &qp->req;
  uint32_t mtu = qp->cfg.path_mtu_bytes;
  struct jct__uroce_wqe *w = jct__uroce_wqe_at(qp, qp->sq.tail_seq);
  w->wr_id = wr->wr_id;
  w->remote_va = wr->remote_va;
  w->rkey = wr->rkey ? wr->rkey : qp->cfg.rkey;
  w->bytes = wr->bytes;
  w->imm = wr->imm;
  w->has_imm = wr->has_imm;
  w->first_psn = r->post_psn;
  w->npkts = wr->bytes ? (wr->bytes + mtu - 1) / mtu : 1;
  r->post_psn = jct__uroce_wqe_end_psn(w);
  qp->sq.tail_seq++;
}

/* Arm the first unused captured timer go-back of the message at seq (its
 * first packet just went for the first time), unless one is pending. */
static void arm_timer_go_back(jct_uroce_qp_t *qp, uint32_t seq, uint64_t now_ns) {
  if (qp->captured.timer_due_ns != UINT64_MAX) return;
  const struct jct__uroce_wqe *w = jct__uroce_wqe_at(qp, seq);
  uint32_t msg = seq - qp->rep_seq;
  for (uint32_t i = 0; i < qp->cfg.ngo_backs; i++) {
    const jct_uroce_go_back_t *g = &qp->captured.go_backs[i];
    if (qp->captured.used[i] || !g->timer_ns || g->msg != msg || g->pkt >= w->npkts) continue;
    if (g->recovers_loss && !qp->rep_faulted) continue; /* the faults' effect: not a baseline's */
    qp->captured.used[i] = true;
    qp->captured.timer_ns = g->timer_ns;
    qp->captured.timer_due_ns =
        now_ns + (g->timer_lead_ns < g->timer_ns ? g->timer_ns - g->timer_lead_ns : 0);
    qp->captured.timer_psn = jct_psn_add(w->first_psn, g->pkt);
    qp->captured.timer_ahead = g->ahead_psns;
    qp->captured.timer_idx = i;
    qp->captured.timer_idle_ns = g->idle_ns;
    return;
  }
}

/* Arm the first unused captured hole (first_tx) at packet k of the message
 * at seq, whose first transmission is about to go (faulted repetitions). */
static void arm_hole(jct_uroce_qp_t *qp, uint32_t seq, uint32_t k) {
  if (!qp->rep_faulted || qp->captured.hole_ahead) return;
  uint32_t msg = seq - qp->rep_seq;
  for (uint32_t i = 0; i < qp->cfg.ngo_backs; i++) {
    const jct_uroce_go_back_t *g = &qp->captured.go_backs[i];
    if (qp->captured.used[i] || !g->first_tx || !g->ahead_psns || g->timer_ns || g->msg != msg ||
        g->pkt != k)
      continue;
    qp->captured.hole_psn = qp->req.next_psn;
    qp->captured.hole_ahead = g->ahead_psns;
    return;
  }
}

/* Whether a captured hole holds the next PSN back (arm_hole). */
static bool hole_holds(const jct_uroce_qp_t *qp) {
  return qp->captured.hole_ahead &&
         jct_psn_diff(qp->req.next_psn, qp->captured.hole_psn) >= (int32_t)qp->captured.hole_ahead;
}

static bool window_full(const jct_uroce_qp_t *qp) {
  return jct_psn_diff(qp->req.next_psn, qp->comp.una_psn) >= JCT_UROCE_MAX_UNACKED_PSNS;
}

bool jct__uroce_req_ready(const jct_uroce_qp_t *qp) {
  return qp->req.next_psn != qp->req.post_psn && !window_full(qp);
}

static uint8_t write_opcode(const struct jct__uroce_wqe *w, bool first, bool last) {
  if (first && last)
    return w->has_imm ? JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : JCT_OP_RC_RDMA_WRITE_ONLY;
  if (first) return JCT_OP_RC_RDMA_WRITE_FIRST;
  if (last)
    return w->has_imm ? JCT_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : JCT_OP_RC_RDMA_WRITE_LAST;
  return JCT_OP_RC_RDMA_WRITE_MIDDLE;
}

/* The frame's time on the wire at the rate limiter's rate. */
static uint64_t paced_ns(const jct_uroce_qp_t *qp, uint64_t wire_bytes) {
  return (uint64_t)((double)wire_bytes * 8e9 / (double)qp->req.rp.rc_bps);
}

static uint64_t wire_bytes(const jct_uroce_qp_t *qp, size_t n) {
  return n + JCT_UROCE_WIRE_OVERHEAD_BYTES + (qp->cfg.local.family == 6 ? 20 : 0);
}

/* After a request packet of n bytes left: the byte counter, and what the
 * limiter's next slot counts from. */
static void cc_sent(jct_uroce_qp_t *qp, size_t n, uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  uint64_t w = wire_bytes(qp, n);
  jct_dcqcn_rp_on_sent(&r->rp, w, now_ns);
  r->last_tx_ns = now_ns;
  r->last_tx_bytes = w;
}

uint64_t jct__uroce_req_slot_ns(const jct_uroce_qp_t *qp) {
  const struct jct__uroce_req *r = &qp->req;
  return r->last_tx_bytes ? r->last_tx_ns + paced_ns(qp, r->last_tx_bytes) : 0;
}

bool jct__uroce_req_held(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (!qp->cc) return false;
  jct_dcqcn_rp_advance(&qp->req.rp, now_ns);
  return qp->req.rp.active && now_ns < jct__uroce_req_slot_ns(qp);
}

size_t jct__uroce_req_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap) {
  struct jct__uroce_req *r = &qp->req;
  if (r->next_psn == r->post_psn) return 0;
  if (window_full(qp)) {
    qp->stats.window_stalls++;
    return 0;
  }
  if (jct__uroce_req_held(qp, now_ns)) return 0;
  const struct jct__uroce_wqe *w = jct__uroce_wqe_at(qp, r->cur_seq);
  uint32_t mtu = qp->cfg.path_mtu_bytes;
  uint32_t k = (uint32_t)jct_psn_diff(r->next_psn, w->first_psn);
  uint64_t stall_ns; /* a captured stall that begins now */
  if (jct__uroce_captured_stalled(&qp->captured, r->cur_seq - qp->rep_seq, k,
                                  jct_psn_diff(r->next_psn, r->max_psn) >= 0, now_ns, &stall_ns)) {
    if (stall_ns) {
      qp->stats.stalls++;
      if (qp->retrans_deadline_ns != UINT64_MAX) /* its own timer stops: the time left resumes */
        qp->retrans_deadline_ns += stall_ns;
    }
    return 0;
  }
  if (hole_holds(qp)) return 0;
  bool first = k == 0, last = k + 1 == w->npkts;
  uint32_t payload = last ? w->bytes - k * mtu : mtu;
  uint32_t pad = (4 - (payload & 3)) & 3;

  struct jct_roce_hdrs h;
  memset(&h, 0, sizeof h);
  h.bth.opcode = write_opcode(w, first, last);
  h.bth.pad_count = (uint8_t)pad;
  h.bth.pkey = qp->cfg.pkey;
  h.bth.dest_qp = qp->cfg.remote_qpn;
  h.bth.psn = r->next_psn;
  h.bth.ackreq = last || ++r->noack_pkts >= JCT_UROCE_MAX_PKTS_PER_ACK;
  if (h.bth.ackreq) r->noack_pkts = 0;
  h.reth.va = w->remote_va;
  h.reth.rkey = w->rkey;
  h.reth.dma_len_bytes = w->bytes;
  h.immdt = w->imm;
  size_t hdr = jct_roce_write(buf, cap, &h);
  size_t n = hdr + payload + pad + JCT_ICRC_BYTES;
  if (!hdr || n > cap) return 0;
  memset(buf + hdr, 0, payload + pad);

  if (jct_psn_diff(r->next_psn, r->max_psn) < 0) {
    qp->stats.retx_pkts++;
    qp->stats.retx_bytes += n;
  } else {
    r->max_psn = jct_psn_add(r->next_psn, 1);
    if (first && qp->cfg.ngo_backs) arm_timer_go_back(qp, r->cur_seq, now_ns);
    if (qp->cfg.ngo_backs) arm_hole(qp, r->cur_seq, k);
  }
  qp->stats.tx_data_pkts++;
  r->next_psn = jct_psn_add(r->next_psn, 1);
  if (last) r->cur_seq++;
  if (qp->ack_timeout_ns && qp->retrans_deadline_ns == UINT64_MAX)
    qp->retrans_deadline_ns = now_ns + qp->ack_timeout_ns;
  if (qp->cc) cc_sent(qp, n, now_ns);
  return n;
}
