/* The ranks of a run over the uroce transport (internal to the harness):
 * one UDP/4791 socket per rank in its namespace, one uroce QP per
 * connection end, the rank's NIC serialization, and PFC pauses honoured.
 *
 * Each rank paces what it sends at the link rate, as its NIC would: a
 * datagram of L bytes of UDP payload holds the link for
 * (L + UDP 8 + IPv4 20 + Ethernet 14 + 24 preamble/FCS/IFG) * 8 / rate.
 * Each rank also listens on its interface for PFC frames (libpcap, filter
 * "ether proto 0x8808") and stops sending for the quanta given on the data
 * priority, as a NIC honouring 802.1Qbb does.
 *
 * Each rank reads the ECN field of what it receives (IP_RECVTOS) and hands
 * it to its QPs, whose DCQCN (when on) answers CE with CNPs.
 *
 * QP numbers: connection c's source end is QPN 0x100 + 2c, its destination
 * end 0x101 + 2c. The executor's hooks post to them; QP events go back to
 * the executor attached for the current repetition.
 */
#ifndef JCT_RANKS_H
#define JCT_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "jctlab/clock.h"
#include "jctlab/executor.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "jctlab/uroce.h"

/* Connection c's QP numbers: its source end 0x100 + 2c, its destination end
 * 0x101 + 2c (the postmortem's targeted drops name the latter). */
#define JCT__UROCE_QPN_BASE 0x100u
static inline uint32_t jct__uroce_qpn(uint32_t conn, bool dst_end) {
  return JCT__UROCE_QPN_BASE + 2 * conn + (dst_end ? 1u : 0u);
}

typedef struct {
  uint64_t rate_bps;
  uint32_t path_mtu_bytes; /* 4096 */
  uint8_t timeout;         /* 20, as NCCL */
  uint8_t retry_cnt;       /* 7, as NCCL */
  uint8_t dscp;            /* 26: priority 3 with the switch's DSCP >> 3 map */
  uint8_t data_prio;       /* the priority whose pauses stop the rank (3) */
  /* 0: the QPs make each packet when the link can send it (a NIC whose
   * QPs are scheduled at line rate). N: the NIC has a transmit queue of N
   * packets that the QPs fill as soon as there is room and that drains at
   * the link rate, so a NAK's go-back-N starts behind what is queued: Linux
   * rxe hands the kernel up to 64 packets per QP (RXE_INFLIGHT_SKBS_PER_QP_HIGH),
   * and that is what a soft-RoCE VM of the lab does (bench/transports). */
  uint32_t nic_queue_pkts;
  uint64_t nak_delay_ns, nak_react_ns; /* a slow host's turnaround (uroce.h) */
  /* A captured requester's go-backs (uroce.h), each to its connection's
   * sending QP; NULL/0: none. */
  const jct_uroce_go_back_t *go_backs;
  uint32_t ngo_backs;
  /* A captured sender's transmit stalls (uroce.h), each to its connection's
   * sending QP; NULL/0: none. */
  const jct_uroce_stall_t *stalls;
  uint32_t nstalls;
  /* Congestion control: NULL none, else DCQCN with these parameters in
   * every QP (uroce.h, dcqcn.h); CNPs then leave at DSCP cnp_dscp (a
   * ConnectX's cnp_dscp 48: priority 6 with the switch's map), data and
   * ACKs at dscp. */
  const jct_dcqcn_params_t *dcqcn;
  uint8_t cnp_dscp;
  /* Each QP sends from its own UDP source port, as Linux rxe: 0xc000 +
   * hash_32(QPN, 14) (rxe_qp.c before Linux 5.17; since, the flow label of
   * both QPNs folded into 0xc000..0xffff, rdma_get_udp_sport), through a
   * send-only socket bound to it (one per distinct port of a rank). This is
   * the entropy ECMP hashes (leaf-spine fabrics). false: every QP sends
   * from the rank's socket on 4791 (the star: nothing hashes it). */
  bool per_qp_sport;
  /* One rank per process (`jctlab rank`, one MPI task per rank): this
   * process holds only rank `rank`'s socket, PFC listener and QP ends; the
   * other ranks' ends stay empty and the executor's posts for them are
   * ignored (their own processes run them). With topo NULL its sockets and
   * listener are opened in the calling thread's network namespace (the
   * rank's, entered with setns(2)). false: every rank, in this process. */
  bool one_rank;
  uint32_t rank;
  /* Each QP end's initial send PSN, two per connection (source end at 2c,
   * destination end at 2c + 1), as the ranks' bootstrap exchanged them;
   * NULL: derived from the connection's index. */
  const uint32_t *sq_psn;
} jct__ranks_opts_t;

typedef struct jct_ranks jct__ranks_t;

/* topo may be NULL with opts->one_rank (above). */
int jct__ranks_new(jct__ranks_t **out, uv_loop_t *loop, jct_clock_t *clock, const jct_topo_t *topo,
                  const jct_schedule_t *s, const jct__ranks_opts_t *opts, char *err, size_t errlen);

/* The executor hooks that post to the QPs, and the executor that receives
 * the QPs' events (NULL: none; events are then ignored). */
jct_exec_hooks_t jct__ranks_hooks(jct__ranks_t *r);
void jct__ranks_attach(jct__ranks_t *r, jct_exec_t *e);

/* Send what the last posts made ready; call after jct_exec_start() or
 * jct_exec_on_timer() outside the ranks' own callbacks. */
void jct__ranks_kick(jct__ranks_t *r);

/* True when no QP has anything unacknowledged or queued. */
bool jct__ranks_quiet(const jct__ranks_t *r);

/* Nonzero once a QP failed (retry count exceeded) or the executor refused
 * an event; err says which. */
int jct__ranks_failed(const jct__ranks_t *r, char *err, size_t errlen);

/* Time the ranks' NICs were paused by PFC frames (the data priority's
 * quanta, cut short by an XON), summed over ranks; a pause still running
 * counts to its end. */
uint64_t jct__ranks_nic_paused_ns(const jct__ranks_t *r);

/* A repetition starts: every QP's congestion control back to the line
 * rate (uroce.h's jct_uroce_cc_reset), its messages counted afresh for
 * the captured go-backs (jct_uroce_rep_start; faulted: the repetition has
 * the faults). */
void jct__ranks_rep_start(jct__ranks_t *r, bool faulted);

/* Counters summed over every QP. */
void jct__ranks_stats(const jct__ranks_t *r, jct_uroce_stats_t *sum);

/* Connection conn's packets sent again (go-back-N), both of its QPs. */
uint64_t jct__ranks_conn_retx(const jct__ranks_t *r, uint32_t conn);

/* Connection conn's sending QP under DCQCN: its rate cuts and its time
 * below the line rate (up to its latest call). */
/* Connection conn's sending QP's rate now: DCQCN's Rc, or the line rate
 * without congestion control. */
uint64_t jct__ranks_conn_rate_bps(const jct__ranks_t *r, uint32_t conn);
void jct__ranks_conn_cc(const jct__ranks_t *r, uint32_t conn, uint64_t *rate_cuts,
                        uint64_t *below_line_rate_ns);

/* Datagrams the kernel dropped at the ranks' sockets (UDP RcvbufErrors in
 * each rank's namespace) plus sends the kernel refused: the harness's own
 * losses, which make a run invalid. */
uint64_t jct__ranks_harness_losses(const jct__ranks_t *r);

/* Close sockets and listeners (through the loop, as fabric.h) and free. */
void jct__ranks_free(jct__ranks_t *r);

#endif
