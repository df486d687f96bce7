/* The profile of a captured system: what the fabric and the transports that
 * ran a job were like, inferred from a capture of it (DESIGN.md decision 9),
 * so that a replay can be made to behave the same way.
 *
 * Each figure says how many samples it came from and how they spread. It is
 * measured by jct_inspect_profile() (inspect.h, traces/profile.c), written
 * by `jctlab inspect` and saved in a schedule's JSON by `jctlab schedule`
 * (schedule.h, "profile"), where a user may edit it: a figure with a value
 * but no samples was given by hand.
 *
 * The figures (the README's "jctlab inspect" section says the same):
 * - mtu_bytes: the path MTU, the payload of FIRST and MIDDLE packets (they
 *   are full: IBA sends every packet of a message but its last with exactly
 *   the path MTU); value: median.
 * - links[].rate_bps: a link's (source → destination address) bottleneck
 *   rate from back-to-back spacing, packet-pair style: each sample is the
 *   bytes on the wire of a packet (the frame as captured plus 24 bytes of
 *   preamble, FCS and inter-frame gap, as jctlab's switch paces) over the
 *   time since the link's previous data packet, taken when the packet
 *   continues a message (MIDDLE or LAST, the next PSN of its flow): its
 *   sender had it ready, so only the link held it back. value: the mode
 *   of the samples (the densest 3/8 of an octave; its bytes over its time;
 *   mode_n samples in it), not a low percentile, which packets bunched
 *   after the bottleneck (receive batching, interrupt coalescing) pull up
 *   (Dovrolis, Ramanathan and Moore, "What do packet dispersion techniques
 *   measure?", INFOCOM 2001). median, p10, p90: to 1/8 of an octave.
 *   mean: every sample's bytes over every sample's time, the rate the
 *   link sustained while it carried messages (a sender that sends bursts
 *   at its host's speed and then waits has a fast mode and a slow mean).
 *   Only links with samples are listed.
 * - losses, one sample per lost PSN whose retransmission was seen: the
 *   hole (the first packet after the missing PSN at the capture point:
 *   a PSN gap, or a re-sent PSN skipped in a go-back; for a PSN lost after
 *   the capture point, the NAK naming it), the NAK (PSN sequence error)
 *   naming it, and its retransmission:
 *   hole_to_nak_ns (holes seen before their NAK), nak_to_resend_ns (losses
 *   re-sent by the go-back their NAK caused, not by a timeout) and
 *   loss_recovery_ns (hole → retransmission, every loss, whatever re-sent
 *   it; the sum of the two parts only for those with both).
 * - go_back_psns: per go-back after a NAK, the PSNs the requester had sent
 *   past the NAKed one when its retransmission came (the last PSN it had
 *   sent then − the NAKed PSN: the highest PSN seen, or, when the go-back
 *   cut another short, the last PSN that one had re-sent, inspect.h
 *   rewind): its window or NIC queue. go_back_after_nak_psns: how many of
 *   them were sent after the NAK was seen (from where the requester was
 *   then, reckoned the same way).
 * - timeout_ns: the retransmit timeout, from timeout episodes (a go-back
 *   with no NAK before it, IBA 9.7.6.1.3). Samples: the time the flow was
 *   idle before each (since its last data packet or the last ACK/NAK for
 *   it: rxe_req.c starts its timer with a send when it is not running,
 *   rxe_comp.c restarts it on an ACK, so in a stalled flow the last of
 *   them is about where it last started; a sample is the timer plus the
 *   time the sender took to act on it); value: 4.096 µs × 2^timeout_exp,
 *   the nearest (in log scale) to their median, as IBA encodes the QP's
 *   Local ACK Timeout. A schedule inferred from a capture with timer
 *   go-backs (infer.h) has instead the timer they show, timed from rxe's
 *   reference (infer.h timer_est_ns), and timeout_timer_go_backs says from
 *   how many: idle time also holds the sender's lag, and read 2^15 or 2^16
 *   in the lab captures where every timer go-back says 2^14. `jctlab
 *   inspect` (no inference) gives the idle-time figure.
 * - packets_per_ack: ACK coalescing, the PSNs each ACK acknowledged that
 *   the previous ACK (or NAK) on its flow had not.
 * Compute gaps are not here: they are each op's gap_ns in the schedule.
 *
 * Every figure of samples has their mean too (go-back depth: its mean times
 * the go-backs is the packets they resent), and their spread over 1-2-5
 * bins (jct_figure_t.spread), where a median alone would hide groups.
 * Percentiles are nearest-rank: p of n samples is the ceil(p n / 100)-th
 * smallest (the median of an even count is the lower middle one).
 */
#ifndef JCTLAB_PROFILE_H
#define JCTLAB_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

/* Bins of a figure's spread: 1-2-5 a decade in the figure's unit (ns,
 * PSNs, bytes, packets), as a log-scale axis is marked; bin 0 holds the
 * samples below 1, bin k >= 1 those in [jct_figure_bin_lo(k),
 * jct_figure_bin_lo(k + 1)); the last, from 5 x 10^18 (a JSON integer,
 * as every start is), has no top. */
#define JCT_FIGURE_BINS 58u

typedef struct {
  bool set;       /* there is a figure: measured (n > 0) or given by hand (n == 0) */
  uint64_t value; /* the figure, when set */
  uint64_t n;     /* samples it came from */
  uint64_t median, p10, p90, min, max; /* of the samples, when n > 0 */
  uint64_t mean; /* of the samples, when n > 0 (a rate: their bytes over their time) */
  /* How the samples spread: spread[k] of them in bin k (above), summing to
   * n. A median hides a spread of two or three groups (the shipped
   * capture's loss recovery: 16 losses within 1.4 ms, 17 at 14-91 ms, the
   * median the slow group's first). All zero for the link rates, whose
   * samples are kept as rate bins instead, and for a figure with no
   * samples. */
  uint64_t spread[JCT_FIGURE_BINS];
} jct_figure_t;

typedef struct {
  char src[48], dst[48];      /* the link's source and destination addresses, as text */
  int32_t src_rank, dst_rank; /* their ranks in a schedule; -1 unknown */
  jct_figure_t rate_bps;
  uint64_t rate_mode_n; /* samples in the mode */
  /* The samples' bytes and time (rate_bps.mean is their quotient), and, of
   * that time, the link's senders' transmit stalls (infer.h: each stall's
   * stall_ns; 0 without inference or stalls): a replay that holds the
   * stalls itself runs the link at the mean without them,
   * jct_profile_link_unstalled_bps(). Not in the schedule's JSON (a
   * schedule carries no stalls). */
  uint64_t sample_bytes, sample_ns, stall_ns;
} jct_profile_link_t;

typedef struct {
  jct_figure_t mtu_bytes;
  jct_figure_t hole_to_nak_ns, nak_to_resend_ns, loss_recovery_ns;
  jct_figure_t go_back_psns, go_back_after_nak_psns;
  jct_figure_t timeout_ns;
  int32_t timeout_exp; /* -1 unknown */
  uint32_t timeout_timer_go_backs; /* timeout_ns/_exp from this many timer go-backs; 0: idle time */
  jct_figure_t packets_per_ack;
  jct_profile_link_t *links; /* links with back-to-back packets, first-sampled order */
  uint32_t nlinks;
} jct_profile_t;

/* The link's mean rate with its senders' stalls taken out of its time
 * (above): bits over sample_ns less stall_ns; rate_bps.mean when there is
 * no stall, or when the stalls would leave under a quarter of the time (their
 * gaps overlapped other flows' packets on the link). */
uint64_t jct_profile_link_unstalled_bps(const jct_profile_link_t *l);

/* The figure's exponent n: 4.096 µs × 2^n nearest to ns in log scale,
 * within [0, 31] (IBA's 5-bit field); -1 for ns == 0. */
int32_t jct_profile_timeout_exp(uint64_t ns);

/* The QP timeout of exponent n, 4.096 µs × 2^n, in ns (IBA Vol. 1
 * 9.7.6.1.3, Local ACK Timeout); 0 for n outside [0, 31]. */
uint64_t jct_profile_timeout_ns(int32_t n);

/* The bin (0 to JCT_FIGURE_BINS - 1) of a sample v: 0 for v == 0, else k
 * with jct_figure_bin_lo(k) <= v < jct_figure_bin_lo(k + 1). */
unsigned jct_figure_bin(uint64_t v);

/* The lowest value of bin k: 0, 1, 2, 5, 10, 20, 50, ... 5 x 10^18 for
 * k = 0 ... JCT_FIGURE_BINS - 1; UINT64_MAX for k >= JCT_FIGURE_BINS (the
 * last bin's top: none). */
uint64_t jct_figure_bin_lo(unsigned k);

/* Free p and its links (NULL: nothing). */
void jct_profile_free(jct_profile_t *p);

#endif
