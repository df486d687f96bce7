/* A postmortem's fidelity (internal; issue 11, DESIGN.md decision 9): the
 * capture's figures beside the replay's, each with its ratio, and whether
 * the replay reproduced the capture, which is what earns its baseline the
 * name of counterfactual.
 *
 * The replay's side is the faulted one, or the baseline when the case has
 * no injector (a lossless capture replayed as it was). Its figures are the
 * medians over that side's repetitions: job time (JCT, first send to last
 * receive) against the capture's (the first data packet of a message to
 * the last data packet, at the capture point); retransmitted packets, NAKs
 * (PSN sequence error) and timeouts per repetition (uroce counts them;
 * over verbs the device's counters, null where it has none); per
 * connection, the time from its first post to its last completion
 * (8 × bytes / bw_bps) against its flow's first to last data packet; the
 * median loss-recovery latency (hole → retransmission), the capture's
 * (profile.h) against the one timed alike on the frames the replay's
 * switch sent (replay.h's loss_recovery_ns, over the side's repetitions;
 * null when none was recovered); the median depth of the go-backs after
 * NAKs (profile.h's go_back_psns), on both wires alike.
 *
 * Reproduced: the job time and the retransmitted packets each within the
 * tolerance t: |replayed − captured| ≤ t × captured. Every other figure
 * is reported with its ratio and does not decide.
 */
#ifndef JCT_FIDELITY_H
#define JCT_FIDELITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "jctlab/replay.h"
#include "jctlab/run.h"

#define JCT__FIDELITY_TOLERANCE 0.2 /* ±20% */

/* What the capture showed (replay_input.c measures it). */
typedef struct {
  uint64_t job_ns;
  uint64_t retx_packets, naks, timeouts;
  uint64_t loss_recovery_ns; /* median per loss; 0: no loss recovered */
  uint64_t *conn_ns;         /* per schedule connection, first to last data packet; 0: unknown */
  uint32_t nconns;
  /* What the capture's hosts did with no fault behind it, which rxe in the
   * lab does not repeat on demand (a verbs replay re-enacts none of it;
   * uroce re-enacts both): timer go-backs that re-sent nothing lost (late
   * ACKs: infer.h, recovers_loss false), the PSNs they re-sent; the
   * senders' transmit stalls and their time (infer.h). */
  uint32_t host_timer_go_backs;
  uint64_t host_timer_resent_psns;
  uint32_t stalls;
  uint64_t stall_ns;
  /* The median NAK -> retransmission of the capture's go-backs (the
   * requester's reaction, its host's time: a dilated lab's rxe takes
   * about 1/F of it) and the median PSNs re-sent by those go-backs;
   * 0: no NAK was answered. */
  uint64_t nak_to_resend_ns;
  uint32_t nak_go_back_psns;
  /* How the capture's losses' recovery and its go-backs' depths spread
   * (its profile's loss_recovery_ns and go_back_psns, profile.h). */
  uint64_t loss_recovery_spread[JCT_FIGURE_BINS], go_back_spread[JCT_FIGURE_BINS];
} jct__capture_figures_t;

/* The "fidelity" object of a case: {"side", "tolerance", "reproduced",
 * "diverged": [names], "figures": {"job_ns", "retransmitted_packets",
 * "naks", "timeouts", "loss_recovery_ns", "go_back_psns": {"captured", "replayed",
 * "ratio", "decides", "within"}, the last two with "captured_spread" and
 * "replayed_spread" too (profile_json.h's spread)}, "connections": [{"conn", "captured_ns",
 * "replayed_ns", "ratio"}], "why": [{"figure", "reason"}]}; *reproduced
 * says the same. "why" names, for a figure outside the tolerance on verbs,
 * what of the capture's the lab's rxe does not repeat and how much of the
 * figure it made (the capture's hosts' late ACKs, transmit stalls, their
 * NAK reaction under dilation): the figure stays diverged, with its
 * reason. An invalid replay has no figures: JSON null and *reproduced
 * false. NULL: out of memory. */
json_t *jct__fidelity_json(const jct__capture_figures_t *cap, double tolerance,
                           const jct_run_opts_t *o, const jct_replay_result_t *r, bool lossless,
                           bool *reproduced);

void jct__capture_figures_free(jct__capture_figures_t *c);

#endif
