/* The postmortem view of a RoCEv2 capture: per-QP flows, messages, ACK/NAK
 * exchanges, go-back-N retransmissions, timeouts, PSN gaps, congestion
 * marks, CNPs and PFC pauses, rebuilt in one streaming pass.
 *
 * Memory grows with the number of flows and links, never with the number
 * of packets. The budget is JCT_INSPECT_FLOW_BUDGET_BYTES (512) bytes per
 * flow, everything included (the flow's record, about 430 bytes with four
 * opcode counters; its share of the flow and address-pair tables, 11 to 21
 * bytes each, and of the profile's, 4; the JSON document, which is
 * streamed), as peak resident memory of `jctlab inspect`, with or without
 * --json, per flow: measured 469 bytes on a million flows each between its
 * own pair of addresses, the costliest case (bench/inspect --flows N;
 * suites/check_cli.c asserts the budget on 100,000 flows). Outside the
 * budget: a flow that carries more than four opcodes keeps the others in
 * an array of 8-byte counters on the heap, and a flow whose message starts
 * wait on missing PSNs (see "message") borrows a ring of 768 bytes, given
 * back once they are resolved; a flow that lost packets keeps its holes (see "hole"), 32
 * bytes each open and 40 more; the profile (jct_inspect_profile()) keeps,
 * besides 4 bytes per address pair, one sample per loss and per timeout,
 * and per link that carries messages of more than one packet about 100
 * bytes and its spacings in bins of 1/8 octave (32 bytes a bin).
 * Timeline events are handed to a callback as they are found.
 *
 * Definitions (the README's "jctlab inspect" section says the same for users):
 * - flow: packets with the same (source IP, destination IP, BTH destination
 *   QP), as Wireshark's and the shipped trace's README count them.
 * - data packet: any RoCE packet but ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE and CNP.
 * - retransmitted packet: a data packet whose PSN is not above the highest
 *   PSN already seen on its flow (24-bit serial arithmetic, RFC 1982 style:
 *   a is above b when (a - b) mod 2^24 is in [1, 2^23)).
 * - gap: a data packet whose PSN is above highest+1; gap_psns counts the
 *   PSNs skipped (lost before the capture point).
 * - rewind: a retransmitted packet whose PSN is not one above the previous
 *   data packet's: the requester went back, either after new packets or
 *   again in the middle of a retransmission. It is a go-back-N rewind when
 *   the flow's peer (the flow that carries its ACKs) sent a NAK since the
 *   last rewind, else a timeout episode (retransmit timer expiry, IBA
 *   9.7.6.1.3; rxe's rxe_comp.c).
 * - recovery: from the first rewind to the first data packet above the
 *   highest PSN seen before it; recovery_ns sums these per flow ("time lost
 *   to retransmissions"); a recovery still open at the end of the capture
 *   is not counted.
 * - hole: one lost PSN, seen when the capture point shows it missing (a
 *   gap: the first packet after it; or a re-sent PSN skipped within a
 *   go-back, or left out when new PSNs follow before the go-back reached
 *   the highest), or, for a PSN lost after the capture point, at the NAK
 *   that names it. Its retransmission is the next data packet with its
 *   PSN; loss_recovery_ns sums, per lost PSN, hole → retransmission
 *   (losses_recovered of them; per flow: jct_inspect_flow_losses()): the
 *   per-loss latency recovery_ns leaves out (the time to notice the loss
 *   and NAK it). A gap or skip of more than 64 PSNs opens 64 holes.
 * - message: FIRST..LAST or ONLY of SEND, RDMA WRITE, READ response; a
 *   READ request or an atomic is a one-packet message. Only first
 *   transmissions start one. It completes when its last packet is seen with
 *   every PSN before it in the message seen (as the responder at the capture
 *   point would accept it); completion time is from its first packet.
 * - peer: the flow in the other direction between the same two addresses
 *   whose PSNs the ACKs acknowledge (ACK PSN within the data flow's seen PSN
 *   range); -1 until one is seen.
 * - pause: a PFC frame with quanta q > 0 for priority p pauses p on the
 *   sender's link for q * 512 bit times at opts.link_rate_bps; quanta 0 (XON)
 *   ends it. paused_ns is the union of the paused intervals.
 */
#ifndef JCTLAB_INSPECT_H
#define JCTLAB_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/decode.h"
#include "jctlab/profile.h"

/* Peak resident bytes per flow the analysis and `jctlab inspect` keep to
 * (see above). */
#define JCT_INSPECT_FLOW_BUDGET_BYTES 512u

enum {
  JCT_MSG_SEND,
  JCT_MSG_WRITE,
  JCT_MSG_READ_REQ,
  JCT_MSG_READ_RESP,
  JCT_MSG_ATOMIC,
  JCT_MSG__COUNT
};

typedef struct {
  jct_addr_t src, dst;
  uint32_t dest_qp;
} jct_flow_key_t;

typedef struct {
  uint64_t packets, wire_bytes, payload_bytes;
  uint64_t first_ns, last_ns;
  uint64_t messages[JCT_MSG__COUNT]; /* started (first transmissions) */
  uint64_t messages_completed;
  uint64_t last_done_ns;  /* when the last of them completed (valid when any did) */
  uint64_t message_bytes; /* payload of completed messages */
  uint64_t msg_time_sum_ns, msg_time_min_ns, msg_time_max_ns; /* of completed ones */
  uint64_t acks;                                              /* AETH ACKs carried on this flow */
  uint64_t nak_seq_err, nak_rnr, nak_other;                   /* NAKs carried on this flow */
  uint64_t retransmitted_packets, retransmitted_bytes;        /* bytes: payload */
  uint64_t gaps, gap_psns;
  uint64_t rewinds;  /* go-back-N rewinds after a NAK */
  uint64_t timeouts; /* rewinds with no NAK before them */
  uint64_t recovery_ns;
  uint64_t cnps, ecn_ce, bad_icrc;
  uint32_t psn_first, psn_highest; /* of data packets; valid when the flow carried any */
} jct_flow_stats_t;

typedef struct {
  jct_flow_key_t key;
  jct_flow_stats_t st;
  long peer;         /* index of the ACK/data flow paired with it, or -1 */
  uint8_t pcp, dscp; /* of its last packet */
} jct_flow_t;

typedef struct {
  uint64_t frames, xoff, xon; /* PFC/PAUSE frames naming this priority */
  uint64_t paused_ns;
} jct_pause_prio_t;

typedef struct {
  uint8_t src_mac[6]; /* the sender of the pause frames */
  jct_pause_prio_t prio[8];
  uint64_t frames;
  bool pause_802_3x; /* at least one was a plain PAUSE */
} jct_link_t;

typedef struct {
  uint64_t frames, wire_bytes;
  uint64_t roce_packets, pfc_frames, other_frames, malformed_frames;
  uint64_t by_reason[JCT_REASON__COUNT];
  uint64_t opcode_packets[256];
  uint64_t first_ns, last_ns; /* of all frames */
  /* Sums over flows and links. */
  uint64_t messages, messages_completed;
  uint64_t acks, nak_seq_err, nak_rnr, nak_other;
  uint64_t retransmitted_packets, retransmitted_bytes;
  uint64_t gaps, gap_psns, rewinds, timeouts, recovery_ns;
  uint64_t losses_recovered, loss_recovery_ns;
  uint64_t cnps, ecn_ce, bad_icrc, icrc_unchecked;
  uint64_t paused_ns; /* summed over links and priorities */
  uint64_t pause_frames_xoff, pause_frames_xon;
} jct_totals_t;

typedef enum {
  JCT_EV_MSG_DONE, /* psn: the message's first PSN; value: payload bytes; dur_ns: completion time */
  JCT_EV_GAP,      /* psn: first missing PSN; value: PSNs missing */
  JCT_EV_NAK,      /* on the ACK flow; psn: the expected PSN; value: syndrome */
  JCT_EV_REWIND,   /* go-back-N: psn rewound to; value: its depth, PSNs re-sent ahead: from psn
                      to the last PSN sent before it, inclusive (the highest, or, when it cuts
                      a go-back short, the last that one re-sent) */
  JCT_EV_TIMEOUT,  /* a rewind with no NAK before it; as REWIND; dur_ns: how long the flow had
                      heard nothing (its own data packets, ACK/NAKs for it) */
  JCT_EV_RECOVERED, /* first new PSN after a rewind; dur_ns: recovery time */
  JCT_EV_CNP,
  JCT_EV_ECN_CE,
  JCT_EV_BAD_ICRC,    /* value: the ICRC read */
  JCT_EV_PAUSE,       /* link event: prio, value: quanta, dur_ns: pause time */
  JCT_EV_RESUME,      /* link event: XON for prio; dur_ns: how long it was paused */
  JCT_EV_HOLE_RESENT, /* a hole's retransmission; psn: the hole; dur_ns: hole → now;
                         value: NAK → now, 0 when no NAK named the hole */
  JCT_EV__COUNT
} jct_event_type_t;

typedef struct {
  jct_event_type_t type;
  uint64_t ts_ns, frame_no;
  long flow; /* index of the flow, -1 for link events */
  long link; /* index of the link, -1 for flow events */
  uint32_t psn;
  uint8_t prio;
  uint64_t value, dur_ns;
  uint32_t nak_ahead_psns; /* hole_resent: PSNs past the hole its flow had carried when the NAK
                              named it (the last PSN sent then, the highest or, during a
                              go-back, the last it re-sent, less the hole's); 0: no NAK, or the
                              NAK came first, or the requester was not past the hole */
} jct_event_t;

/* "msg_done", "gap", "nak", "rewind", "timeout", "recovered", "cnp", "ecn_ce",
 * "bad_icrc", "pause", "resume", "hole_resent". */
const char *jct_event_name(jct_event_type_t t);

typedef void (*jct_event_cb)(const jct_event_t *ev, void *arg);

/* Called by jct_inspect_trace() for every frame, after it was analysed. */
typedef void (*jct_packet_cb)(const jct_packet_t *pkt, uint64_t frame_no, uint64_t ts_ns,
                              void *arg);

typedef struct {
  uint64_t link_rate_bps;  /* for pause quanta; 0 means the default, 100 Gbit/s */
  jct_event_cb on_event;   /* may be NULL */
  void *arg;               /* for on_event */
  jct_packet_cb on_packet; /* may be NULL; jct_inspect_trace() only */
  void *packet_arg;
} jct_inspect_opts_t;

typedef struct jct_inspect jct_inspect_t;

/* A new, empty analysis. Errors: JCT_ENOMEM. */
int jct_inspect_new(jct_inspect_t **out, const jct_inspect_opts_t *opts);

/* Account for one decoded frame seen at ts_ns. Errors: JCT_ENOMEM (a new
 * flow or link could not be stored; the frame is still counted in totals). */
int jct_inspect_add(jct_inspect_t *ins, const jct_packet_t *pkt, uint64_t ts_ns, uint64_t frame_no,
                    uint32_t wire_len);

/* Close what is still open at the end of the capture (pauses in progress
 * count up to their expiry). Call once, before reading the results. */
void jct_inspect_finish(jct_inspect_t *ins);

const jct_totals_t *jct_inspect_totals(const jct_inspect_t *ins);
size_t jct_inspect_nflows(const jct_inspect_t *ins);
const jct_flow_t *jct_inspect_flow(const jct_inspect_t *ins, size_t i); /* first-seen order */

typedef struct {
  uint8_t opcode;
  uint64_t packets;
} jct_opcode_count_t;

/* The BTH opcodes flow i carried, in ascending order, with their packet
 * counts, written to out (256 entries always suffice); returns how many
 * (0 for a flow that does not exist). A flow's counts are kept sparse (most
 * carry a handful of opcodes), so they are read through this call rather
 * than a table in jct_flow_stats_t. */
size_t jct_inspect_flow_opcodes(const jct_inspect_t *ins, size_t i, jct_opcode_count_t out[256]);
size_t jct_inspect_nlinks(const jct_inspect_t *ins);
const jct_link_t *jct_inspect_link(const jct_inspect_t *ins, size_t i);
uint64_t jct_inspect_link_rate_bps(const jct_inspect_t *ins);

/* Flow i's lost PSNs whose retransmission was seen (see "hole") and the
 * sum of their latencies, hole → retransmission; 0 and 0 for a flow that
 * lost none. Kept with the flow's holes, not in its stats: most flows
 * never lose a packet, and the budget above is per flow. */
void jct_inspect_flow_losses(const jct_inspect_t *ins, size_t i, uint64_t *recovered,
                             uint64_t *recovery_ns);

/* The profile of the captured system (profile.h) from what was added so
 * far; links name addresses, never ranks. On success *out is new
 * (jct_profile_free). Errors: JCT_ENOMEM. */
int jct_inspect_profile(const jct_inspect_t *ins, jct_profile_t **out);

void jct_inspect_free(jct_inspect_t *ins);

/* Feed every frame of an open capture (trace.h) to ins, decoding each, and
 * finish the analysis. Returns 0, JCT_ETRUNC when the capture ends inside a
 * record (what came before it is analysed; err says which record), or
 * JCT_ENOMEM. */
struct jct_trace;
int jct_inspect_trace(jct_inspect_t *ins, struct jct_trace *t, char *err, size_t errlen);

/* Read a whole capture (trace.h), decode every frame and analyse it.
 * On success *out holds the finished analysis. A capture that ends inside a
 * record is still analysed up to it: the return is JCT_ETRUNC, *out is set
 * and err says which record. Other errors (JCT_EIO, JCT_ENOTCAP,
 * JCT_ELINKTYPE, JCT_ENOMEM) leave *out NULL. */
int jct_inspect_path(const char *path, const jct_inspect_opts_t *opts, jct_inspect_t **out,
                     char *err, size_t errlen);

#endif
