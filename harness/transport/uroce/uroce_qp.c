/* uroce QP: the queue pair object and the entry points of
 * include/jctlab/uroce.h - creation and configuration checks, posting, the
 * transmit pull, the receive checks and dispatch, the retransmit timer and
 * the error state.
 *
 * Sources: IBA Vol. 1 ch. 9 (9.7 reliable service) and 10.3 (QP states);
 * Linux rxe_qp.c (rxe_qp_from_init, rxe_qp_error), rxe_verbs.c
 * (rxe_post_send), rxe_recv.c (rxe_rcv: ICRC, header and QP checks, then
 * the completer or the responder) and rxe_net.c (the UDP source port).
 *
 * This file is the root of uroce's call tree (see uroce_loc.h): it calls the
 * requester (uroce_req.c), the completer (uroce_comp.c), the responder
 * (uroce_resp.c) and the ICRC (uroce_icrc.c), which never call each other.
 *
 * - Transmit: nothing while the QP is in error or the rank is paused (PFC);
 *   else the responder's owed ACK/NAK first, then the requester's next
 *   request packet; the ICRC is filled last.
 * - Receive (rxe_rcv): a packet whose ICRC does not match is dropped
 *   silently and counted, as rxe does; then the BTH and its extension
 *   headers must parse, the destination QP must be ours, and the pad must
 *   fit. ACKNOWLEDGE packets go to the completer; RC RDMA WRITE requests to
 *   the responder; anything else is dropped as malformed (this transport
 *   sends nothing else). A QP in error ignores everything.
 * - Timer: when the retransmit timer fires, the completer goes back or, its
 *   retry counter spent, the QP enters the error state (rxe_qp_error):
 *   nothing more is sent or owed, and the completer flushes the send queue.
 * - A NAK's go-back at a captured depth (cfg.go_backs) is started here,
 *   before each transmit pull and after each ACK/NAK, once the requester
 *   has sent that far or may send nothing more (uroce_comp.c), and on
 *   the timer when it was held for the capture's NAK → go-back time.
 * - A captured timer go-back (cfg.go_backs timer_ns) fires here when due;
 *   while one is pending the QP's own retransmit timer waits for it.
 * - Deadline: the retransmit timer, a captured timer go-back, the end of
 *   a captured go-back's hold or of a captured transmit stall, or the end of a pause when something
 * is waiting to be sent, or DCQCN's rate limiter's next slot when a request packet waits for it.
 * - DCQCN (cfg.dcqcn): the responder is its notification point (ECN-CE
 *   into CNPs), the requester its reaction point (CNPs into rate cuts, a
 *   rate limiter); a CNP received goes to the reaction point, and is
 *   counted and ignored without congestion control (dcqcn.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "common/wire.h"
#include "jctlab/error.h"
#include "uroce_loc.h"

#define RXE_SPORT_BASE 0xc000u      /* rxe: RXE_ROCE_V2_SPORT */
#define GOLDEN_RATIO_32 0x61c88647u /* Linux hash_32() multiplier */

void jct_uroce_cfg_init(jct_uroce_cfg_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->path_mtu_bytes = 4096;
  cfg->timeout = 20;
  cfg->retry_cnt = 7;
  cfg->pkey = 0xffff;
  cfg->sq_depth = 256;
}

static bool addr_ok(const jct_addr_t *a) {
  return a->family == 4 || a->family == 6;
}

static int check_cfg(const jct_uroce_cfg_t *cfg, char *err, size_t errlen) {
  uint32_t mtu = cfg->path_mtu_bytes;
  if (mtu < 256 || mtu > 4096 || (mtu & (mtu - 1)))
    return jct__errf(err, errlen, JCT_EINVAL,
                     "uroce: path MTU %u is not 256, 512, 1024, 2048 or 4096", mtu);
  if (cfg->timeout > 31)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: timeout %u is outside 0..31", cfg->timeout);
  if (cfg->retry_cnt > 7)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: retry count %u is outside 0..7",
                     cfg->retry_cnt);
  if (cfg->local_qpn > JCT_QPN_MASK || cfg->remote_qpn > JCT_QPN_MASK)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: QPN 0x%x is wider than 24 bits",
                     cfg->local_qpn > JCT_QPN_MASK ? cfg->local_qpn : cfg->remote_qpn);
  if (cfg->sq_psn > JCT_PSN_MASK || cfg->rq_psn > JCT_PSN_MASK)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: start PSN 0x%x is wider than 24 bits",
                     cfg->sq_psn > JCT_PSN_MASK ? cfg->sq_psn : cfg->rq_psn);
  if (!addr_ok(&cfg->local) || !addr_ok(&cfg->remote) || cfg->local.family != cfg->remote.family)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "uroce: addresses must both be IPv4 or both IPv6 (families %u, %u)",
                     cfg->local.family, cfg->remote.family);
  if (cfg->sq_depth == 0 || cfg->sq_depth > (1u << 20))
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: send queue depth %u is outside 1..1048576",
                     cfg->sq_depth);
  if (cfg->dcqcn) {
    if (!cfg->line_rate_bps)
      return jct__errf(err, errlen, JCT_EINVAL, "uroce: DCQCN needs the line rate");
    char e2[96];
    if (jct_dcqcn_params_check(cfg->dcqcn, e2, sizeof e2))
      return jct__errf(err, errlen, JCT_EINVAL, "uroce: %s", e2);
  }
  return 0;
}

int jct_uroce_qp_create(const jct_uroce_cfg_t *cfg, jct_uroce_qp_t **out, char *err,
                        size_t errlen) {
  *out = NULL;
  int rc = check_cfg(cfg, err, errlen);
  if (rc) return rc;

  jct_uroce_qp_t *qp = calloc(1, sizeof *qp);
  if (!qp) return JCT_ENOMEM;
  qp->cfg = *cfg;
  qp->sq.ring = calloc(cfg->sq_depth, sizeof *qp->sq.ring);
  qp->scratch_bytes = jct__uroce_scratch_bytes(cfg->path_mtu_bytes);
  qp->scratch = malloc(qp->scratch_bytes);
  if (!qp->sq.ring || !qp->scratch) {
    jct_uroce_qp_destroy(qp);
    return jct__errf(err, errlen, JCT_ENOMEM, "uroce: no memory for a send queue of %u",
                     cfg->sq_depth);
  }
  /* rxe: src_port = 0xc000 + (hash_32(qpn, 14) & 0x3fff), stable per QP. */
  qp->udp_sport = cfg->udp_sport
                      ? cfg->udp_sport
                      : (uint16_t)(RXE_SPORT_BASE + ((cfg->local_qpn * GOLDEN_RATIO_32) >> 18));
  qp->req.next_psn = qp->req.max_psn = qp->req.post_psn = cfg->sq_psn;
  qp->comp.una_psn = cfg->sq_psn;
  qp->comp.retry_left = cfg->retry_cnt;
  qp->ack_timeout_ns = cfg->timeout ? (uint64_t)JCT_UROCE_TIMEOUT_UNIT_NS << cfg->timeout : 0;
  qp->retrans_deadline_ns = UINT64_MAX;
  qp->comp.go_back_due_ns = qp->captured.timer_due_ns = UINT64_MAX;
  qp->resp.epsn = cfg->rq_psn;
  if (jct__uroce_captured_init(&qp->captured, cfg->go_backs, cfg->ngo_backs, cfg->stalls,
                               cfg->nstalls)) {
    jct_uroce_qp_destroy(qp);
    return jct__errf(err, errlen, JCT_ENOMEM,
                     "uroce: no memory for %u captured go-backs and %u captured stalls",
                     cfg->ngo_backs, cfg->nstalls);
  }
  qp->cfg.go_backs = NULL; /* copied */
  qp->cfg.stalls = NULL;
  qp->cc = cfg->dcqcn != NULL;
  if (qp->cc) {
    jct_dcqcn_rp_init(&qp->req.rp, cfg->dcqcn, cfg->line_rate_bps);
    jct_dcqcn_np_init(&qp->resp.np, cfg->dcqcn);
  }
  qp->cfg.dcqcn = NULL; /* copied: the caller's may go */
  *out = qp;
  return 0;
}

void jct_uroce_qp_destroy(jct_uroce_qp_t *qp) {
  if (!qp) return;
  free(qp->sq.ring);
  free(qp->scratch);
  jct__uroce_captured_free(&qp->captured);
  free(qp);
}

int jct_uroce_post_write(jct_uroce_qp_t *qp, const jct_uroce_wr_t *wr, char *err, size_t errlen) {
  if (qp->error)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: QP 0x%x is in the error state",
                     qp->cfg.local_qpn);
  if (wr->bytes > JCT_ROCE_MAX_MSG_BYTES)
    return jct__errf(err, errlen, JCT_EINVAL, "uroce: message of %u bytes is over 2^31", wr->bytes);
  if (qp->sq.tail_seq - qp->sq.head_seq >= qp->cfg.sq_depth)
    return jct__errf(err, errlen, JCT_ENOMEM, "uroce: send queue full (%u messages outstanding)",
                     qp->cfg.sq_depth);
  jct__uroce_req_post(qp, wr);
  return 0;
}

int jct_uroce_post_cts(jct_uroce_qp_t *qp, uint64_t wr_id, char *err, size_t errlen) {
  jct_uroce_wr_t wr = {.wr_id = wr_id, .bytes = JCT_UROCE_CTS_BYTES};
  return jct_uroce_post_write(qp, &wr, err, errlen);
}

/* The reaction point's counters into the QP's, as of now. */
static void cc_sync(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (!qp->cc) return;
  jct_dcqcn_rp_advance(&qp->req.rp, now_ns);
  qp->stats.rate_cuts = qp->req.rp.rate_cuts;
  qp->stats.below_line_rate_ns = jct_dcqcn_rp_below_line_ns(&qp->req.rp, now_ns);
}

static bool paused(const jct_uroce_qp_t *qp, uint64_t now_ns) {
  return qp->cfg.paused_until_ns && now_ns < *qp->cfg.paused_until_ns;
}

size_t jct_uroce_next_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap) {
  qp->last_now_ns = now_ns;
  if (!qp->error && qp->captured.go_back_ahead)
    jct__uroce_comp_go_back_deep(qp, jct__uroce_req_ready(qp), now_ns);
  if (qp->error || cap < jct_uroce_max_packet_bytes(qp) || paused(qp, now_ns)) return 0;
  size_t n = jct__uroce_resp_ack(qp, now_ns, buf, cap);
  if (!n && !jct__uroce_comp_go_back_holds(qp)) n = jct__uroce_req_packet(qp, now_ns, buf, cap);
  cc_sync(qp, now_ns);
  if (!n) return 0;
  jct__uroce_icrc_generate(qp, buf, n);
  qp->stats.tx_pkts++;
  qp->stats.tx_bytes += n;
  return n;
}

static bool is_rc_write(uint8_t opcode) {
  return opcode >= JCT_OP_RC_RDMA_WRITE_FIRST && opcode <= JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
}

jct_uroce_rx_t jct_uroce_rx(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len, uint16_t udp_sport,
                            uint64_t now_ns) {
  return jct_uroce_rx_ecn(qp, pkt, len, udp_sport, 0, now_ns);
}

jct_uroce_rx_t jct_uroce_rx_ecn(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len,
                                uint16_t udp_sport, uint8_t ecn, uint64_t now_ns) {
  qp->last_now_ns = now_ns;
  qp->stats.rx_pkts++;
  if (len < JCT_BTH_BYTES + JCT_ICRC_BYTES || len > qp->scratch_bytes) {
    qp->stats.rx_malformed++;
    return JCT_UROCE_RX_MALFORMED;
  }
  if (!jct__uroce_icrc_check(qp, pkt, len, udp_sport)) {
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
  if (h.bth.opcode == JCT_OP_RC_ACKNOWLEDGE) {
    jct_uroce_rx_t r = jct__uroce_comp_rx(qp, &h, now_ns);
    if (!qp->error && qp->captured.go_back_ahead)
      jct__uroce_comp_go_back_deep(qp, jct__uroce_req_ready(qp), now_ns);
    return r;
  }
  if (h.bth.opcode == JCT_OP_CNP) {
    qp->stats.rx_cnps++;
    if (qp->cc) jct_dcqcn_rp_on_cnp(&qp->req.rp, now_ns);
    cc_sync(qp, now_ns);
    return JCT_UROCE_RX_ACCEPTED;
  }
  if (!is_rc_write(h.bth.opcode)) {
    qp->stats.rx_malformed++;
    return JCT_UROCE_RX_MALFORMED;
  }
  uint32_t payload = (uint32_t)(body - hdr - h.bth.pad_count);
  return jct__uroce_resp_rx(qp, &h, jct_opcode_info(h.bth.opcode), payload,
                            (ecn & 3) == 3, now_ns);
}

uint32_t jct_uroce_dest_qpn(const uint8_t *pkt, size_t len) {
  return len < JCT_BTH_BYTES ? UINT32_MAX : jct__be24(pkt + 5);
}

/* The error state (rxe_qp_error): nothing more is sent, owed or timed; the
 * completer fails what is pending, whose callbacks see the QP in error. */
static void enter_error(jct_uroce_qp_t *qp, uint64_t now_ns) {
  qp->error = true;
  qp->retrans_deadline_ns = UINT64_MAX;
  qp->comp.go_back_due_ns = qp->captured.timer_due_ns = UINT64_MAX;
  qp->captured.timer_hold = false;
  qp->resp.ack_pending = qp->resp.nak_pending = false;
  jct__uroce_comp_flush(qp, now_ns);
}

void jct_uroce_on_timer(jct_uroce_qp_t *qp, uint64_t now_ns) {
  qp->last_now_ns = now_ns;
  cc_sync(qp, now_ns);
  if (qp->error) return;
  jct__uroce_comp_go_back_due(qp, now_ns);
  jct__uroce_comp_timer_go_back(qp, now_ns);
  if (qp->captured.go_back_ahead) jct__uroce_comp_go_back_deep(qp, jct__uroce_req_ready(qp), now_ns);
  if (now_ns < qp->retrans_deadline_ns) return;
  qp->retrans_deadline_ns = UINT64_MAX;
  if (qp->captured.timer_due_ns != UINT64_MAX) { /* the captured timer stands for this one */
    qp->retrans_deadline_ns = qp->captured.timer_due_ns;
    return;
  }
  if (qp->captured.go_back_ahead && qp->captured.go_back_hold_ns > now_ns) {
    qp->retrans_deadline_ns = qp->captured.go_back_hold_ns; /* ... and a captured NAK's go-back */
    return;
  }
  if (qp->captured.timer_floor_ns > now_ns) { /* an ignored NAK's captured go-back: not before */
    qp->retrans_deadline_ns = qp->captured.timer_floor_ns;
    return;
  }
  if (jct__uroce_comp_timeout(qp, now_ns)) enter_error(qp, now_ns);
}

uint64_t jct_uroce_next_deadline_ns(const jct_uroce_qp_t *qp) {
  if (qp->error) return UINT64_MAX;
  uint64_t d = qp->retrans_deadline_ns;
  if (qp->comp.go_back_due_ns < d) d = qp->comp.go_back_due_ns;
  if (qp->captured.timer_due_ns < d) d = qp->captured.timer_due_ns;
  if (qp->captured.go_back_ahead && qp->captured.go_back_hold_ns > qp->last_now_ns &&
      qp->captured.go_back_hold_ns < d)
    d = qp->captured.go_back_hold_ns; /* a captured go-back held for its reaction */
  uint64_t nak = jct__uroce_resp_nak_due_ns(qp, qp->last_now_ns);
  if (nak < d) d = nak;
  uint64_t stall = jct__uroce_captured_stall_end_ns(&qp->captured, qp->last_now_ns);
  if (stall < d) d = stall; /* a captured stall ends: the requester sends again */
  if (paused(qp, qp->last_now_ns) && (jct__uroce_req_ready(qp) || jct__uroce_resp_pending(qp)) &&
      *qp->cfg.paused_until_ns < d)
    d = *qp->cfg.paused_until_ns;
  uint64_t slot = qp->cc && qp->req.rp.active ? jct__uroce_req_slot_ns(qp) : 0;
  if (slot > qp->last_now_ns && jct__uroce_req_ready(qp)) {
    /* A rate increase before the slot brings it nearer: wake for it. */
    uint64_t inc = qp->req.rp.inc_next_ns;
    if (inc > qp->last_now_ns && inc < slot) slot = inc;
    if (paused(qp, qp->last_now_ns) && *qp->cfg.paused_until_ns > slot)
      slot = *qp->cfg.paused_until_ns;
    if (slot < d) d = slot;
  }
  return d;
}

/* ---- accessors ---- */

const jct_uroce_stats_t *jct_uroce_stats(const jct_uroce_qp_t *qp) {
  return &qp->stats;
}
bool jct_uroce_in_error(const jct_uroce_qp_t *qp) {
  return qp->error;
}
uint16_t jct_uroce_udp_sport(const jct_uroce_qp_t *qp) {
  return qp->udp_sport;
}
size_t jct_uroce_max_packet_bytes(const jct_uroce_qp_t *qp) {
  return JCT_BTH_BYTES + JCT_RETH_BYTES + JCT_IMMDT_BYTES + qp->cfg.path_mtu_bytes + JCT_ICRC_BYTES;
}
uint32_t jct_uroce_local_qpn(const jct_uroce_qp_t *qp) {
  return qp->cfg.local_qpn;
}
void jct_uroce_cc_reset(jct_uroce_qp_t *qp, uint64_t now_ns) {
  if (!qp->cc) return;
  jct_dcqcn_rp_reset(&qp->req.rp, now_ns);
  qp->req.last_tx_bytes = 0;
  qp->resp.np.sent = false;
  cc_sync(qp, now_ns);
}

/* The previous repetition's job ended with every message received, so
 * what its requester still holds is acknowledgement state only: a
 * captured timer go-back due after the job's end (its ACKs held), or a
 * last ACK lost whose timer the drain did not wait out. Left there, a
 * go-back or the next repetition's first cumulative ACK would complete
 * the old messages in the new repetition. They are retired here without
 * completions, and every timer and go-back of theirs is stopped. A
 * message not yet sent once (post_psn past max_psn) was not received:
 * that repetition failed, and it is left alone. */
static void retire_previous(jct_uroce_qp_t *qp) {
  if (qp->error || qp->req.post_psn != qp->req.max_psn) return;
  qp->sq.head_seq = qp->req.cur_seq = qp->sq.tail_seq;
  qp->comp.una_psn = qp->req.next_psn = qp->req.max_psn;
  qp->comp.retry_left = qp->cfg.retry_cnt;
  qp->comp.started_retry = qp->comp.nak_ignored = false;
  qp->comp.go_back_due_ns = UINT64_MAX;
  qp->captured.go_back_ahead = 0;
  qp->captured.go_back_hold_ns = qp->captured.timer_floor_ns = 0;
  qp->retrans_deadline_ns = UINT64_MAX;
}

void jct_uroce_rep_start(jct_uroce_qp_t *qp, bool faulted) {
  retire_previous(qp);
  qp->rep_seq = qp->sq.tail_seq;
  qp->rep_faulted = faulted;
  qp->rep_msgs_recv = qp->stats.msgs_recv;
  jct__uroce_captured_rep_start(&qp->captured);
}

uint64_t jct_uroce_rate_bps(const jct_uroce_qp_t *qp) {
  return qp->cc ? qp->req.rp.rc_bps : qp->cfg.line_rate_bps;
}
void *jct_uroce_data(const jct_uroce_qp_t *qp) {
  return qp->cfg.data;
}
