/* A replay built like the captured system (internal; issue 11, DESIGN.md
 * decision 9): the fabric's and the transport's figures that the user did
 * not give come from the schedule's profile (profile.h), and the report
 * says where each figure came from.
 *
 * From the profile:
 * - rate_bps: the sustained rate (profile.h, links[].rate_bps.mean) of
 *   the link with the most back-to-back samples. Not the mode: a soft-RoCE
 *   VM sends bursts at its host's speed between long pauses, and the job's
 *   time follows what the link carried, not how fast a burst went.
 *   On verbs, when one of the capture's timer go-backs recovered a loss,
 *   raised so that rxe's queues drain within the captured timer
 *   (jct__replay_profile_verbs_rate, below).
 * - the link delay is not taken from a capture: a slow host's turnaround is
 *   not distance (it would delay every packet, not only loss recovery).
 * - path_mtu_bytes: the path MTU.
 * - go_backs: the capture's go-backs after NAKs, each as deep as it was
 *   (uroce.h, jct_uroce_go_back_t; ngo_backs of them, the postmortem's), so
 *   that each loss re-sends what it re-sent in the capture: rxe's depth is
 *   its hosts' timing, 5 PSNs at one loss and 116 at another, which no
 *   constant gives. The user's --nic-queue or --nak-react leaves them out.
 *   With them the NIC queue is 0 (they hold what it held); the median
 *   reaction below is for NAKs the capture did not have.
 * - nic_queue_pkts: the median go-back depth less the packets the link
 *   carries in the median hole → NAK → retransmission time (what a sender
 *   with no queue would have sent past the NAKed PSN): the rest waited in
 *   the NIC (rxe's per-QP queue of skbs). The median: a typical, prompt
 *   go-back; the deep ones (a NAK ignored during a go-back, the timer) come
 *   from the transport's own dynamics, which uroce models as rxe.
 * - nak_delay_ns: the median hole → NAK latency, the responder's turnaround.
 * - nak_react_ns: the median NAK → retransmission latency less the time
 *   the NIC queue takes to drain at the rate (the resend waits behind it):
 *   the requester's turnaround.
 * - timeout: the retransmit timeout's exponent (profile.h: the timer
 *   go-backs' timer from rxe's reference where the capture has any).
 *   On uroce only when it is longer than two AckReq intervals (128
 *   packets, rxe's RXE_MAX_PKT_PER_ACK twice) take at the replay's rate,
 *   else the shortest exponent that is: uroce paces every packet at that
 *   rate, the sustained one (the captured VMs' mean, below the link rate
 *   at which their bursts went), and its timer, restarted only by an ACK,
 *   would run out while one AckReq interval waits behind another on the
 *   emulated link, on every window, where the captured rxe's did not.
 *   On verbs the timer is rxe's own in the lab's VMs (qp attr timeout,
 *   rxe_qp.c): the same rxe that made the capture, given the capture's
 *   exponent, times out as it did (its spurious go-backs too, late ACKs
 *   from a busy VM), so the replay takes the captured exponent, unless
 *   rxe's NIC queue (64 packets) takes longer than it at the replay's
 *   rate: rxe would time out on packets still in its own NIC, which the
 *   captured rxe, its link faster than the sustained rate, never held;
 *   then the shortest exponent the queue does not outlast.
 *   o->timeout_captured tells the lab's check of that queue (run.h). The
 *   source line says which figure, and why.
 * The retry count is never seen in a capture: it stays the default (7).
 */
#ifndef JCT_REPLAY_PROFILE_H
#define JCT_REPLAY_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/run.h"
#include "jctlab/schedule.h"

/* What the replay's caller knows of the capture beyond s->profile
 * (replay_input.c: the postmortem's findings and the user's
 * --captured-rate). Zeroed: none of it. */
typedef struct {
  /* The capture's rate as the user gave it (--captured-rate), bit/s; 0:
   * the measured one (the profile's). */
  uint64_t captured_rate_bps;
  /* The capture's go-backs the postmortem made (postmortem.h). */
  uint32_t ngo_backs;
  /* The capture's job sent no clear-to-sends (perftest posts every
   * message at once, NCCL announces 8 buffers ahead). */
  bool no_cts;
  /* One of the capture's timer go-backs re-sent a lost packet (infer.h,
   * recovers_loss): the timer decided that recovery. */
  bool timer_recovers_loss;
} jct__replay_capture_t;

/* Set the figures of o not in user_set (JCT__SET_*, run_args.h) from
 * s->profile (none: o unchanged) and from what capture says of it, and
 * describe every figure in *used (a new object: {"rate_bps": {"value",
 * "source": "capture" | "user" | "default", "from"}, "prop_delay_ns",
 * "path_mtu_bytes", "nic_queue_pkts", "nak_delay_ns", "nak_react_ns",
 * "go_backs", "cts_slots", "timeout", "retry_cnt", "tdf"}, to which the
 * replay input adds "stalls": replay_input.c). *used is NULL when there
 * is no profile.
 *
 * Real rates: the capture's rate (capture->captured_rate_bps when not 0,
 * else the measured one) is the replay's link rate however fast; above the
 * ceiling time dilation runs it (run.h, jct_run_dilation: the smallest
 * power of two F that brings it under), and "tdf" says F and why:
 * "capture" when the capture's rate chose it, "user" for --tdf or a --rate
 * above the ceiling, "default" for none. --scale is not needed for that.
 * On verbs the rate may rise to fit the captured timer
 * (jct__replay_profile_verbs_rate).
 *
 * capture->no_cts: the replay's executor sends no clear-to-sends either
 * (o->cts_slots, "cts_slots": 0 for none). capture->ngo_backs:
 * o->ngo_backs says how many the replay takes (0 when the user's options
 * leave them out, or on verbs), o->go_backs is the caller's to point.
 *
 * Errors: JCT_EINVAL when the capture's figure cannot be honoured (a path
 * MTU IBA lacks; a rate above the ceiling even dilated JCT_CLOCK_MAX_TDF
 * times): err names the figure and the option that overrides it;
 * JCT_ENOMEM. */
int jct__replay_profile_apply(const jct_schedule_t *s, uint32_t user_set,
                              const jct__replay_capture_t *capture, jct_run_opts_t *o,
                              json_t **used, char *err, size_t errlen);

/* The verbs rate rule: the link rate, bit/s, a replay on rxe (o->transport
 * JCT_TRANSPORT_VERBS) takes instead of the capture's sustained rate
 * sustained_bps, or 0 to keep that. Not 0 only when one of the capture's
 * timer go-backs recovered a loss (capture->timer_recovers_loss: the timer
 * decides that recovery, so it stays the capture's) and neither the user
 * (JCT__SET_RATE in user_set) nor capture->captured_rate_bps gave the rate.
 *
 * Then the slowest rate, in whole kbit/s, at which rxe's 64 packets a QP
 * queued in its NIC (RXE_INFLIGHT_SKBS_PER_QP_HIGH, one AckReq interval
 * of full packets at the path MTU) drain within the timer given rxe (the
 * user's --timeout, else the profile's exponent: 4.096 us x 2^timeout),
 * twice 64 where a rank both sends and receives (a ring: its link
 * carries the responder's own queue too), at most the link's own rate
 * (the mode of the link whose mode holds most spacings: the rate the
 * captured NICs' bursts went at) and only where the lab reaches it
 * (jct_run_dilation under the ceiling); 0 when the sustained rate drains
 * them in time already, or the link is no faster. The captured rxe's
 * bursts drained its queues at the link rate; at the slower sustained
 * rate its timer, the capture's, ran out on late ACKs with nothing lost
 * (rxe-lab-ring2-drop1pct: 38.7 Mbit/s, 110 ms of queues against 2^14's
 * 67.1 ms; 2 timeouts in a lossless baseline), while a faster link than
 * needed runs the lab's dilated VMs ahead of the captured pace (100
 * Mbit/s: the job 0.70 of the capture's; 63.75, the rule's: 0.89). The
 * factor 2 came when the responder's ACK left behind its own queue; since
 * the shaper keeps a queue per QP (agent_nic.h) it does not, and the rule
 * stays as the rate that reproduces rxe-lab-ring2-drop1pct (job 1.15,
 * where its sustained rate took 1.50 with one timeout, the capture's).
 * Where no loss waited for the timer (a lossless capture; one whose timer
 * go-backs were late ACKs, nothing lost) the sustained rate stays (its
 * VMs' pace) and the timer rises instead (jct__replay_profile_apply).
 *
 * why (len bytes) gets the reason, the rate figure's "from", when the
 * rate is raised; it is left alone otherwise. */
uint64_t jct__replay_profile_verbs_rate(const jct_schedule_t *s, uint32_t user_set,
                                        const jct__replay_capture_t *capture,
                                        uint64_t sustained_bps, const jct_run_opts_t *o,
                                        char *why, size_t len);

#endif
