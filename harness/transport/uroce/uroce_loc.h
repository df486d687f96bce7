/* uroce's internal header: the QP object, and what each of uroce's files
 * gives the others, one section per file (as Linux rxe's rxe_loc.h).
 *
 * The call graph is a tree rooted at the QP file (uroce_qp.c): it owns the
 * QP and the public entry points of include/jctlab/uroce.h, and calls the
 * requester (uroce_req.c), the completer (uroce_comp.c), the responder
 * (uroce_resp.c) and the ICRC (uroce_icrc.c). Those four never call one
 * another nor back into the QP file: what they share is the QP object below
 * and the small static inline helpers of the first section. A capture's
 * go-backs and transmit stalls are one record of the QP (qp->captured),
 * which uroce_captured.c makes, frees, resets and looks stalls up in: a
 * leaf, it calls none of them.
 *
 * State that crosses roles is written by the role the IBA gives it to, as in
 * rxe: the requester starts the retransmit timer when it sends (rxe_req.c
 * update_state); the completer restarts or stops it, retires send queue
 * entries, and points the requester's next PSN back at the oldest
 * unacknowledged one (go-back-N; rxe sets req.need_retry and rxe_req.c
 * rewinds, here the completer rewinds at once, so that the next transmit
 * pull resends from there).
 */
#ifndef JCT_UROCE_LOC_H
#define JCT_UROCE_LOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/uroce.h"

/* ---- uroce_qp.c: the QP object, its creation and its entry points ----
 * It exports nothing inside uroce but the public API (include/jctlab/uroce.h);
 * this section is the object it owns and the helpers every role uses. */

/* A send queue entry (rxe's WQE): one posted RDMA WRITE message. PSNs are
 * given at post time: messages are sent in order, one PSN per packet, so
 * this is what rxe's first_psn/last_psn end up as. */
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

/* The send queue: a ring of cfg.sq_depth entries, seq % sq_depth the slot.
 * Posting appends at tail_seq; the completer retires at head_seq. */
struct jct__uroce_sq {
  struct jct__uroce_wqe *ring;
  uint32_t head_seq; /* oldest message not completed */
  uint32_t tail_seq; /* next free */
};

/* Requester (rxe's qp->req). */
struct jct__uroce_req {
  uint32_t cur_seq;    /* message holding next_psn */
  uint32_t next_psn;   /* next PSN to transmit (rxe req.psn) */
  uint32_t max_psn;    /* one past the highest PSN ever transmitted */
  uint32_t post_psn;   /* one past the last PSN of the last posted message */
  uint32_t noack_pkts; /* packets since the last AckReq */
  /* DCQCN's reaction point and its rate limiter (qp->cc): while the rate
   * is below the line rate, the next request packet goes no earlier than
   * the last one (last_tx_bytes on the wire, at last_tx_ns) took at the
   * current Rc (jct__uroce_req_slot_ns), so that a change of Rc re-times
   * the packet it holds. */
  jct_dcqcn_rp_t rp;
  uint64_t last_tx_ns, last_tx_bytes;
};

/* Completer (rxe's qp->comp). */
struct jct__uroce_comp {
  uint32_t una_psn;   /* oldest PSN not acknowledged (rxe comp.psn) */
  uint8_t retry_left; /* transport retry counter (rxe comp.retry_cnt) */
  bool started_retry; /* a go-back is under way: NAKs are ignored until an ACK makes progress
                         (rxe comp.started_retry) */
  uint64_t go_back_due_ns; /* a NAK's go-back to go_back_psn starts then (cfg.nak_react_ns);
                              UINT64_MAX: none pending */
  uint32_t go_back_psn; /* ... or a captured one's (captured.go_back_ahead) */
  bool nak_ignored;     /* a NAK of ignored_psn was ignored since the last go-back */
  uint32_t ignored_psn;
};

/* A postmortem's captured go-backs (cfg.go_backs) and transmit stalls
 * (cfg.stalls), and what the ones under way hold back, in one record
 * (uroce_captured.c makes, frees and resets it, and finds the stall that
 * holds the requester; the roles apply the rules). */
struct jct__uroce_captured {
  jct_uroce_go_back_t *go_backs; /* cfg.go_backs, copied */
  bool *used;                    /* which of them this repetition used */
  uint32_t n;
  /* A NAK's go-back at a captured depth: it starts once ahead_psns PSNs
   * from comp.go_back_psn on were sent, or when the requester may send
   * nothing more (go_back_ahead 0: none pending). */
  uint32_t go_back_ahead;
  /* ... and, when it may send nothing more, not before then (the NAK's
   * time plus the capture's nak_to_resend_ns; 0: at once). */
  uint64_t go_back_hold_ns;
  /* A NAK the completer ignored (comp.ignored_psn) whose capture's go-back
   * came then (the NAK's time plus its nak_to_resend_ns): the retransmit
   * timer does not fire before (0: none). */
  uint64_t timer_floor_ns;
  /* A captured timer go-back (timer_ns), armed by the requester: due then
   * (UINT64_MAX: none pending), back to at most timer_psn; ACKs of
   * timer_psn and later are held back until it fires. */
  uint64_t timer_due_ns;
  uint64_t timer_ns; /* its timer: restarted this far ahead when an ACK is acted on */
  uint32_t timer_psn;
  uint32_t timer_ahead; /* the capture's depth: ... and after it, until the requester has re-sent
                           this many PSNs (timer_hold, up to timer_end) */
  bool timer_hold;
  uint32_t timer_end;
  /* Capture order (uroce.h): the cfg.go_backs index of the pending NAK's
   * captured go-back (go_back_ahead) and of the armed timer go-back, and the
   * latter's idle_ns, how long after the former it goes back when it ran
   * out first. */
  uint32_t go_back_idx, timer_idx;
  uint64_t timer_idle_ns;
  /* Captured transmit stalls (cfg.stalls, copied), which of them this
   * repetition held, and the one under way: no request packet is made
   * before stall_until_ns (jct__uroce_captured_stalled). */
  jct_uroce_stall_t *stalls;
  bool *stall_used;
  uint32_t nstalls;
  uint64_t stall_until_ns;
  /* A captured hole (a go-back's first_tx) whose first transmission went:
   * the requester sends no PSN hole_ahead or more past hole_psn until a
   * NAK, an ACK past it or a go-back (hole_ahead 0: none). */
  uint32_t hole_psn, hole_ahead;
};

/* Responder (rxe's qp->resp). */
struct jct__uroce_resp {
  uint32_t epsn;      /* expected PSN */
  uint32_t msn;       /* messages completed, 24 bits */
  bool nak_sent;      /* NAKed the current gap: silent until epsn arrives */
  bool in_msg;        /* between a FIRST and its LAST */
  uint32_t msg_pkts;  /* packets accepted of the current message */
  uint32_t msg_bytes; /* payload accepted so far in the current message */
  bool ack_pending;   /* an ACK of epsn - 1 is owed (coalesced) */
  bool nak_pending;   /* a NAK PSN-sequence-error of nak_psn is owed */
  uint32_t nak_psn;
  uint64_t nak_due_ns; /* ... and goes out no earlier (a captured go-back's hole_to_nak_ns after
                          the gap, else cfg.nak_delay_ns) */
  jct_dcqcn_np_t np;  /* DCQCN's notification point (qp->cc) */
  bool cnp_pending;   /* a CNP is owed (sent before ACK/NAKs) */
};

struct jct_uroce_qp {
  jct_uroce_cfg_t cfg;
  uint16_t udp_sport;
  bool error;
  bool cc; /* DCQCN on (cfg.dcqcn was given) */
  uint64_t last_now_ns; /* the latest now_ns seen, for next_deadline_ns */
  /* The retransmit timer (rxe's qp->retrans_timer): the local ACK timeout
   * (0: no timer) and when it fires (UINT64_MAX: not armed). */
  uint64_t ack_timeout_ns;
  uint64_t retrans_deadline_ns;
  struct jct__uroce_sq sq;
  struct jct__uroce_req req;
  struct jct__uroce_comp comp;
  struct jct__uroce_resp resp;
  jct_uroce_stats_t stats;
  struct jct__uroce_captured captured; /* cfg.go_backs and cfg.stalls, replayed
                                          (uroce_captured.c) */
  uint32_t rep_seq;       /* requester: the repetition's first message */
  bool rep_faulted;       /* the repetition has the faults (jct_uroce_rep_start) */
  uint64_t rep_msgs_recv; /* responder: messages received before the repetition */
  uint8_t *scratch; /* IP + UDP header room, then the UDP payload, for the ICRC */
  size_t scratch_bytes;
};

static inline struct jct__uroce_wqe *jct__uroce_wqe_at(const jct_uroce_qp_t *qp, uint32_t seq) {
  return &qp->sq.ring[seq % qp->cfg.sq_depth];
}

/* One past the message's last PSN. */
static inline uint32_t jct__uroce_wqe_end_psn(const struct jct__uroce_wqe *w) {
  return jct_psn_add(w->first_psn, w->npkts);
}

/* Deliver a message completion to the caller. */
static inline void jct__uroce_emit(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev) {
  if (qp->cfg.cb) qp->cfg.cb(qp, ev);
}

/* ---- uroce_req.c: the requester, posted messages into request packets ---- */

/* Append a message (already checked: the QP is not in error, the send queue
 * has room) to the send queue, giving it its PSNs. */
void jct__uroce_req_post(jct_uroce_qp_t *qp, const jct_uroce_wr_t *wr);
/* Whether a request packet may go now (one is posted and the window has
 * room). */
bool jct__uroce_req_ready(const jct_uroce_qp_t *qp);
/* Whether DCQCN's rate limiter holds the next request packet back at
 * now_ns (its reaction point's timers brought up to now_ns first) until
 * jct__uroce_req_slot_ns. */
bool jct__uroce_req_held(jct_uroce_qp_t *qp, uint64_t now_ns);
/* The limiter's slot at the current Rc: the last request packet's time
 * plus its wire time at Rc (0 before any). A later Rc moves it: the HPCC
 * simulator's rate limiter (alibaba-edu/High-Precision-Congestion-Control,
 * rdma-hw.cc, ChangeRate) re-times its next packet the same way, and
 * without it a QP cut to a few Mbit/s would wait out that rate's gap (33
 * ms for a 4 KiB frame at 1 Mbit/s) long after DCQCN raised Rc again. */
uint64_t jct__uroce_req_slot_ns(const jct_uroce_qp_t *qp);
/* Where the QP's own retransmit timer, (re)started at now_ns, starts: the
 * end of a captured stall under way (it does not run during one, uroce.h),
 * else now_ns. */
static inline uint64_t jct__uroce_timer_start_ns(const jct_uroce_qp_t *qp, uint64_t now_ns) {
  return now_ns < qp->captured.stall_until_ns ? qp->captured.stall_until_ns : now_ns;
}
/* Write the request packet at the next PSN (its ICRC room left unset) into
 * buf and return its length with the ICRC; 0 when none may go. */
size_t jct__uroce_req_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap);

/* ---- uroce_comp.c: the completer, ACK/NAKs and timeouts into progress ---- */

/* An ACKNOWLEDGE packet from the peer (h parsed, the QP not in error). */
jct_uroce_rx_t jct__uroce_comp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  uint64_t now_ns);
/* The retransmit timer fired (already disarmed). Returns true when the retry
 * counter has run out: the QP must go to the error state. */
bool jct__uroce_comp_timeout(jct_uroce_qp_t *qp, uint64_t now_ns);
/* Start a captured timer go-back that is due (captured.timer_due_ns). */
void jct__uroce_comp_timer_go_back(jct_uroce_qp_t *qp, uint64_t now_ns);
/* Start a NAK's go-back whose reaction time (cfg.nak_react_ns) is over. */
void jct__uroce_comp_go_back_due(jct_uroce_qp_t *qp, uint64_t now_ns);
/* Start a NAK's go-back at a captured depth once the requester has sent
 * that far or may send nothing more (ready: jct__uroce_req_ready()), and
 * its captured reaction time is over. */
void jct__uroce_comp_go_back_deep(jct_uroce_qp_t *qp, bool ready, uint64_t now_ns);
/* Whether a captured go-back is pending whose depth the requester has
 * reached: it sends nothing more until the go-back starts. */
bool jct__uroce_comp_go_back_holds(const jct_uroce_qp_t *qp);
/* Complete every pending message with RETRY_EXC_ERR (the QP is in error). */
void jct__uroce_comp_flush(jct_uroce_qp_t *qp, uint64_t now_ns);

/* ---- uroce_resp.c: the responder, the peer's requests into ACK/NAKs ---- */

/* Whether a CNP, ACK or NAK is owed. */
bool jct__uroce_resp_pending(const jct_uroce_qp_t *qp);
/* Write the owed CNP (BTH + 16 reserved bytes, Annex A17.9) or ACK/NAK
 * (BTH + AETH), no ICRC yet, into p; returns its length including the
 * ICRC room, 0 when none is owed. A CNP goes first; a NAK not before it
 * is due (cfg.nak_delay_ns). */
size_t jct__uroce_resp_ack(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *p, size_t cap);
/* When an owed NAK falls due (UINT64_MAX: none owed, or due already). */
uint64_t jct__uroce_resp_nak_due_ns(const jct_uroce_qp_t *qp, uint64_t now_ns);
/* An RC RDMA WRITE request packet (h parsed, op its opcode's info,
 * payload_bytes without the pad; the QP not in error); ce: it arrived
 * ECN-CE marked. */
jct_uroce_rx_t jct__uroce_resp_rx(jct_uroce_qp_t *qp, const struct jct_roce_hdrs *h,
                                  const struct jct_opcode_info *op, uint32_t payload_bytes,
                                  bool ce, uint64_t now_ns);

/* ---- uroce_captured.c: a capture's go-backs and stalls, replayed ----
 * The record qp->captured (above): made, freed and reset here, and its
 * stalls looked up; read and written by the roles, whose rules they are. */

/* Copy the n captured go-backs g and the nstalls captured stalls st into c
 * (zeroed; 0: none). Errors: JCT_ENOMEM (jct__uroce_captured_free then
 * frees what was made). */
int jct__uroce_captured_init(struct jct__uroce_captured *c, const jct_uroce_go_back_t *g,
                             uint32_t n, const jct_uroce_stall_t *st, uint32_t nstalls);
void jct__uroce_captured_free(struct jct__uroce_captured *c);
/* A repetition starts: every go-back and stall unused, no timer go-back
 * pending, no stall under way. */
void jct__uroce_captured_rep_start(struct jct__uroce_captured *c);
/* Whether a captured transmit stall holds the requester's next packet at
 * now_ns: one under way, or, when that packet is about to go for the first
 * time (fresh), an unused one captured at packet pkt of the repetition's
 * message msg, which starts now and is marked used; *began_ns is then its
 * stall_ns, else 0. */
bool jct__uroce_captured_stalled(struct jct__uroce_captured *c, uint32_t msg, uint32_t pkt,
                                 bool fresh, uint64_t now_ns, uint64_t *began_ns);
/* When the captured stall that holds the requester at now_ns ends
 * (UINT64_MAX: none holds it). */
uint64_t jct__uroce_captured_stall_end_ns(const struct jct__uroce_captured *c, uint64_t now_ns);

/* ---- uroce_icrc.c: the ICRC over the IP/UDP header the kernel writes ---- */

/* Size of qp->scratch for a path MTU: the largest IP + UDP header and
 * packet the ICRC is computed over. */
size_t jct__uroce_scratch_bytes(uint32_t path_mtu_bytes);
/* Fill the last 4 bytes of a packet this QP sends (pkt/len, UDP payload). */
void jct__uroce_icrc_generate(jct_uroce_qp_t *qp, uint8_t *pkt, size_t len);
/* Whether a received packet's last 4 bytes are the ICRC the peer computed,
 * sent from its udp_sport. */
bool jct__uroce_icrc_check(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len, uint16_t udp_sport);

#endif
