/* Schedule inference: the replayable schedule (schedule.h) of the job a
 * RoCEv2 capture recorded, with a report of how far to trust it and the
 * losses seen in it, for `jctlab schedule` and the postmortem replay.
 *
 * What is inferred, in one streaming pass over the capture (trace.h,
 * decode.h) with the inspector's definitions (inspect.h) of flows,
 * messages, first transmissions, gaps and rewinds:
 * - ranks: the IP addresses that send or receive a message, in address
 *   order (198.18.0.1 is rank 0 when it is the lowest);
 * - connections: the QP flows (source, destination, BTH destination QP)
 *   that carry messages; the channel numbers the connections between one
 *   pair of ranks in destination QP order;
 * - ops: one per message, first transmissions only (a retransmission is
 *   the fault, not the job). Bytes: the RETH's DMA length of an RDMA WRITE,
 *   else the payload the message carried. Start: the first transmission of
 *   its first packet; when the capture never saw that (lost before the
 *   capture point, its PSN known only from a NAK or a retransmission), 1 ns
 *   before its PSN successor's start, as an RC requester sends in PSN
 *   order (serial-number order from the flow's first PSN); done: its last
 *   packet accepted in PSN order at the capture point;
 * - deps, by happens-before: a send on rank r depends, per connection into
 *   r, on the most recent message r had completely received before the send
 *   started and that no earlier send on the same connection already
 *   depended on; and by program order (schedule.h), on its rank's own
 *   earlier sends, when it started after a pause of its rank that no
 *   received message explains: nothing of the rank in flight for longer
 *   than any message in the capture took (compute, or control traffic the
 *   replay leaves out, as perftest's TCP exchange between two tests), each
 *   of its deps received before the pause began. It then depends on the
 *   last message sent before the pause on each of its rank's connections;
 *   sends that overlapped after the pause stay independent of each other.
 *   Deps implied by another dep (its ancestor) are dropped;
 * - gap_ns: from the last dep's completion to the send's start, less the
 *   capture point's turnaround (the smallest such gap of a send whose deps
 *   are all received messages: the network's share, which a replay's
 *   fabric recreates by itself); from the completion of the last of its
 *   rank's earlier sends when that came later (the send may have been
 *   queued behind them: a stall is not compute).
 * Flow control is recognised and left out, since an executor regenerates
 * it: an RDMA WRITE of at most cts_max_bytes without immediate data, or
 * with the immediate JCT_INFER_CTS_IMM, going against a direction that
 * carries messages with other immediate data (NCCL's and uroce's
 * clear-to-send, a WRITE without immediate; the verbs transport's, a WRITE
 * WITH IMMEDIATE 0xffffffff, which no op id takes). Each clear-to-send
 * belongs to the data connection it precedes: the one on the same QP pair
 * (its flow carries that connection's ACKs, inspect.h's peer), else the
 * only connection from its destination to its source; its position among
 * the clear-to-sends of its flow is the position of the message it
 * announces on that connection (a receiver announces its buffers in
 * order, one per message: executor.h). READ requests and atomics are not
 * sends and are counted apart. Control traffic is ignored and counted: frames that are
 * not RoCE (the TCP bootstrap, ARP, neighbour discovery) and CM MADs
 * (RoCE packets to QP 1, the GSI).
 *
 * Losses (faults): each first-transmission packet that was lost, by PSN:
 * PSNs missing at the capture point (a gap: lost before it), and rewind
 * targets no gap explains (lost after it). A fault is recovered by the
 * first rewind whose range holds it: a go-back-N rewind after a NAK, or a
 * timeout. A retransmission lost too counts in `again`: re-sent PSNs
 * skipped at the capture point, or a rewind that shows up just after
 * faults not yet recovered (its first packets lost again). A re-sent PSN
 * skipped whose first transmission got through is a fault of its own
 * (`retransmission`).
 *
 * Transmit stalls (stalls): the sending host holding a flow's packets back
 * within a message, with nothing on the wire to say why; it is the
 * captured system's (a VM not scheduled, a qdisc or virtio queue not
 * drained), not the incident's, so a replay holds it in its baseline and
 * faulted repetitions alike. The rule: two first transmissions of
 * consecutive PSNs of one message (the later not a FIRST) further apart
 * than JCT_INFER_STALL_SPACINGS times the flow's median spacing of such
 * pairs (JCT_INFER_STALL_MIN_SAMPLES of them at least, else the flow is
 * not judged) and than a floor, stall_min_ns: 1/JCT_INFER_STALL_TIMER_DIV
 * of the retransmit timer the capture's timer go-backs show (timer_est_ns:
 * 4.19 ms at rxe's 2^14), JCT_INFER_STALL_MIN_NS (5 ms) in a capture with
 * none; unless a go-back of the
 * flow (after a NAK, or its timer) showed between them, or the window was
 * full when the earlier went: JCT_INFER_STALL_WINDOW_PSNS or more PSNs
 * unacknowledged by the ACKs and NAKs seen (Linux rxe sends nothing new
 * with RXE_MAX_UNACKED_PSNS, 128, outstanding, and hands its NIC at most
 * RXE_INFLIGHT_SKBS_PER_QP_HIGH, 64, per QP: rxe_req.c, rxe_net.c).
 * Clear-to-send credits wait only between messages, which the rule never
 * judges. The stall is the gap less the median spacing (the packet's own
 * time). A median over the flow keeps a slow link from counting (every
 * spacing is long then) and one late packet among thousands from moving
 * the figure; the floor keeps a VM's scheduling jitter (a few hundred
 * microseconds under TCG) out, in the capture's own time: the same
 * capture with every timestamp compressed 1000x (a system 1000x faster,
 * its timer 2^4 for 2^14) finds the same stalls, each 1000x shorter
 * (DESIGN.md, decision 8: time constants scale together). In traces/rxe-lab-ring2-nodrop.pcap,
 * rank 1's VM sent the first of its 64 packets and then nothing for 62 ms.
 * By the rule no stall has a go-back in it: the captured host's timer did
 * not go back there, though in the shipped capture a 91.6 ms stall left 2
 * PSNs unacknowledged (unacked_psns) against its 67.1 ms timer. The lab's
 * stalls are its TCG VMs taking turns: in rxe-lab-ring2-drop1pct.pcap one
 * rank sends nothing while the other's 64-packet message goes out at line
 * rate (22 ms, frames 208-272), also between a loss and its go-back
 * (frames 65-91, 97-134: the second ends 1 ms after the NAK, with new
 * PSNs, the go-back 17.8 ms later), which a replay holds as captured.
 */
#ifndef JCTLAB_INFER_H
#define JCTLAB_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jctlab/decode.h"
#include "jctlab/schedule.h"

#define JCT_INFER_CTS_MAX_BYTES 64 /* NCCL's clear-to-send */
/* The immediate of the verbs transport's clear-to-send (harness/transport/
 * verbs/verbs.h, JCT_VERBS_CTS_IMM): a 64-byte RDMA WRITE ONLY WITH
 * IMMEDIATE carrying it is flow control, not an op. */
#define JCT_INFER_CTS_IMM 0xffffffffu
#define JCT_INFER_MAX_COPIES 8     /* lost transmissions of a packet whose copy is kept */
/* Transmit stalls (above): a gap over this many median spacings, */
#define JCT_INFER_STALL_SPACINGS 20u
/* ... and over this part of the capture's retransmit timer, */
#define JCT_INFER_STALL_TIMER_DIV 16u
/* ... or this, in ns, where the capture shows no timer, */
#define JCT_INFER_STALL_MIN_NS 5000000ull
/* ... judged on a flow with this many spacings at least, */
#define JCT_INFER_STALL_MIN_SAMPLES 8u
/* ... not after a send that left this many PSNs unacknowledged (a full window). */
#define JCT_INFER_STALL_WINDOW_PSNS 64u

typedef struct {
  uint32_t cts_max_bytes; /* flow-control WRITEs are at most this; 0: 64 */
  bool keep_turnaround;   /* gap_ns as measured, the network's share included */
} jct_infer_opts_t;

/* A loss: a packet of an op's message, or (cts) the clear-to-send that
 * announced the op's message: the op's position among its connection's
 * ops is the clear-to-send's among the connection's clear-to-sends, which
 * travel on the connection's QPs the other way (from its destination's QP
 * to its source's); offset_bytes 0, tail set. */
typedef struct {
  uint32_t op;           /* the op (schedule index) whose message lost it, or whose message
                            the lost clear-to-send announced (cts) */
  uint32_t psn;          /* the lost packet's PSN */
  uint64_t offset_bytes; /* where the packet's payload starts in the message */
  bool tail;             /* the message's last packet (only a timeout recovers it) */
  bool timeout;          /* recovered by the retransmit timer, not after a NAK */
  bool before_capture;   /* never seen at the capture point (a PSN gap) */
  bool retransmission;   /* its first transmission got through; a retransmission was lost */
  uint32_t again;        /* its retransmissions lost too, after the first loss */
  bool cts;              /* a clear-to-send lost, not a packet of the op's message */
  /* Which copy of the packet each lost transmission was, in order (the
   * first transmission lost, or the re-sent copy of a `retransmission`,
   * then each of `again`): 1 is the first transmission, and every send
   * counts, a go-back's copy of a packet not lost since included (the
   * capture's sends of the PSN before the loss, plus the losses before it,
   * + 1); 0 past JCT_INFER_MAX_COPIES. A go-back re-sends every PSN from
   * the NAKed one, so a packet whose first re-sent copy got through can be
   * lost at the next go-back's copy: in the shipped capture PSN 1129980 was
   * lost at its third copy (the second go-back's), drawing a NAK of its own,
   * where losing its second would have been recovered in that go-back. */
  uint8_t copies[JCT_INFER_MAX_COPIES];
  /* Bit c: the transmission copies[c] names was lost behind a hole, an
   * earlier PSN of the flow still missing at the capture point (its
   * expected PSN, IBA vol. 1, 9.7.5.2.1, was before it), so the responder
   * would have discarded it as out of sequence and its loss drew nothing;
   * clear: it was lost at the expected PSN, opening the hole that a NAK or
   * the timer then found. Known at a capture taken at the responder or
   * after the loss; a loss past the capture point (known from its NAK) is
   * at the expected PSN. In the shipped capture 27 of the 34 lost
   * transmissions came at the expected PSN: its 26 NAKs and its timeout. */
  uint8_t behind;
} jct_infer_fault_t;

/* A go-back, in capture order: the requester's restart at a packet and how
 * far it had sent by then, which the postmortem's replay reproduces per go-back
 * (uroce.h, jct_uroce_go_back_t). Most follow a NAK; a timer go-back (timer)
 * has no NAK before it (a timeout in the inspector's definition): rxe's
 * retransmit timer, which it starts with a send while it is not running and
 * restarts on ACKs (rxe_req.c, rxe_comp.c), fired before the ACK of that
 * packet reached the requester's completer (an ACK slow or lost past the
 * capture point, or a packet lost there). Its time is taken from rxe's
 * reference, as the capture shows it: the later of the send that started
 * the timer (one sent while it was not pending: the flow's first, the
 * first after a timer go-back, or the first after the flow had been quiet,
 * everything acknowledged, for longer than the timer) and the last ACK
 * after which PSNs were outstanding (the completer restarts the timer then;
 * a NAK does not: it sends the requester back, nothing is outstanding on
 * the completer's way out). rxe_comp.c COMPST_EXIT, rxe_req.c update_state;
 * traces/infer_timer.c. */
typedef struct {
  uint32_t op;             /* the op whose message holds the packet it went back to */
  uint64_t offset_bytes;   /* that packet's payload offset in the message */
  uint32_t ahead_psns;     /* its depth: from that packet to the last PSN the requester had
                              sent when it went back, inclusive (inspect.h, rewind): the flow's
                              highest PSN, or, when it cut another go-back short (a NAK for a
                              re-sent copy lost, or the timer, while re-sending), the last PSN
                              that one had re-sent. Summed over a flow's go-backs: the PSNs
                              they re-sent, less those lost before the capture point */
  uint64_t hole_to_nak_ns; /* from the packet after the hole to the NAK; 0: the NAK came first
                              (a loss after the capture point) */
  uint32_t nak_ahead_psns; /* PSNs past the hole the requester had sent when the NAK came, as
                              the capture saw them (the responder's lag, in packets; during a
                              go-back, to the last PSN it had re-sent); 0 as hole_to_nak_ns */
  uint64_t nak_to_resend_ns; /* from the NAK that named the hole to its retransmission (the
                                requester's reaction: rxe's completer task acting on the NAK);
                                0: no NAK named it (a timer go-back) */
  bool timer;              /* no NAK before it: the retransmit timer's */
  uint64_t timer_ns;       /* timer: from rxe's reference (above) to the go-back (> 0): the QP's
                              timer plus the host's lag */
  uint64_t timer_lead_ns;  /* timer: how long before the start of the message it went back into
                              that reference was (0: at or after it) */
  uint64_t idle_ns;        /* timer: how long the flow had heard nothing before it (its own data
                              packets, ACK/NAKs for it) */
  bool recovers_loss;      /* a first transmission or retransmission lost in what it re-sent
                              (faults of its flow from its packet to the highest PSN sent): the
                              faults' effect, not the hosts' (a late ACK) */
  bool cts;                /* a go-back of the connection's clear-to-sends (its destination's
                              requester), to the one that announced op's message (offset 0) */
} jct_infer_go_back_t;

/* A sender's transmit stall (above): before the first transmission of the
 * packet at offset_bytes of op's message, its host sent nothing of it for
 * stall_ns more than the flow's packet spacing. */
typedef struct {
  uint32_t op;
  uint32_t psn;          /* the packet sent after the stall */
  uint64_t offset_bytes; /* its payload's offset in the message */
  uint64_t stall_ns;     /* gap_ns less spacing_ns */
  uint64_t gap_ns;       /* from the packet before it (PSN - 1) to it */
  uint64_t spacing_ns;   /* the flow's median spacing (the rule's reference) */
  uint32_t unacked_psns; /* the flow's PSNs sent before it and still not acknowledged when it
                            ended (by the ACKs and NAKs seen, during it too): with some, a
                            stall longer than the QP's retransmit timer and no go-back in it
                            shows that the host's timer stopped with it (a replay's stops
                            too: uroce.h) */
} jct_infer_stall_t;

typedef struct {
  /* What the capture held. */
  uint64_t frames, roce_packets, pfc_frames, malformed_frames;
  uint64_t control_frames;                         /* ignored: the sum of the three below */
  uint64_t control_tcp, control_cm, control_other; /* other: ARP, ND, UDP not 4791, ... */
  uint64_t messages;                               /* started, as `jctlab inspect` counts them */
  uint64_t messages_completed;                     /* at the capture point */
  uint64_t flow_control; /* clear-to-send messages recognised and left out */
  uint64_t not_sends;    /* READ requests and atomics, left out */
  uint64_t retransmitted_packets;
  /* The schedule. */
  uint32_t ranks, connections, ops;
  jct_addr_t *rank_addr; /* ranks of them: rank r's address */
  uint32_t *conn_dest_qp; /* connections of them: connection c's destination QP in the capture
                             (its flow: rank_addr[src] -> rank_addr[dst], that QP) */
  uint64_t total_bytes;  /* sum of the ops' bytes */
  /* Confidence. */
  uint32_t ops_with_deps;      /* of either kind */
  uint32_t deps_received;      /* deps on a message the op's rank received */
  uint32_t deps_program_order; /* deps on the op's rank's own earlier sends */
  uint32_t ops_program_order;  /* ops with a program-order dep: after a pause nothing explains */
  uint64_t order_pause_ns;     /* a pause longer than this (the longest any message took) */
  uint32_t ops_incomplete;     /* never completed at the capture point */
  uint32_t ops_queued;         /* started after their rank's earlier sends, the last completed over
                                  two turnarounds after their deps: maybe queued behind them */
  uint64_t frames_backwards;   /* clock skew: a timestamp before the previous frame's */
  uint32_t skewed_messages;    /* clock skew: completed before they started */
  uint64_t turnaround_ns;      /* subtracted from every gap (0 with keep_turnaround) */
  uint64_t gap_median_ns, gap_max_ns; /* of the ops with deps, as in the schedule */
  /* Recognition (jct_infer_pattern). */
  char pattern[24];        /* "ring", "tree", "all-to-all", "halving-doubling", "unknown" */
  char evidence[256];      /* why, in words */
  uint64_t bytes_estimate; /* the collective's size S, 0 when unknown */
  uint32_t repetitions;    /* of the collective in the capture, 0 when unknown */
  /* Losses. */
  jct_infer_fault_t *faults;
  uint32_t nfaults;
  uint32_t faults_on_flow_control; /* losses of left-out messages that announce no op's
                                      message (more clear-to-sends than ops), not in faults */
  uint32_t cts_faults;             /* of faults, clear-to-sends lost (cts) */
  jct_infer_go_back_t *go_backs;   /* of ops' messages and their clear-to-sends */
  uint32_t ngo_backs;
  uint32_t timer_go_backs; /* of them, with timer set */
  uint64_t timer_est_ns;   /* the retransmit timer they show: 4.096 us x 2^n at or below the lower
                              median of their shortest possible timer_ns; 0: no timer go-back */
  jct_infer_stall_t *stalls; /* the senders' transmit stalls, in ops' messages, capture order by
                                flow */
  uint32_t nstalls;
  uint64_t stall_min_ns; /* the rule's floor for them (above) */
} jct_infer_report_t;

/* Infer the schedule recorded in the capture at trace_path ("-": standard
 * input). opts may be NULL. On success *out is a valid schedule
 * (jct_schedule_validate) whose "algorithm" is the recognised pattern (or
 * "inferred") and whose "bytes" is the estimate of S (for an unknown
 * pattern, the bytes of all its ops); rep (which may be
 * NULL) is filled and owns memory: jct_infer_report_free().
 * Errors: JCT_EIO (cannot open), JCT_ENOTCAP, JCT_ELINKTYPE, JCT_ETRUNC
 * (the capture ends inside a record: nothing is returned), JCT_EINVAL (no
 * RoCE message to make a schedule of; err says what was seen instead),
 * JCT_ENOMEM. err says which file and what is wrong. */
int jct_infer(const char *trace_path, const jct_infer_opts_t *opts, jct_schedule_t **out,
              jct_infer_report_t *rep, char *err, size_t errlen);

/* The same from a capture read from fp (closed before it returns, even on
 * error), named name in messages: fuzz targets feed memory (fmemopen). */
int jct_infer_file(FILE *fp, const char *name, const jct_infer_opts_t *opts, jct_schedule_t **out,
                   jct_infer_report_t *rep, char *err, size_t errlen);

/* Recognise the collective a schedule runs: "ring" (one cycle through all
 * ranks, a multiple of 2(N-1) ops per connection), "halving-doubling" (N a
 * power of two >= 4, partners r XOR 2^k), "all-to-all" (every ordered pair
 * of ranks connected, N >= 3, the same number k of ops per connection; for
 * N < 5 also no chain of deps longer than k), "tree" (every connection has
 * its reverse and
 * the edges are one or two spanning trees: N-1 to 2(N-1) of them, joined),
 * else "unknown". Writes the evidence into evidence (may be NULL), and S
 * (AllReduce: total bytes / 2(N-1) per repetition; all-to-all: / (N-1);
 * unknown: 0) and the repetitions seen into *bytes_out / *reps_out (may be
 * NULL). Returns the name (static storage). Never fails. */
const char *jct_infer_pattern(const jct_schedule_t *s, char *evidence, size_t evlen,
                              uint64_t *bytes_out, uint32_t *reps_out);

void jct_infer_report_free(jct_infer_report_t *rep);

#endif
