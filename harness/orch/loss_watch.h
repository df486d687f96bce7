/* A replay's look at the switch's wire (internal to orch/): `jctlab
 * inspect`'s analysis (inspect.h) run on every frame the switch sends
 * toward a host (what --pcap-out would hold: the capture point of the
 * lab's captures), so that what it gives is what inspect would count in a
 * capture of that wire, by inspect's own rules:
 *   - the re-sent packets: data packets whose PSN is not above the
 *     highest already seen on their flow (inspect.h, "retransmitted
 *     packet"), and their bytes, for transports whose devices count none
 *     (Linux rxe: the verbs backend in the lab, backend.h);
 *   - the NAKs and timeouts, for a capture's replay on rxe, whose
 *     counters tell a NAK that acknowledged nothing new from a timeout by
 *     neither;
 *   - each loss, from its hole to the retransmission that fills it
 *     (inspect.h, "hole_resent"), and each NAK's go-back, how deep it
 *     went (profile.h, go_back_psns), so that a postmortem's fidelity
 *     section sets like beside like.
 *
 * The session hands it the fabric's frames (fabric.h, tap) and says when a
 * measured repetition starts and ends. Each repetition gets a fresh
 * inspector (a QP's PSNs run on across repetitions, and the other side's
 * repetitions in between are not watched); the re-sent packets add up
 * over every repetition watched, so that the session differences them
 * around each as it does a device's counters. The losses' hole_resent
 * events are kept, per side, as samples: 8 bytes per loss; and 8 bytes
 * per flow of the repetition being watched.
 */
#ifndef JCT_LOSS_WATCH_H
#define JCT_LOSS_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jct__loss_watch jct__loss_watch_t;

/* Errors: JCT_ENOMEM. */
int jct__loss_watch_new(jct__loss_watch_t **out);

/* A measured repetition of side faulted starts (its frames are watched
 * until end). Errors: JCT_ENOMEM (that repetition is then not watched,
 * and the side's loss figure is withheld: a partial median would mislead). */
int jct__loss_watch_begin(jct__loss_watch_t *w, bool faulted);

/* The repetition ends. Returns 0, or JCT_ENOMEM when one of its frames
 * could not be followed (a new flow not stored): its re-sent packets are
 * then short, and the side's loss figure is withheld. */
int jct__loss_watch_end(jct__loss_watch_t *w);

/* One Ethernet frame sent at t_ns (emulated time); ignored outside a
 * repetition. The fabric's tap (fabric.h). */
void jct__loss_watch_frame(const uint8_t *frame, size_t len, uint64_t t_ns, void *arg);

/* The re-sent packets seen in every repetition watched so far, and their
 * bytes: each one's UDP payload (BTH to ICRC), as uroce counts its
 * retx_bytes (run.h). */
void jct__loss_watch_resent(const jct__loss_watch_t *w, uint64_t *packets, uint64_t *bytes);

/* The NAKs (PSN sequence error) and timeouts (go-backs with no NAK before
 * them) of every repetition watched and ended so far, as inspect counts a
 * capture's (inspect.h, jct_flow_stats_t): a capture's replay on verbs
 * takes these (backend_verbs.c), where rxe's
 * rcvd_seq_err counts only a NAK whose PSN acknowledges something new
 * (rxe_comp.c, check_ack: a NAK of a QP's first PSN, as ring4-drop05pct's
 * lost first clear-to-send draws, is a completer retry with no
 * rcvd_seq_err, which the counters would call a timeout). */
void jct__loss_watch_go_backs(const jct__loss_watch_t *w, uint64_t *naks, uint64_t *timeouts);

/* Forget the loss samples so far (after the warm-up). */
void jct__loss_watch_reset(jct__loss_watch_t *w);

/* A side's losses filled and their median hole → retransmission (lower
 * middle), and, when spread is not NULL, how they spread over the
 * profile's bins (profile.h, jct_figure_t.spread: JCT_FIGURE_BINS counts);
 * false, spread zeroed, when none was, or a repetition could not be
 * watched. */
bool jct__loss_watch_median(jct__loss_watch_t *w, bool faulted, uint64_t *median_ns, uint64_t *n,
                            uint64_t *spread);

/* A side's go-backs after NAKs and their median depth (lower middle):
 * per hole a NAK's go-back re-sent, the PSNs past it its flow had sent by
 * then, as `jctlab inspect` profiles a capture (profile.h, go_back_psns);
 * false when none was, or a repetition could not be watched. */
bool jct__loss_watch_go_back(jct__loss_watch_t *w, bool faulted, uint64_t *median_psns, uint64_t *n,
                             uint64_t *spread);

void jct__loss_watch_free(jct__loss_watch_t *w);

#endif
