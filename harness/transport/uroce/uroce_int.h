/* uroce internals shared by the requester (uroce_req.c) and the responder
 * (uroce_resp.c): the QP layout and packet framing
 * (the IP/UDP header the kernel will write, for the ICRC). */
#ifndef JCT_UROCE_INT_H
#define JCT_UROCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/uroce.h"

/* A posted message. PSNs are given at post time: messages are sent in
 * order, one PSN per packet, so this is what rxe's first_psn/last_psn end
 * up as. */
struct jct__uroce_wqe {
  uint64_t wr_id;
  uint64_t remote_va;
  uint32_t rkey;
  uint32_t bytes;
  uint32_t imm;
  bool has_imm;
  uint32_t first_psn;
  uint32_t npkts;
};

/* Requester and completer (rxe's qp->req and qp->comp). */
struct jct__uroce_req {
  struct jct__uroce_wqe *sq; /* ring of sq_depth; seq % sq_depth is the slot */
  uint32_t head_seq;         /* oldest message not completed */
  uint32_t cur_seq;          /* message holding next_psn */
  uint32_t tail_seq;         /* next free */
  uint32_t una_psn;          /* oldest PSN not acknowledged (rxe comp.psn) */
  uint32_t next_psn;         /* next PSN to transmit (rxe req.psn) */
  uint32_t max_psn;          /* one past the highest PSN ever transmitted */
  uint32_t post_psn;         /* one past the last PSN of the last posted message */
  uint32_t noack_pkts;       /* packets since the last AckReq */
  uint64_t rto_ns;           /* 0: no timer */
  uint64_t rto_deadline_ns;  /* UINT64_MAX: not armed */
  uint8_t retry_left;
};

/* Responder (rxe's qp->resp). */
struct jct__uroce_resp {
  uint32_t epsn;      /* expected PSN */
  uint32_t msn;       /* messages completed, 24 bits */
  bool nak_sent;      /* NAKed the current gap: silent until epsn arrives */
  bool in_msg;        /* between a FIRST and its LAST */
  uint32_t msg_bytes; /* payload accepted so far in the current message */
  bool ack_pending;   /* an ACK of epsn - 1 is owed (coalesced) */
  bool nak_pending;   /* a NAK PSN-sequence-error of nak_psn is owed */
  uint32_t nak_psn;
};

struct jct_uroce_qp {
  jct_uroce_cfg_t cfg;
  uint16_t udp_sport;
  bool error;
  uint64_t last_now_ns; /* the latest now_ns seen, for next_deadline_ns */
  struct jct__uroce_req req;
  struct jct__uroce_resp resp;
  jct_uroce_stats_t stats;
  uint8_t *scratch; /* IP + UDP header room, then the UDP payload, for the ICRC */
  size_t scratch_bytes;
};

/* The ICRC of a UDP payload (pkt/len, its last 4 bytes the ICRC itself)
 * sent from src:sport to dst:4791, computed with jct_icrc() over the IP and
 * UDP header Linux will write (see uroce.h). Uses qp->scratch. */
uint32_t jct__uroce_icrc(jct_uroce_qp_t *qp, const jct_addr_t *src, const jct_addr_t *dst,
                         uint16_t sport, const uint8_t *pkt, size_t len);

/* Responder side (uroce_resp.c). */
void jct__uroce_resp_init(jct_uroce_qp_t *qp);
bool jct__uroce_resp_pending(const jct_uroce_qp_t *qp);
/* Write the owed ACK/NAK (BTH + AETH, no ICRC yet) into p; returns its
 * length including the ICRC room, 0 when none is owed. */
size_t jct__uroce_resp_ack(jct_uroce_qp_t *qp, uint8_t *p, size_t cap);
jct_uroce_rx_t jct__uroce_resp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  const struct jct_opcode_info *op, uint32_t payload_bytes,
                                  uint64_t now_ns);

/* Completer side (uroce_req.c): an ACK or NAK from the peer. */
jct_uroce_rx_t jct__uroce_comp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  uint64_t now_ns);

static inline void jct__uroce_emit(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev) {
  if (qp->cfg.cb) qp->cfg.cb(qp, ev);
}

#endif
