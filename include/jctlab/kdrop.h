/* The drop injector run in a host's kernel: what userspace (drop.c's
 * kernel op, harness/fabric/hostdrop.c) and the tc-eBPF program
 * (harness/fabric/bpf/hostdrop.bpf.c) share through the program's maps.
 * Plain fixed-width fields (linux/types.h), so the same header compiles for
 * the host and for clang -target bpf.
 *
 * The program sits on a host interface's egress (a clsact qdisc's egress
 * hook, cls_bpf in direct-action mode: tc-bpf(8)) and looks only at RoCEv2
 * packets: Ethernet (one 802.1Q tag at most), IPv4 or IPv6 without
 * extension headers, UDP destination port 4791 (IBA vol. 1, Annex A17),
 * the 12-byte BTH (9.2: opcode, destination QP in bytes 5-7, PSN in bytes
 * 9-11). Everything else passes uncounted. Probabilities are 32-bit
 * fractions compared with 32-bit draws, as drop.c and netem keep them;
 * Bernoulli's draws are keyed by the packet and the seed (injectors/draw.c),
 * the Markov models' come from xoshiro256** (common/rng.h) whose state
 * userspace seeds from the injector's seed at each repetition's start.
 */
#ifndef JCTLAB_KDROP_H
#define JCTLAB_KDROP_H

#include <linux/types.h>

#define JCT_KDROP_MAX_TARGETS 64
#define JCT_KDROP_ROCE_PORT 4791

enum {
  JCT_KDROP_BERNOULLI = 1, /* p, burst */
  JCT_KDROP_GEMODEL,       /* p, r, lose_good, lose_bad */
  JCT_KDROP_4STATE,        /* to4 .. to3 */
  JCT_KDROP_EVERY,         /* every, burst */
  JCT_KDROP_PSN,           /* qp, psn[], tx[], count, retransmissions */
  JCT_KDROP_DELAY          /* delay_ns: no loss; each RoCEv2 packet in the window leaves
                              delay_ns later, by its earliest-departure-time stamp
                              (bpf_skb_set_tstamp, CLOCK_MONOTONIC), which the fq qdisc
                              honours (net/sched/sch_fq.c: time_to_send); without fq
                              the stamp is ignored; with nnaks, only the NAKs
                              listed and what follows them on their flows */
};

/* JCT_KDROP_DELAY with nnaks > 0 (delay nak=K@TIME,...): a captured
 * requester's slow reaction to a NAK, replayed by holding the NAK at the
 * responder's host. The program counts the PSN sequence error NAKs the
 * host sends (RC ACKNOWLEDGE, opcode 0x11, whose AETH syndrome is 0x60, a NAK of
 * code 0: IBA vol. 1, 9.7.5.1; RNR NAKs and other NAK codes are
 * not counted), from 1 at each repetition's start, over all its flows; the
 * nak_k[i]-th leaves nak_hold_ns[i] later by its earliest-departure-time
 * stamp, and every later packet of its flow (the addresses and destination
 * QP: the responder QP's ACK/NAK stream, one fq flow since rxe sends each
 * QP's packets from its own UDP source port) is stamped no earlier, so
 * none overtakes it (fq sorts a flow's packets by their departure times:
 * net/sched/sch_fq.c, flow_queue_add). Other flows are untouched. */
#define JCT_KDROP_MAX_NAKS 16
#define JCT_KDROP_AETH_NAK_PSN_SEQ 0x60

/* The configuration map's one value. Times are CLOCK_MONOTONIC
 * nanoseconds (bpf_ktime_get_ns), not jctlab's clock. */
struct jct_kdrop_cfg {
  __u32 mode;
  __u32 enabled;
  __u64 seed; /* the injector's: Bernoulli's packet-keyed draws */                   /* 0: a baseline repetition: every packet passes, uncounted */
  __u64 start_ns, at_ns, until_ns; /* window [start+at, start+until); until 0: none */
  __u32 p, r, lose_good, lose_bad; /* Bernoulli p; Gilbert-Elliott, as drop.c */
  __u32 to4, to4_or_3, to2, to2_or_1, to3; /* 4-state thresholds, as drop.c */
  __u64 burst, every, count;
  __u32 qp, ntargets, retransmissions; /* retransmissions: every copy, up to count */
  __u32 psn[JCT_KDROP_MAX_TARGETS]; /* pkt=: the packet's index in its message (from 0) */
  __u8 tx[JCT_KDROP_MAX_TARGETS];   /* the transmission target i drops (1: the first) */
  /* pkt=M:K targets (by_msg): the message of target i (from 0, a message
   * starting at an opcode whose bit is set in first_op: drop.c's
   * JCT_POS_FIRST, so FIRST and ONLY). The program counts first
   * transmissions to the QP and, at a target's position, makes its PSN a
   * target (the positions map). any_qp: the QP is the qp_order-th (from
   * 0, below JCT_KDROP_MAX_QP_ORDER) that data packets go to, in the order
   * of their first ones, as drop.c's qp-order= (0 without it). */
  __u32 msg[JCT_KDROP_MAX_TARGETS];
  __u32 by_msg, any_qp, qp_order;
  __u8 first_op[32]; /* bit (op & 7) of byte op >> 3 */
  __u64 delay_ns;    /* JCT_KDROP_DELAY; wall: the spec's emulated TIME x the dilation F */
  __u32 nnaks, pad2; /* JCT_KDROP_DELAY by NAK (above): 0 every packet */
  __u32 nak_k[JCT_KDROP_MAX_NAKS];       /* the NAK's number, from 1 */
  __u64 nak_hold_ns[JCT_KDROP_MAX_NAKS]; /* how much later it leaves (CLOCK_MONOTONIC; the
                                            spec's emulated TIME x F) */
};

/* The lease map's one value, written by userspace (hostdrop.h). The
 * program passes every packet, uncounted, once CLOCK_MONOTONIC reaches
 * until_ns: on a kernel without tcx links (Linux < 6.6) the program hangs
 * on a cls_bpf filter that outlives a killed agent, and the agent renews
 * until_ns while it lives, so its filter goes inert within the lease.
 * until_ns 0: no lease (a tcx link, which the kernel detaches when its
 * last descriptor closes; a namespace's filter, which goes with it). tcx:
 * the program runs from a tcx link (kernel/bpf/tcx.c), where a verdict
 * other than TCX_PASS, TCX_DROP and TCX_REDIRECT means "next", so a lost
 * packet is redirected to ifindex 0 instead of TC_ACT_STOLEN: the kernel
 * frees it (skb_do_redirect: no such device) and tells the sender
 * NET_XMIT_SUCCESS, as STOLEN does on a filter (TCX_DROP's NET_XMIT_DROP
 * would put rxe's QP in the error state). */
struct jct_kdrop_lease {
  __u64 until_ns;
  __u32 tcx, pad;
};

/* The counters and the loss models' state, one value (behind a
 * bpf_spin_lock in the program). Userspace writes it zeroed with the
 * seeded PRNG at each repetition's start and reads the counters back. */
struct jct_kdrop_counters {
  __u64 seen;        /* RoCEv2 packets offered in the window */
  __u64 dropped;     /* of which lost here */
  __u64 events_lost; /* drops the fault log missed (its ring buffer was full) */
  __u64 held;        /* JCT_KDROP_DELAY: packets stamped to leave later (by NAK: the NAKs) */
};

#define JCT_KDROP_MAX_QP_ORDER 16
struct jct_kdrop_state {
  __u64 rng[4]; /* xoshiro256** */
  __u64 burst_left, nth;
  __u32 ge_state, state4;
  struct jct_kdrop_counters c;
  /* pkt= and qp-order=: the target QP once found, the QPs seen before it,
   * messages begun (cur_msg + 1 in drop.c's terms) and the packet's index
   * in the current one, over first transmissions to the QP. */
  __u32 qp_found, qp, nseen_qps, msgs, cur_pkt;
  __u32 naks; /* JCT_KDROP_DELAY by NAK: PSN sequence error NAKs sent */
  __u32 seen_qps[JCT_KDROP_MAX_QP_ORDER];
};

/* The state map's one value: the lock the program holds while it decides.
 * Userspace sees the lock as its layout (linux/bpf.h's struct bpf_spin_lock,
 * one __u32), since linux/bpf.h and libpcap's pcap/bpf.h cannot meet in one
 * file. */
#ifdef __bpf__
#define JCT_KDROP_LOCK struct bpf_spin_lock
#else
#define JCT_KDROP_LOCK                                                                             \
  struct {                                                                                         \
    __u32 val;                                                                                     \
  }
#endif
struct jct_kdrop_value {
  JCT_KDROP_LOCK lock;
  struct jct_kdrop_state s;
};

/* PSN mode: the targets of one PSN (psn=5,5@2 are two), a hash map's
 * value keyed by the PSN, so the program finds a packet's targets with one
 * lookup instead of a loop over all of them. Userspace fills it at each
 * repetition's start. */
#define JCT_KDROP_TX_PER_PSN 8
struct jct_kdrop_target {
  JCT_KDROP_LOCK lock;
  __u32 n;                          /* targets at this PSN */
  __s8 first_lost;                  /* -1 unseen; whether its first transmission was lost here */
  __u8 losses;                      /* copies of the PSN lost here (up to 127) */
  __u8 tx[JCT_KDROP_TX_PER_PSN];    /* the transmission each drops (1: the first) */
  __u64 done[JCT_KDROP_TX_PER_PSN]; /* copies each has dropped */
};

/* pkt= mode: the targets at one position (message M, packet K), a hash
 * map's value keyed by M << 32 | K, written by userspace at each
 * repetition's start; the program copies it into the targets map under
 * the PSN the position's first transmission carries. */
#define JCT_KDROP_POS_KEY(m, k) ((__u64)(m) << 32 | (__u32)(k))
struct jct_kdrop_pos {
  __u32 n;                       /* targets at this position */
  __u8 tx[JCT_KDROP_TX_PER_PSN]; /* the transmission each drops (1: the first) */
};

/* One drop, for the fault log (a ring buffer the run drains). */
struct jct_kdrop_event {
  __u64 t_ns; /* CLOCK_MONOTONIC */
  __u32 qp, psn;
  __u8 opcode, retransmission, family; /* family 4 or 6 */
  __u8 pad;
  __u8 src[16], dst[16];
};

#endif
