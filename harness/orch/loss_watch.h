/* A postmortem replay's losses, timed on the switch's wire (internal to
 * orch/): each one from its hole to the retransmission that fills it, as
 * `jctlab inspect` times a capture's (inspect.h, "hole_resent"), so the
 * fidelity section sets like beside like.
 *
 * The session hands it every frame the switch sends toward a host (what
 * --pcap-out would hold: the capture point of the lab's captures), and
 * says when a measured repetition starts and ends. Each repetition gets a
 * fresh inspector (a QP's PSNs run on across repetitions, and the other
 * side's repetitions in between are not watched), whose hole_resent
 * events are kept, per side, as samples: 8 bytes per loss.
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
 * and the side's figure is withheld: a partial median would mislead). */
int jct__loss_watch_begin(jct__loss_watch_t *w, bool faulted);
void jct__loss_watch_end(jct__loss_watch_t *w);

/* One Ethernet frame sent at t_ns (emulated time); ignored outside a
 * repetition. The fabric's tap (fabric.h). */
void jct__loss_watch_frame(const uint8_t *frame, size_t len, uint64_t t_ns, void *arg);

/* Forget the samples so far (after the warm-up). */
void jct__loss_watch_reset(jct__loss_watch_t *w);

/* A side's losses filled and their median hole → retransmission (lower
 * middle); false when none was, or a repetition could not be watched. */
bool jct__loss_watch_median(jct__loss_watch_t *w, bool faulted, uint64_t *median_ns,
                            uint64_t *n);

void jct__loss_watch_free(jct__loss_watch_t *w);

#endif
