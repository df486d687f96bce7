/* What the schedule inference's files share (internal to jctlab):
 * infer_scan.c reads the capture into messages and losses, infer.c makes
 * the schedule of them, infer_pattern.c recognises the collective. */
#ifndef JCT_INFER_INT_H
#define JCT_INFER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/infer.h"
#include "jctlab/inspect.h"

#define JCT__NEVER UINT64_MAX    /* done_ns of a message never completed */
#define JCT__U_BASE (1ull << 32) /* a flow's first PSN, unwrapped: never goes below 0 */
#define JCT__SENT_WINDOW 1024u   /* PSNs below the highest whose sends are counted */

/* What the timer saw since it was started (infer_timer.c): an ACK of
 * unwrapped PSN u after which PSNs were outstanding (JCT__TEV_ACK) or none
 * were (JCT__TEV_QUIET), or, in a quiet stretch, a send of a new PSN (which
 * ends it: JCT__TEV_SEND) or of one already acknowledged (JCT__TEV_RESEND). */
enum { JCT__TEV_ACK, JCT__TEV_QUIET, JCT__TEV_SEND, JCT__TEV_RESEND };

/* One message, first transmissions. PSNs are unwrapped to 64 bits per flow
 * so that they sort. */
typedef struct {
  uint32_t flow;              /* index into the scan's flows */
  uint64_t first_u, last_u;   /* unwrapped PSNs of its first and last packets */
  uint64_t start_ns, done_ns; /* done: JCT__NEVER when not completed */
  uint64_t bytes_seen;        /* payload of the first transmissions seen */
  uint64_t bytes_done;        /* payload accepted, when completed */
  uint32_t reth_len;          /* RETH DMA length (has_reth) */
  uint32_t first_payload;     /* payload bytes of its first packet (the path MTU if longer) */
  uint32_t imm;
  uint8_t kind; /* JCT_MSG_* */
  bool has_reth, has_imm, last_seen;
} jct__imsg_t;

/* One first-transmission packet lost. */
typedef struct {
  uint32_t flow;
  uint64_t u;     /* unwrapped PSN */
  uint64_t ts_ns; /* when the loss showed (the packet after the gap, or the rewind) */
  bool before_capture, recovered, timeout;
  bool retransmission; /* only a retransmission of it was lost */
  uint32_t again;
  /* The copy each lost transmission was (infer.h, jct_infer_fault_t copies), in order: the
   * packet's sends the capture saw plus its losses before it, + 1. */
  uint8_t copy[JCT_INFER_MAX_COPIES];
  uint8_t ncopies;
  uint8_t behind; /* bit c: copy[c] was lost behind a hole (infer.h, jct_infer_fault_t) */
} jct__ifault_t;

/* A go-back: to unwrapped PSN u, after a NAK or (timer) none. ahead: its
 * depth, the PSNs from u to the last the requester had sent (infer.h
 * ahead_psns); span: from u to the flow's highest PSN, what it goes on to
 * re-send unless another go-back cuts it short (the faults it recovers). */
typedef struct {
  uint32_t flow;
  uint64_t u, ahead, span;
  bool timer;
  uint64_t ts_ns;          /* when it showed */
  uint64_t idle_ns;        /* timer: how long the flow had heard nothing */
  /* timer: rxe's reference (infer_timer.c): the send that started the
   * timer (ref_ns, then the resolved reference) and what came after it
   * (sc->qsends[qs_first ..+ nqs]): ACKs before its packet, sends after
   * quiet stretches; timer_ns: from the resolved reference to the go-back. */
  uint64_t ref_ns, timer_ns;
  uint32_t qs_first, nqs;
  uint64_t hole_to_nak_ns; /* its hole's, when the NAK came after the hole was seen; 0: not */
  uint32_t nak_ahead;      /* PSNs past the hole seen when the NAK came (0: not known) */
  uint64_t nak_to_resend_ns; /* the NAK that named its hole to its retransmission; 0: none */
} jct__igoback_t;

typedef struct {
  jct_flow_key_t key;
  bool seen;
  uint32_t psn0;   /* its first data packet's PSN: unwrapped U_BASE */
  uint32_t hi;     /* highest PSN of a data packet, 24-bit */
  uint64_t hi_u;   /* the same, unwrapped */
  uint64_t last_u; /* of the last data packet */
  uint64_t epsn_u; /* the responder's expected PSN as the capture point saw it: one past
                      the PSNs that came in order (IBA vol. 1, 9.7.5.2.1), unwrapped */
  bool last_retx;  /* ... which was a retransmission */
  bool retx_gap;   /* re-sent PSNs went missing since the last rewind */
  uint32_t *msgs;  /* message indices, by first_u */
  size_t nmsgs, capmsgs;
  uint32_t *faults; /* fault indices, by u */
  size_t nfaults, capfaults;
  bool has_imm_msg; /* carries a message with immediate data other than a clear-to-send's */
  long peer;        /* the flow carrying its ACKs (inspect.h), -1: none */
  uint8_t *sent;    /* sends seen of the last JCT__SENT_WINDOW PSNs up to hi_u, by u mod it
                       (saturating): what a fault's copy counts (infer_loss.c) */
  /* rxe's retransmit timer as the capture shows it (infer_timer.c). */
  uint64_t tmr_arm_ns;      /* the send that started it (it was not pending); 0: none yet */
  bool tmr_fired;           /* a timer go-back since: the next send arms it */
  bool tmr_quiet;           /* every PSN sent is acknowledged (by the last ACK seen) */
  struct jct__itmr_ev *tev; /* since the arming: ACKs and sends after quiet stretches */
  size_t ntev, captev;
  /* Transmit stalls (infer_stall.c): each first transmission, and the
   * oldest PSN not acknowledged (by the ACKs and NAKs seen) when it went. */
  struct jct__isend *fresh;
  size_t nfresh, capfresh;
  uint64_t una_u; /* unwrapped; 0: nothing acknowledged yet */
} jct__iflow_t;

struct jct__isend {
  uint64_t u, ts_ns, una_u;
};

/* A sender's transmit stall (infer.h, jct_infer_stall_t): on flow `flow`,
 * before the first transmission of unwrapped PSN u, of message msg. */
typedef struct {
  uint32_t flow, msg;
  uint64_t u, gap_ns, stall_ns, spacing_ns;
  uint32_t unacked; /* PSNs sent before it, unacknowledged when it ended */
} jct__istall_t;

struct jct__itmr_ev {
  uint64_t ts_ns, u;
  uint8_t kind;
};

typedef struct {
  jct__imsg_t *msgs;
  size_t nmsgs, capmsgs;
  jct__ifault_t *faults;
  size_t nfaults, capfaults;
  jct__igoback_t *gobacks; /* capture order */
  size_t ngobacks, capgobacks;
  jct__iflow_t *flows;
  size_t nflows, capflows;
  struct jct__itmr_ev *qsends; /* what the timer go-backs' timers saw (jct__igoback_t qs_first) */
  size_t nqsends, capqsends;
  uint64_t timer_est_ns; /* the retransmit timer the go-backs show (infer_timer.c); 0: none */
  jct__istall_t *stalls; /* transmit stalls (infer_stall.c), by flow and PSN */
  size_t nstalls, capstalls;
  uint64_t stall_min_ns; /* their floor (infer.h) */
  /* counts for the report */
  uint64_t frames, roce_packets, pfc_frames, malformed_frames;
  uint64_t control_tcp, control_cm, control_other;
  uint64_t messages, messages_completed, retransmitted_packets;
  uint64_t frames_backwards;
  jct_profile_t *profile; /* of the captured system; links name addresses */
} jct__iscan_t;

/* What a message is to the schedule (infer_conns.c). */
enum { JCT__CLS_OP, JCT__CLS_CTS, JCT__CLS_NOT_SEND };

/* A connection being made: its flow, ranks, destination QP, channel, id. */
typedef struct {
  uint32_t flow, src, dst, qp, channel, id;
} jct__iconn_t;

/* A message's size: a WRITE's RETH length, else the payload it carried. */
uint64_t jct__imsg_bytes(const jct__imsg_t *m);
/* cls[i] for every message; counts flow control and not-sends in rep. */
int jct__infer_classify(const jct__iscan_t *sc, uint32_t cts_max, uint8_t *cls,
                        jct_infer_report_t *rep);
/* rep->ranks and rep->rank_addr, and the connections (*conns_out, malloc'd),
 * in final order. Errors: JCT_ENOMEM. */
int jct__infer_ranks_conns(const jct__iscan_t *sc, const uint8_t *cls, jct_infer_report_t *rep,
                           jct__iconn_t **conns_out, uint32_t *nconns_out);

/* For each flow, the connection (index into ic) whose clear-to-sends
 * it carries, UINT32_MAX for none (infer.h): the connection on the same
 * QP pair (the flow is its peer), else the only connection from the
 * flow's destination to its source. conn_of_flow: sc->nflows entries. */
void jct__infer_cts_conns(const jct__iscan_t *sc, const uint8_t *cls, const jct__iconn_t *ic,
                          uint32_t nc, const jct_infer_report_t *rep, uint32_t *conn_of_flow);

/* One op while the schedule is made (infer.c, infer_deps.c). */
typedef struct {
  uint32_t msg, conn;         /* conn: the final connection id */
  uint32_t src;               /* sending rank */
  uint64_t start_ns, done_ns; /* done: JCT__NEVER when never completed */
  uint64_t bytes;
  uint32_t *deps; /* op indices (this array's), then final ids */
  uint32_t ndeps;
  uint32_t step;
  uint64_t gap_ns;
} jct__iop_t;

/* The ops in make order: each connection's ops contiguous and in PSN order
 * (conn_first[c], conn_nops[c]); conns[c] its ranks. */
typedef struct {
  jct__iop_t *ops;
  uint32_t nops, nranks, nconns;
  const jct_conn_t *conns;
  const uint32_t *conn_first, *conn_nops;
} jct__iplan_t;

/* Deps by happens-before (received messages, and program order after a
 * pause nothing received explains), implied ones dropped; steps; gap_ns
 * (less the turnaround unless keep_turnaround), and the confidence figures
 * in rep. Errors: JCT_ENOMEM. */
int jct__infer_deps(jct__iplan_t *p, bool keep_turnaround, jct_infer_report_t *rep);

/* Read the open capture t (named path in messages; the caller closes it)
 * into sc (zeroed by the caller). Errors as jct_infer(); sc holds what was
 * read either way: jct__iscan_free(). */
struct jct_trace;
int jct__infer_scan(struct jct_trace *t, const char *path, jct__iscan_t *sc, char *err,
                    size_t errlen);
void jct__iscan_free(jct__iscan_t *sc);

/* The message of flow f holding unwrapped PSN u (the last one starting at
 * or before it), or -1. */
long jct__iscan_msg_at(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u);

/* Losses (infer_loss.c), on flow fi at unwrapped PSN u: the fault there
 * (or -1); n PSNs missing at the capture point; re-sent PSNs [from_u, to_u)
 * skipped; a rewind (or timeout) to u re-sending `ahead` PSNs (its span,
 * to the flow's highest PSN, not its depth: jct__igoback_t). Errors:
 * JCT_ENOMEM. */
long jct__iloss_at(const jct__iscan_t *sc, const jct__iflow_t *f, uint64_t u);
int jct__iloss_gap(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t n, uint64_t ts_ns);
int jct__iloss_retx_skip(jct__iscan_t *sc, uint32_t fi, uint64_t from_u, uint64_t to_u,
                         uint64_t ts_ns);
int jct__iloss_rewind(jct__iscan_t *sc, uint32_t fi, uint64_t u, uint64_t ahead, bool timeout,
                      uint64_t ts_ns);

/* rxe's retransmit timer (infer_timer.c), per data flow fi: a data
 * packet sent at ts_ns (fresh: a PSN past the highest before); an ACK (nak: a NAK) of psn seen at
 * ts_ns; a timer go-back just recorded (sc->gobacks' last) takes the flow's reference. Errors:
 * JCT_ENOMEM. After the scan, jct__itimer_resolve() estimates the timer and times each timer
 * go-back from its reference. */
int jct__itimer_data(jct__iscan_t *sc, uint32_t fi, bool fresh, uint64_t ts_ns);
int jct__itimer_ack(jct__iscan_t *sc, uint32_t fi, uint32_t psn, bool nak, uint64_t ts_ns);
int jct__itimer_go_back(jct__iscan_t *sc, uint32_t fi);
int jct__itimer_resolve(jct__iscan_t *sc);

/* Transmit stalls (infer_stall.c): after the scan, which kept each flow's
 * first transmissions (jct__iflow_t fresh), fill sc->stalls by the rule of
 * infer.h. Errors: JCT_ENOMEM. */
int jct__istall_find(jct__iscan_t *sc);

#endif
