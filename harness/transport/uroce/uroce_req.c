/* uroce requester and completer: turning posted RDMA WRITE messages into
 * packets, and ACK/NAKs and the retransmit timer into progress.
 *
 * Requester (IBA 9.5, 9.7; Linux rxe_req.c):
 * - A message is segmented at the path MTU into RDMA_WRITE_FIRST (RETH),
 *   MIDDLE..., LAST or LAST_WITH_IMMEDIATE (ImmDt); a message that fits in
 *   one packet is WRITE_ONLY (RETH) or ONLY_WITH_IMMEDIATE (RETH, ImmDt).
 *   One PSN per packet, 24-bit, wrapping. The last packet's payload is
 *   padded to 4 bytes (BTH PadCnt).
 * - AckReq is set on the last packet of each message and on the 64th packet
 *   after the previous AckReq. (rxe sets it when more than
 *   RXE_MAX_PKT_PER_ACK = 64 packets went without, i.e. on the 66th; the
 *   issue asks for "at least every 64".)
 * - At most 128 PSNs are unacknowledged (rxe's RXE_MAX_UNACKED_PSNS): the
 *   requester sends nothing new while the window is full.
 * - While the rank is paused (PFC), nothing is produced. Timers keep
 *   running: a pause longer than the retransmit timeout costs retries, as
 *   it does on a NIC (rxe itself never sees PFC: its packets wait in the
 *   qdisc/NIC after its timer has started).
 *
 * Completer (IBA 9.7.5.1, 9.7.6.1; rxe_comp.c):
 * - An ACK with PSN p retires every PSN up to p (ACKs are cumulative) and
 *   completes the messages that end there (SEND_DONE, in order).
 * - A NAK PSN-sequence-error with PSN p implicitly acknowledges everything
 *   before p and restarts the send stream at p (go-back-N). As the issue
 *   asks, a NAK does not use up the retry counter; rxe decrements it for
 *   NAKs as for timeouts (both go through COMPST_ERROR_RETRY).
 * - The retransmit timer (local ACK timeout, 4.096 us * 2^timeout; timeout
 *   0 means no timer, IBA 9.7.6.1.3) is started when a packet is sent and
 *   the timer is not running, restarted whenever an ACK or NAK makes
 *   progress while PSNs are outstanding, and stopped when none are (rxe:
 *   mod_timer in update_state and at COMPST_EXIT). On expiry with PSNs
 *   outstanding the stream restarts at the oldest unacknowledged PSN and the
 *   retry counter is decremented; an expiry with the counter at 0 puts the
 *   QP in error and every pending message completes with RETRY_EXC_ERR
 *   (verbs would give the first RETRY_EXC and the rest WR_FLUSH_ERR; the
 *   issue asks for one status). So retry_cnt r fails on the (r+1)th
 *   expiry. IBA: retry_cnt 7 means seven retries; rxe treats 7 as
 *   "infinite" (it never decrements a count of 7) — we follow IBA, as
 *   hardware does. Progress (an ACK or NAK that retires PSNs) reloads the
 *   retry counter (rxe reset_retry_counters).
 *
 * Also here: QP creation, configuration checks, the transmit pull
 * (responder ACKs first) and framing: the ICRC over the IP/UDP header that
 * Linux will write (see uroce.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "uroce_int.h"
#include "common/wire.h"

#define IPV4_HDR_BYTES 20
#define IPV6_HDR_BYTES 40
#define UDP_HDR_BYTES 8
#define MAX_MSG_BYTES 0x80000000u
#define RXE_SPORT_BASE 0xc000u      /* rxe: RXE_ROCE_V2_SPORT */
#define GOLDEN_RATIO_32 0x61c88647u /* Linux hash_32() multiplier */

__attribute__((format(printf, 3, 4))) static void fmt_err(char *err, size_t errlen, const char *fmt,
                                                          ...) {
  va_list ap;
  if (!err || !errlen) return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

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

int jct_uroce_qp_create(const jct_uroce_cfg_t *cfg, jct_uroce_qp_t **out, char *err,
                        size_t errlen) {
  uint32_t mtu = cfg->path_mtu_bytes;
  *out = NULL;
  if (mtu < 256 || mtu > 4096 || (mtu & (mtu - 1))) {
    fmt_err(err, errlen, "uroce: path MTU %u is not 256, 512, 1024, 2048 or 4096", mtu);
    return JCT_EINVAL;
  }
  if (cfg->timeout > 31) {
    fmt_err(err, errlen, "uroce: timeout %u is outside 0..31", cfg->timeout);
    return JCT_EINVAL;
  }
  if (cfg->retry_cnt > 7) {
    fmt_err(err, errlen, "uroce: retry count %u is outside 0..7", cfg->retry_cnt);
    return JCT_EINVAL;
  }
  if (cfg->local_qpn > JCT_QPN_MASK || cfg->remote_qpn > JCT_QPN_MASK) {
    fmt_err(err, errlen, "uroce: QPN 0x%x is wider than 24 bits",
            cfg->local_qpn > JCT_QPN_MASK ? cfg->local_qpn : cfg->remote_qpn);
    return JCT_EINVAL;
  }
  if (cfg->sq_psn > JCT_PSN_MASK || cfg->rq_psn > JCT_PSN_MASK) {
    fmt_err(err, errlen, "uroce: start PSN 0x%x is wider than 24 bits",
            cfg->sq_psn > JCT_PSN_MASK ? cfg->sq_psn : cfg->rq_psn);
    return JCT_EINVAL;
  }
  if (!addr_ok(&cfg->local) || !addr_ok(&cfg->remote) || cfg->local.family != cfg->remote.family) {
    fmt_err(err, errlen, "uroce: addresses must both be IPv4 or both IPv6 (families %u, %u)",
            cfg->local.family, cfg->remote.family);
    return JCT_EINVAL;
  }
  if (cfg->sq_depth == 0 || cfg->sq_depth > (1u << 20)) {
    fmt_err(err, errlen, "uroce: send queue depth %u is outside 1..1048576", cfg->sq_depth);
    return JCT_EINVAL;
  }

  jct_uroce_qp_t *qp = calloc(1, sizeof *qp);
  if (!qp) return JCT_ENOMEM;
  qp->cfg = *cfg;
  qp->req.sq = calloc(cfg->sq_depth, sizeof *qp->req.sq);
  qp->scratch_bytes = IPV6_HDR_BYTES + UDP_HDR_BYTES + JCT_BTH_BYTES + JCT_RETH_BYTES +
                      JCT_IMMDT_BYTES + mtu + JCT_ICRC_BYTES;
  qp->scratch = malloc(qp->scratch_bytes);
  if (!qp->req.sq || !qp->scratch) {
    jct_uroce_qp_destroy(qp);
    fmt_err(err, errlen, "uroce: no memory for a send queue of %u", cfg->sq_depth);
    return JCT_ENOMEM;
  }
  /* rxe: src_port = 0xc000 + (hash_32(qpn, 14) & 0x3fff), stable per QP. */
  qp->udp_sport = cfg->udp_sport
                      ? cfg->udp_sport
                      : (uint16_t)(RXE_SPORT_BASE + ((cfg->local_qpn * GOLDEN_RATIO_32) >> 18));
  struct jct__uroce_req *r = &qp->req;
  r->una_psn = r->next_psn = r->max_psn = r->post_psn = cfg->sq_psn;
  r->rto_ns = cfg->timeout ? (uint64_t)JCT_UROCE_TIMEOUT_UNIT_NS << cfg->timeout : 0;
  r->rto_deadline_ns = UINT64_MAX;
  r->retry_left = cfg->retry_cnt;
  jct__uroce_resp_init(qp);
  *out = qp;
  return 0;
}

void jct_uroce_qp_destroy(jct_uroce_qp_t *qp) {
  if (!qp) return;
  free(qp->req.sq);
  free(qp->scratch);
  free(qp);
}

/* ---- framing ---- */

uint32_t jct__uroce_icrc(jct_uroce_qp_t *qp, const jct_addr_t *src, const jct_addr_t *dst,
                         uint16_t sport, const uint8_t *pkt, size_t len) {
  size_t ip_bytes = src->family == 6 ? IPV6_HDR_BYTES : IPV4_HDR_BYTES;
  size_t udp_len = UDP_HDR_BYTES + len;
  if (len < JCT_BTH_BYTES + JCT_ICRC_BYTES || ip_bytes + udp_len > qp->scratch_bytes) return 0;
  uint8_t *ip = qp->scratch;
  memset(ip, 0, ip_bytes + UDP_HDR_BYTES);
  if (src->family == 6) {
    ip[0] = 0x60;
    jct__put16(ip + 4, (uint16_t)udp_len);
    ip[6] = 17; /* next header: UDP */
    ip[7] = 64; /* hop limit (masked) */
    memcpy(ip + 8, src->bytes, 16);
    memcpy(ip + 24, dst->bytes, 16);
  } else {
    ip[0] = 0x45;
    jct__put16(ip + 2, (uint16_t)(ip_bytes + udp_len));
    /* ID 0 (bytes 4-5): Linux's choice for DF datagrams from unconnected sockets */
    jct__put16(ip + 6, 0x4000); /* DF */
    ip[8] = 64;                 /* TTL (masked) */
    ip[9] = 17;                 /* UDP */
    memcpy(ip + 12, src->bytes, 4);
    memcpy(ip + 16, dst->bytes, 4);
  }
  uint8_t *udp = ip + ip_bytes;
  jct__put16(udp, sport);
  jct__put16(udp + 2, JCT_ROCEV2_UDP_PORT);
  jct__put16(udp + 4, (uint16_t)udp_len);
  /* checksum 0: RoCEv2 over IPv4 sends none; masked from the ICRC anyway */
  memcpy(udp + UDP_HDR_BYTES, pkt, len);
  return jct_icrc(ip, ip_bytes + udp_len - JCT_ICRC_BYTES);
}

/* ---- requester ---- */

static struct jct__uroce_wqe *wqe_at(jct_uroce_qp_t *qp, uint32_t seq) {
  return &qp->req.sq[seq % qp->cfg.sq_depth];
}

static uint32_t wqe_end_psn(const struct jct__uroce_wqe *w) {
  return jct_psn_add(w->first_psn, w->npkts);
}

int jct_uroce_post_write(jct_uroce_qp_t *qp, const jct_uroce_wr_t *wr, char *err, size_t errlen) {
  struct jct__uroce_req *r = &qp->req;
  if (qp->error) {
    fmt_err(err, errlen, "uroce: QP 0x%x is in the error state", qp->cfg.local_qpn);
    return JCT_EINVAL;
  }
  if (wr->bytes > MAX_MSG_BYTES) {
    fmt_err(err, errlen, "uroce: message of %u bytes is over 2^31", wr->bytes);
    return JCT_EINVAL;
  }
  if (r->tail_seq - r->head_seq >= qp->cfg.sq_depth) {
    fmt_err(err, errlen, "uroce: send queue full (%u messages outstanding)", qp->cfg.sq_depth);
    return JCT_ENOMEM;
  }
  uint32_t mtu = qp->cfg.path_mtu_bytes;
  struct jct__uroce_wqe *w = wqe_at(qp, r->tail_seq);
  w->wr_id = wr->wr_id;
  w->remote_va = wr->remote_va;
  w->rkey = wr->rkey ? wr->rkey : qp->cfg.rkey;
  w->bytes = wr->bytes;
  w->imm = wr->imm;
  w->has_imm = wr->has_imm;
  w->first_psn = r->post_psn;
  w->npkts = wr->bytes ? (wr->bytes + mtu - 1) / mtu : 1;
  r->post_psn = wqe_end_psn(w);
  r->tail_seq++;
  return 0;
}

int jct_uroce_post_cts(jct_uroce_qp_t *qp, uint64_t wr_id, char *err, size_t errlen) {
  jct_uroce_wr_t wr = {.wr_id = wr_id, .bytes = JCT_UROCE_CTS_BYTES};
  return jct_uroce_post_write(qp, &wr, err, errlen);
}

/* Point next_psn (and cur_seq) at psn. */
static void seek(jct_uroce_qp_t *qp, uint32_t psn) {
  struct jct__uroce_req *r = &qp->req;
  r->next_psn = psn;
  r->cur_seq = r->head_seq;
  while (r->cur_seq != r->tail_seq && jct_psn_diff(psn, wqe_end_psn(wqe_at(qp, r->cur_seq))) >= 0)
    r->cur_seq++;
}

static uint8_t write_opcode(const struct jct__uroce_wqe *w, bool first, bool last) {
  if (first && last)
    return w->has_imm ? JCT_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : JCT_OP_RC_RDMA_WRITE_ONLY;
  if (first) return JCT_OP_RC_RDMA_WRITE_FIRST;
  if (last)
    return w->has_imm ? JCT_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : JCT_OP_RC_RDMA_WRITE_LAST;
  return JCT_OP_RC_RDMA_WRITE_MIDDLE;
}

/* The request packet at next_psn, without its ICRC; 0 when none may go. */
static size_t req_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap) {
  struct jct__uroce_req *r = &qp->req;
  if (r->next_psn == r->post_psn) return 0;
  if (jct_psn_diff(r->next_psn, r->una_psn) >= JCT_UROCE_MAX_UNACKED_PSNS) {
    qp->stats.window_stalls++;
    return 0;
  }
  const struct jct__uroce_wqe *w = wqe_at(qp, r->cur_seq);
  uint32_t mtu = qp->cfg.path_mtu_bytes;
  uint32_t k = (uint32_t)jct_psn_diff(r->next_psn, w->first_psn);
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
  memset(buf + hdr, 0, payload + pad); /* no memory behind the QP: zeros */

  if (jct_psn_diff(r->next_psn, r->max_psn) < 0) {
    qp->stats.retx_pkts++;
    qp->stats.retx_bytes += n;
  } else {
    r->max_psn = jct_psn_add(r->next_psn, 1);
  }
  qp->stats.tx_data_pkts++;
  r->next_psn = jct_psn_add(r->next_psn, 1);
  if (last) r->cur_seq++;
  if (r->rto_ns && r->rto_deadline_ns == UINT64_MAX) r->rto_deadline_ns = now_ns + r->rto_ns;
  return n;
}

static bool paused(const jct_uroce_qp_t *qp, uint64_t now_ns) {
  return qp->cfg.paused_until_ns && now_ns < *qp->cfg.paused_until_ns;
}

size_t jct_uroce_next_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap) {
  qp->last_now_ns = now_ns;
  if (qp->error || cap < jct_uroce_max_packet_bytes(qp) || paused(qp, now_ns)) return 0;
  size_t n = jct__uroce_resp_ack(qp, buf, cap);
  if (!n) n = req_packet(qp, now_ns, buf, cap);
  if (!n) return 0;
  uint32_t icrc = jct__uroce_icrc(qp, &qp->cfg.local, &qp->cfg.remote, qp->udp_sport, buf, n);
  jct__putle32(buf + n - JCT_ICRC_BYTES, icrc);
  qp->stats.tx_pkts++;
  qp->stats.tx_bytes += n;
  return n;
}

/* ---- completer ---- */

static void arm_if_outstanding(jct_uroce_qp_t *qp, uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  r->rto_deadline_ns = r->rto_ns && r->una_psn != r->max_psn ? now_ns + r->rto_ns : UINT64_MAX;
}

/* Everything before psn is acknowledged: retire it, complete messages. */
static void retire(jct_uroce_qp_t *qp, uint32_t psn, uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  r->una_psn = psn;
  r->retry_left = qp->cfg.retry_cnt;
  if (jct_psn_diff(r->next_psn, psn) < 0) seek(qp, psn);
  arm_if_outstanding(qp, now_ns);
  while (r->head_seq != r->tail_seq) {
    const struct jct__uroce_wqe *w = wqe_at(qp, r->head_seq);
    if (jct_psn_diff(psn, wqe_end_psn(w)) < 0) break;
    jct_uroce_event_t ev = {.type = JCT_UROCE_EV_SEND_DONE,
                            .status = JCT_UROCE_WC_SUCCESS,
                            .wr_id = w->wr_id,
                            .bytes = w->bytes,
                            .has_imm = w->has_imm,
                            .imm = w->imm,
                            .time_ns = now_ns};
    if (r->cur_seq == r->head_seq) r->cur_seq++;
    r->head_seq++;
    qp->stats.msgs_sent++;
    jct__uroce_emit(qp, &ev); /* may post: tail_seq moves, nothing else */
  }
}

/* Restart the send stream at psn (go-back-N). */
static void go_back(jct_uroce_qp_t *qp, uint32_t psn, uint64_t now_ns) {
  seek(qp, psn);
  qp->stats.go_back_n++;
  if (qp->req.rto_ns) qp->req.rto_deadline_ns = now_ns + qp->req.rto_ns;
}

jct_uroce_rx_t jct__uroce_comp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  uint32_t psn = h->bth.psn;
  uint8_t syn = h->aeth.syndrome;
  enum jct_aeth_type type = jct_aeth_type(syn);

  if (type == JCT_AETH_ACK) {
    qp->stats.rx_acks++;
    /* valid: una - 1 (a repeat, no progress) .. max_psn - 1 */
    if (jct_psn_diff(psn, r->una_psn) < -1 || jct_psn_diff(psn, r->max_psn) >= 0) {
      qp->stats.rx_stale_acks++;
      return JCT_UROCE_RX_IGNORED;
    }
    if (jct_psn_diff(psn, r->una_psn) >= 0) retire(qp, jct_psn_add(psn, 1), now_ns);
    return JCT_UROCE_RX_ACCEPTED;
  }
  if (type == JCT_AETH_NAK && jct_aeth_value(syn) == JCT_NAK_PSN_SEQ_ERR) {
    qp->stats.rx_naks++;
    if (jct_psn_diff(psn, r->una_psn) < 0 || jct_psn_diff(psn, r->max_psn) >= 0) {
      qp->stats.rx_stale_acks++;
      return JCT_UROCE_RX_IGNORED;
    }
    if (jct_psn_diff(psn, r->una_psn) > 0) retire(qp, psn, now_ns); /* implicit ACK */
    if (!qp->error) go_back(qp, psn, now_ns);
    return JCT_UROCE_RX_ACCEPTED;
  }
  /* RNR NAKs and the other NAK codes: this responder never sends them. */
  qp->stats.rx_malformed++;
  return JCT_UROCE_RX_IGNORED;
}

static void fail_all(jct_uroce_qp_t *qp, uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  qp->error = true;
  r->rto_deadline_ns = UINT64_MAX;
  qp->resp.ack_pending = qp->resp.nak_pending = false;
  while (r->head_seq != r->tail_seq) {
    const struct jct__uroce_wqe *w = wqe_at(qp, r->head_seq);
    jct_uroce_event_t ev = {.type = JCT_UROCE_EV_SEND_DONE,
                            .status = JCT_UROCE_WC_RETRY_EXC_ERR,
                            .wr_id = w->wr_id,
                            .bytes = w->bytes,
                            .has_imm = w->has_imm,
                            .imm = w->imm,
                            .time_ns = now_ns};
    r->head_seq++;
    jct__uroce_emit(qp, &ev); /* posts fail now: the QP is in error */
  }
  r->cur_seq = r->head_seq;
}

void jct_uroce_on_timer(jct_uroce_qp_t *qp, uint64_t now_ns) {
  struct jct__uroce_req *r = &qp->req;
  qp->last_now_ns = now_ns;
  if (qp->error || now_ns < r->rto_deadline_ns) return;
  r->rto_deadline_ns = UINT64_MAX;
  if (r->una_psn == r->max_psn) return; /* spurious: everything was acknowledged */
  qp->stats.timeouts++;
  if (r->retry_left == 0) {
    fail_all(qp, now_ns);
    return;
  }
  r->retry_left--;
  go_back(qp, r->una_psn, now_ns);
}

uint64_t jct_uroce_next_deadline_ns(const jct_uroce_qp_t *qp) {
  const struct jct__uroce_req *r = &qp->req;
  if (qp->error) return UINT64_MAX;
  uint64_t d = r->rto_deadline_ns;
  if (paused(qp, qp->last_now_ns)) {
    bool data = r->next_psn != r->post_psn &&
                jct_psn_diff(r->next_psn, r->una_psn) < JCT_UROCE_MAX_UNACKED_PSNS;
    if ((data || jct__uroce_resp_pending(qp)) && *qp->cfg.paused_until_ns < d)
      d = *qp->cfg.paused_until_ns;
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
void *jct_uroce_data(const jct_uroce_qp_t *qp) {
  return qp->cfg.data;
}
