/* uroce: jctlab's userspace RoCEv2 reliable-connection transport, as pure
 * protocol state machines.
 *
 * A jct_uroce_qp_t is one end of an RC queue pair: a requester (with its
 * completer) that segments posted RDMA WRITE messages into packets, and a
 * responder that accepts the peer's packets and acknowledges them. It does
 * no I/O and reads no clock: packets go in and out as UDP payload bytes
 * (BTH .. ICRC, exactly what a UDP/4791 socket sends and receives), time is
 * the caller's `now_ns` (CLOCK_MONOTONIC), and the QP says when it next
 * needs to be called (jct_uroce_next_deadline_ns). Nothing is allocated
 * after jct_uroce_qp_create().
 *
 * Wire format and semantics follow the InfiniBand Architecture
 * Specification Vol. 1 (chapter 9: RC transport, PSNs, ACK/NAK, the local
 * ACK timeout and the transport retry counter) and Annex A17 (RoCEv2), and
 * behave as Linux soft-RoCE (drivers/infiniband/sw/rxe: rxe_req.c,
 * rxe_comp.c, rxe_resp.c) does; where the two differ, the source files say
 * which one is followed.
 *
 * The ICRC covers the IP and UDP headers, which the kernel writes. The QP
 * builds them as Linux will for an unconnected UDP socket sending with
 * IP_PMTUDISC_DO: IPv4 version/IHL 0x45, total length, ID 0 (Linux uses ID
 * 0 for DF datagrams from unconnected sockets), DF, protocol 17, the
 * configured addresses; IPv6 payload length, next header 17. TOS/traffic
 * class, flow label, TTL/hop limit, header and UDP checksums are masked out
 * of the ICRC and do not matter. The UDP source port must be the one the
 * socket really sends from (cfg.udp_sport).
 *
 * Usage (the socket glue):
 *   jct_uroce_cfg_init(&cfg); cfg.local_qpn = ...; jct_uroce_qp_create(&cfg, &qp, err, n);
 *   post:     jct_uroce_post_write(qp, &wr, ...) / jct_uroce_post_cts(qp, wr_id, ...)
 *   transmit: while ((n = jct_uroce_next_packet(qp, now, buf, cap))) sendto(buf, n)
 *             (or one per pacing slot); ACKs come out first.
 *   receive:  jct_uroce_rx(qp, payload, n, peer_udp_sport, now)
 *   timers:   arm for jct_uroce_next_deadline_ns(qp); when due, jct_uroce_on_timer(qp, now),
 *             then transmit again.
 *   events:   cfg.cb is called from jct_uroce_rx() and jct_uroce_on_timer() (never from
 *             next_packet) with message completions; it may post, but must not destroy the QP.
 */
#ifndef JCTLAB_UROCE_H
#define JCTLAB_UROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/dcqcn.h"
#include "jctlab/decode.h" /* jct_addr_t */
#include "jctlab/roce.h"

#define JCT_UROCE_MAX_UNACKED_PSNS 128      /* window: PSNs sent and not yet acknowledged */
#define JCT_UROCE_MAX_PKTS_PER_ACK 64       /* AckReq at least every this many packets */
#define JCT_UROCE_CTS_BYTES 64              /* NCCL's clear-to-send: one 64-byte RDMA WRITE */
#define JCT_UROCE_TIMEOUT_UNIT_NS 4096      /* local ACK timeout = 4.096 us * 2^timeout */
#define JCT_UROCE_ACK_CREDIT_UNLIMITED 0x1f /* AETH syndrome of an ACK, as rxe sends */
/* What a packet holds the link for besides its UDP payload, as the rate
 * limiter counts it: UDP 8, IPv4 20 (IPv6 40), Ethernet 14, and 24 of
 * preamble, FCS and gap. */
#define JCT_UROCE_WIRE_OVERHEAD_BYTES (8 + 20 + 14 + 24)

/* Bytes on the wire of a full packet of the path MTU (a MIDDLE one: BTH,
 * payload, ICRC, over IPv4): what run.h's α-β model and a capture's
 * replay (its NIC queue's drain) count a packet as. */
static inline uint64_t jct_uroce_full_packet_wire_bytes(uint32_t path_mtu_bytes) {
  return (uint64_t)JCT_BTH_BYTES + path_mtu_bytes + JCT_ICRC_BYTES + JCT_UROCE_WIRE_OVERHEAD_BYTES;
}
/* Largest UDP payload a QP with a 4096-byte path MTU produces:
 * BTH + RETH + ImmDt + 4096 + ICRC. */
#define JCT_UROCE_MAX_PACKET_BYTES                                                                 \
  (JCT_BTH_BYTES + JCT_RETH_BYTES + JCT_IMMDT_BYTES + 4096 + JCT_ICRC_BYTES)

typedef struct jct_uroce_qp jct_uroce_qp_t;

/* Completion status, as the verbs work completion status it stands for. */
typedef enum {
  JCT_UROCE_WC_SUCCESS = 0,
  JCT_UROCE_WC_RETRY_EXC_ERR, /* IBV_WC_RETRY_EXC_ERR: the transport retry counter ran out */
} jct_uroce_wc_status_t;

typedef enum {
  JCT_UROCE_EV_SEND_DONE, /* requester: a posted message was acknowledged, or failed */
  JCT_UROCE_EV_RECV,      /* responder: a whole message from the peer was accepted */
} jct_uroce_ev_type_t;

typedef struct {
  jct_uroce_ev_type_t type;
  jct_uroce_wc_status_t status; /* SEND_DONE; RECV is always SUCCESS */
  uint64_t wr_id;               /* SEND_DONE: as posted */
  uint32_t bytes;               /* message length */
  bool has_imm;                 /* RECV: WRITE_*_WITH_IMMEDIATE (a CTS has none) */
  uint32_t imm;                 /* host order */
  uint64_t time_ns;             /* the now_ns of the call that completed it */
} jct_uroce_event_t;

typedef void (*jct_uroce_cb)(jct_uroce_qp_t *qp, const jct_uroce_event_t *ev);

/* One go-back of a captured requester (a postmortem's, from the capture:
 * infer.h's go_backs): when a NAK names packet pkt of the msg-th message
 * this QP sends in a repetition (jct_uroce_rep_start()), the requester
 * sends on until its next PSN is ahead_psns past the NAKed one (the
 * captured go-back's depth, infer.h: the last PSN the captured requester
 * had sent less the NAKed one, plus one; a NAK that comes while a go-back
 * re-sends lets it re-send that far first, and the capture's depth of such
 * a go-back ends where the go-back it cut short had got to, not at the
 * highest PSN), or until it may send nothing more (nothing posted, or
 * its window full), then sends nothing and goes back no earlier than
 * nak_to_resend_ns after the NAK (the capture's NAK → go-back: rxe's
 * completer task took that long to act on the NAK, its requester having
 * sent that far; 0: at once); the QP's retransmit timer waits for it. A
 * NAK that arrives while a go-back is under way is ignored (below, and
 * uroce_comp.c), but its entry's nak_to_resend_ns still holds the timer,
 * whose go-back stands for it, back until then. Linux rxe, under load, hands the NAK to its
 * completer task while its requester task sends on, and a packet it has
 * handed to the kernel (up to RXE_INFLIGHT_SKBS_PER_QP_HIGH, 64, per QP)
 * still goes out after the NAK (rxe_comp.c, rxe_req.c): how far it got is
 * the host's timing, which the capture shows per loss. The responder, on
 * a gap at packet pkt of the msg-th message it receives in a repetition,
 * sends its NAK hole_to_nak_ns after the gap (the capture's lag at that
 * loss: rxe's responder task works through what it had received before it
 * meets the gap), whatever has arrived since; nak_ahead_psns (the PSNs
 * past the hole the capture saw before its NAK) is the capture's figure,
 * reported, not a trigger (uroce_resp.c says why). first_tx: the hole is
 * the packet's first transmission (the postmortem drops it), so in a
 * faulted repetition the requester, once it has sent it, sends no PSN
 * ahead_psns or more past it until a NAK, an ACK past it or a go-back:
 * the capture's sender had got no further before its go-back, and the
 * NAK, at its captured time, may come later than the replay's link
 * carries that many (uroce_req.c). An entry with ahead_psns 0 is
 * none for the requester, one with hole_to_nak_ns 0 none for the
 * responder: nak_react_ns and nak_delay_ns hold then. conn is the schedule's connection (the ranks
 * pick each QP's entries by it); cts: a go-back of the connection's
 * clear-to-sends, whose requester is the connection's destination end
 * and whose responder its source end (msg: the clear-to-send's place among
 * them, pkt 0).
 * A timer go-back (timer_ns > 0, the requester's; infer.h's timer
 * go-backs) runs as rxe's retransmit timer did in the capture: started
 * when the requester first sends the msg-th message's first packet, as if
 * timer_lead_ns earlier (the capture's timer had started that long before
 * the message), restarted timer_ns ahead each time the completer acts on
 * an ACK while PSNs are outstanding (rxe_comp.c COMPST_EXIT; not on a NAK,
 * which sends the requester back), it goes back when it runs out as the
 * retransmit timer would (counted as a timeout, retry counter untouched),
 * to the oldest unacknowledged PSN, at most packet pkt: until then the
 * ACKs of packet pkt and later do not reach it (dropped and counted,
 * rx_acks_held: the capture's requester had not acted on them) and its own
 * timer waits. One with recovers_loss (it re-sent a captured loss: the
 * faults' effect) runs only in faulted repetitions (jct_uroce_rep_start);
 * the others (nothing lost: the hosts' late ACKs) in every repetition. It re-sends what it has sent
 * from there (go-back-N), its ACKs still held until it has re-sent
 * ahead_psns PSNs (the capture's depth) or all it had sent. One is pending
 * at a time per QP; a later one armed while one is pending is not used.
 * The QP's captured go-backs keep the capture's order (their order in
 * cfg.go_backs): a timer go-back that runs out while a NAK's captured
 * go-back that came before it in the capture is still waiting (for its
 * depth or its nak_to_resend_ns) waits for it, and goes back idle_ns after
 * it (the capture's quiet before the timer's go-back; at least 1 us), not
 * in its place: the lab's ring2-drop1pct's rxe timer went back 1.4 ms after the NAK's
 * go-back whose re-sent copy was lost, 79.1 ms after the ACK that restarted
 * it, and a replay whose sends run a few ms slower or faster must not swap
 * them (the timer would re-send the copy the postmortem drops, and nothing
 * but the QP's own timer would re-send it again). */
typedef struct {
  uint32_t conn, msg, pkt;
  uint32_t ahead_psns;
  uint64_t hole_to_nak_ns;
  uint32_t nak_ahead_psns;
  uint64_t nak_to_resend_ns; /* the requester's: from the NAK to its go-back (0: at once) */
  uint64_t timer_ns;      /* from the timer's start (or restart) to the go-back */
  uint64_t timer_lead_ns; /* how long before the message's first send the timer started */
  uint64_t idle_ns;       /* a timer go-back's: its flow heard nothing for this long before it */
  bool recovers_loss;     /* faulted repetitions only */
  bool cts;               /* of the clear-to-sends: the ends swap roles */
  bool first_tx;          /* the hole is its packet's first transmission (above) */
} jct_uroce_go_back_t;

/* A captured sender's transmit stall (a postmortem's, from the capture:
 * infer.h's stalls): when the requester is about to send packet pkt of the
 * msg-th message this QP sends in a repetition (jct_uroce_rep_start()) for
 * the first time, it sends no request packet for stall_ns (of the clock
 * it is given: emulated time, so dilation changes nothing), then goes on.
 * The host's, not the faults': every repetition holds it, baseline and
 * faulted alike, once. The QP's own retransmit timer does not run during
 * it: it resumes with the time it had left when the stall began, and one
 * (re)started during it starts at its end. A stall is a gap in which the
 * capture's timer did not go back (the rule excludes gaps with a go-back
 * in them, infer.h), so a replay timer that ran out there would re-send
 * what the capture never re-sent: the shipped capture's 91.6 ms stall,
 * with 2 PSNs outstanding, ran uroce's 67.1 ms timer out in every
 * repetition (a go-back and a timeout the capture has not). A captured
 * timer go-back (jct_uroce_go_back_t) keeps its times: they were measured
 * across the capture's stalls. ACK/NAKs it owes still go out. conn: the
 * schedule's connection (the ranks give each QP its own). */
typedef struct {
  uint32_t conn, msg, pkt;
  uint64_t stall_ns;
} jct_uroce_stall_t;

typedef struct {
  uint32_t local_qpn, remote_qpn; /* 24 bits */
  uint32_t sq_psn;                /* first PSN this QP sends (24 bits) */
  uint32_t rq_psn;                /* first PSN expected from the peer (its sq_psn) */
  uint32_t path_mtu_bytes;        /* 256, 512, 1024, 2048 or 4096 (default) */
  uint8_t timeout;          /* local ACK timeout exponent 0..31 (default 20); 0: no timer (IBA) */
  uint8_t retry_cnt;        /* transport retries 0..7 (default 7) */
  jct_addr_t local, remote; /* same family, 4 or 6 */
  uint16_t udp_sport;       /* this QP's UDP source port; 0: rxe's hash of local_qpn */
  uint16_t pkey;            /* default 0xffff */
  uint32_t rkey;            /* RETH rkey when a work request gives none */
  uint32_t sq_depth;        /* messages posted and not completed (default 256) */
  /* A slow host's turnaround (0: none, as a NIC): the responder sends a NAK
   * nak_delay_ns after the gap that caused it, and the requester starts a
   * NAK's go-back nak_react_ns after the NAK arrived (sending on
   * meanwhile). Soft-RoCE under load takes milliseconds for each; a
   * capture's profile gives them (hole_to_nak_ns, nak_to_resend_ns). */
  uint64_t nak_delay_ns, nak_react_ns;
  /* Captured go-backs (above; copied), each used once per repetition, the
   * first unused one of the NAKed position; a NAK with none waits
   * nak_react_ns. NULL/0: none. */
  const jct_uroce_go_back_t *go_backs;
  uint32_t ngo_backs;
  /* Captured transmit stalls (above; copied), each held once per
   * repetition. NULL/0: none. */
  const jct_uroce_stall_t *stalls;
  uint32_t nstalls;
  /* Rank-level pause (PFC), owned by the caller and shared by its QPs: while
   * now_ns < *paused_until_ns the QP transmits nothing. NULL: never paused. */
  const uint64_t *paused_until_ns;
  /* Congestion control (include/jctlab/dcqcn.h): NULL, none (ECN-CE is
   * ignored, CNPs are counted and ignored); else DCQCN with these
   * parameters (copied): the responder answers CE-marked requests with
   * CNPs, the requester cuts its rate on CNPs and paces its request
   * packets at its current rate below line_rate_bps (the link's rate,
   * > 0 with dcqcn). */
  const jct_dcqcn_params_t *dcqcn;
  uint64_t line_rate_bps;
  jct_uroce_cb cb; /* may be NULL */
  void *data;      /* the caller's; jct_uroce_data() */
} jct_uroce_cfg_t;

/* One RDMA WRITE message. */
typedef struct {
  uint64_t wr_id;
  uint32_t bytes; /* 0 .. 2^31 */
  bool has_imm;   /* LAST/ONLY_WITH_IMMEDIATE, the peer gets a RECV event with imm */
  uint32_t imm;
  uint64_t remote_va; /* RETH virtual address */
  uint32_t rkey;      /* 0: cfg.rkey */
} jct_uroce_wr_t;

/* Counters. Bytes are UDP payload bytes (BTH .. ICRC). */
typedef struct {
  uint64_t tx_pkts, tx_bytes;     /* everything produced, ACKs included */
  uint64_t tx_data_pkts;          /* request packets, retransmissions included */
  uint64_t retx_pkts, retx_bytes; /* request packets sent again (go-back-N) */
  uint64_t tx_acks, tx_naks;      /* responder: ACK and NAK (PSN sequence error) packets */
  uint64_t rx_pkts;               /* passed to jct_uroce_rx() */
  uint64_t rx_acks, rx_naks;      /* requester: ACKs / NAK-PSN-sequence-errors received */
  uint64_t rx_naks_ignored;       /* of rx_naks: during a go-back, before an ACK made progress */
  uint64_t rx_stale_acks;         /* ACKs for PSNs already acknowledged, or never sent */
  uint64_t timeouts;              /* local ACK timer expiries with packets outstanding */
  uint64_t timeouts_after_nak;    /* of them, back to the PSN a NAK it ignored had named */
  uint64_t go_back_n;             /* restarts of the send stream (NAK or timeout) */
  uint64_t go_back_captured;      /* of them: NAKs' go-backs at a captured depth (cfg.go_backs) */
  uint64_t go_back_timer;         /* of them: captured timer go-backs (cfg.go_backs timer_ns; also
                                     counted in timeouts) */
  uint64_t rx_acks_held;          /* ACKs dropped while a captured timer go-back was pending */
  uint64_t stalls;                /* captured transmit stalls held (cfg.stalls) */
  uint64_t dup_pkts;              /* responder: PSN below the expected one (re-ACKed) */
  uint64_t out_of_seq_pkts;       /* responder: PSN above the expected one */
  uint64_t bad_icrc;              /* dropped silently, as rxe */
  uint64_t rx_malformed;          /* too short, unknown/unsupported opcode, bad pad */
  uint64_t rx_wrong_qp;           /* BTH destination QP is not ours */
  uint64_t rx_bad_op_seq;         /* opcode out of order in a message (dropped) */
  uint64_t msgs_sent, msgs_recv;  /* SEND_DONE successes, RECV events */
  uint64_t window_stalls;         /* next_packet calls refused because the window was full */
  uint64_t rx_ce_pkts;            /* responder: requests that arrived ECN-CE marked */
  uint64_t tx_cnps, rx_cnps;      /* CNPs sent (notification point) and received */
  uint64_t rate_cuts;             /* requester (DCQCN): CNPs that cut its rate */
  uint64_t below_line_rate_ns;    /* requester (DCQCN): time its rate was below the line
                                     rate, up to the QP's latest call */
} jct_uroce_stats_t;

/* What jct_uroce_rx() did with a packet. */
typedef enum {
  JCT_UROCE_RX_ACCEPTED,   /* request accepted in order, or an ACK/NAK processed */
  JCT_UROCE_RX_DUPLICATE,  /* request below the expected PSN: re-ACKed */
  JCT_UROCE_RX_OUT_OF_SEQ, /* request above the expected PSN: NAKed once, then silent */
  JCT_UROCE_RX_BAD_ICRC,
  JCT_UROCE_RX_MALFORMED,
  JCT_UROCE_RX_WRONG_QP,
  JCT_UROCE_RX_IGNORED, /* stale ACK, bad opcode sequence, or the QP is in error */
} jct_uroce_rx_t;

/* Defaults: path MTU 4096, timeout 20, retry 7, pkey 0xffff, sq_depth 256,
 * everything else zero. */
void jct_uroce_cfg_init(jct_uroce_cfg_t *cfg);

/* Validate cfg completely and create a QP in the ready-to-send state.
 * Returns 0 or JCT_EINVAL (err says which field) / JCT_ENOMEM. */
int jct_uroce_qp_create(const jct_uroce_cfg_t *cfg, jct_uroce_qp_t **out, char *err, size_t errlen);
void jct_uroce_qp_destroy(jct_uroce_qp_t *qp);

/* Post one RDMA WRITE message (a CTS: 64 bytes, no immediate). Returns 0,
 * or JCT_ENOMEM when sq_depth messages are outstanding, or JCT_EINVAL when
 * the QP is in the error state or bytes is too large. When a post fails,
 * no event will be delivered for it. */
int jct_uroce_post_write(jct_uroce_qp_t *qp, const jct_uroce_wr_t *wr, char *err, size_t errlen);
int jct_uroce_post_cts(jct_uroce_qp_t *qp, uint64_t wr_id, char *err, size_t errlen);

/* Write the next packet to transmit (UDP payload, with a valid ICRC) into
 * buf and return its length; 0 when there is nothing to send, the rank is
 * paused, the window is full, the QP is in error, or cap is below
 * jct_uroce_max_packet_bytes(). Pending ACK/NAKs come before data. */
size_t jct_uroce_next_packet(jct_uroce_qp_t *qp, uint64_t now_ns, uint8_t *buf, size_t cap);

/* One received UDP payload; udp_sport is the datagram's source port (it is
 * in the ICRC). Never fails; the result says what happened. */
jct_uroce_rx_t jct_uroce_rx(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len, uint16_t udp_sport,
                            uint64_t now_ns);
/* The same with the IP header's ECN field (RFC 3168: 3 is CE), which the
 * notification point answers with a CNP. jct_uroce_rx() is this with 0. */
jct_uroce_rx_t jct_uroce_rx_ecn(jct_uroce_qp_t *qp, const uint8_t *pkt, size_t len,
                                uint16_t udp_sport, uint8_t ecn, uint64_t now_ns);

/* When to call jct_uroce_on_timer() (the retransmit timer) or to try
 * jct_uroce_next_packet() again (end of a pause, or the rate limiter's
 * next slot, with something to send).
 * UINT64_MAX: nothing due. */
uint64_t jct_uroce_next_deadline_ns(const jct_uroce_qp_t *qp);
void jct_uroce_on_timer(jct_uroce_qp_t *qp, uint64_t now_ns);

const jct_uroce_stats_t *jct_uroce_stats(const jct_uroce_qp_t *qp);
bool jct_uroce_in_error(const jct_uroce_qp_t *qp);
uint16_t jct_uroce_udp_sport(const jct_uroce_qp_t *qp);
size_t jct_uroce_max_packet_bytes(const jct_uroce_qp_t *qp);
uint32_t jct_uroce_local_qpn(const jct_uroce_qp_t *qp);
/* DCQCN back to the line rate (jct_dcqcn_rp_reset; the notification
 * point's CNP interval starts afresh), its counters kept; nothing without
 * congestion control. */
void jct_uroce_cc_reset(jct_uroce_qp_t *qp, uint64_t now_ns);
/* A repetition starts: messages posted from now on count from 0 for the
 * captured go-backs (cfg.go_backs) and stalls (cfg.stalls), which are all unused again; faulted:
 * the repetition has the faults (a baseline has not: its captured timer
 * go-backs that recover a loss stay unused). The previous repetition's
 * job has ended (every message received): the messages its requester
 * still holds unacknowledged (a captured timer go-back due after the
 * job's end, a last ACK lost) are retired without completions and their
 * timers stopped, so that a repetition never sees the previous one's
 * go-backs or completions; not when one was never sent (a failed
 * repetition). */
void jct_uroce_rep_start(jct_uroce_qp_t *qp, bool faulted);
/* The requester's current rate (DCQCN's Rc), or line_rate_bps (0 without
 * congestion control). */
uint64_t jct_uroce_rate_bps(const jct_uroce_qp_t *qp);
void *jct_uroce_data(const jct_uroce_qp_t *qp);

/* The BTH destination QP of a received payload (to pick the QP), or
 * UINT32_MAX when len is shorter than a BTH. */
uint32_t jct_uroce_dest_qpn(const uint8_t *pkt, size_t len);

#endif
