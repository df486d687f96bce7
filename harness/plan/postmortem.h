/* A capture's own losses as the injectors of its replay (postmortem.c;
 * internal): the part of `jctlab replay incident.pcap` that re-runs the
 * incident. */
#ifndef JCT_POSTMORTEM_H
#define JCT_POSTMORTEM_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/infer.h"
#include "jctlab/schedule.h"
#include "jctlab/uroce.h"

#define JCT_POSTMORTEM_MAX_SPECS 16
#define JCT_POSTMORTEM_MAX_TX 64 /* @T up to this: one packet's targets fit one spec */

/* The losses rep (what jct_infer() found in the capture s was inferred
 * from) as targeted-drop injector specs: specs[*nspecs], one per connection
 * with losses (and per 64 losses on it; on verbs one for its losses at the
 * expected PSN and one for those behind a hole, drop.c's epsn=), each
 * malloc'd; *lost_packets is how many packets they drop,
 * *lost_retransmissions how many of those the capture lost at a re-sent
 * copy (its transmission T > 1). s's sizes are the capture's times
 * scale, packets are path_mtu_bytes long. uroce's QP numbers name a
 * connection, or with verbs its two ends and its place among the
 * connections between them in the order the job starts them (drop.c's
 * qp-order=). Errors: JCT_EINVAL (more than JCT_POSTMORTEM_MAX_SPECS specs
 * needed, or on verbs two connections with the same ends that may start at
 * once: err says which), JCT_ENOMEM; the specs made are the caller's to
 * free either way. */
int jct__postmortem_specs(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                          uint32_t path_mtu_bytes, bool verbs,
                          char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs,
                          uint64_t *lost_packets, uint64_t *lost_retransmissions, char *err,
                          size_t errlen);

/* The capture's go-backs (rep->go_backs: after NAKs, and timer go-backs) as
 * uroce's captured go-backs (uroce.h): each at the same connection, message
 * and packet of path_mtu_bytes (s's sizes the capture's times scale), as
 * deep in PSNs as the capture's (a replay at another path MTU than the
 * capture's re-sends as many packets, not as many bytes); a timer go-back
 * with its timer_ns, timer_lead_ns (rxe's reference, infer.h) and
 * recovers_loss (then the faulted repetitions' only, never a baseline's);
 * first_tx on the first NAK go-back at a position whose fault (rep->faults)
 * lost the packet's first transmission (the requester's depth then holds
 * from that transmission on, uroce.h). *out and *idle_ns
 * (each timer go-back's idle time before it, 0 for the others; malloc'd,
 * the caller's; NULL when *n is 0) in capture order. Errors: JCT_ENOMEM. */
int jct__postmortem_go_backs(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                             uint32_t path_mtu_bytes, jct_uroce_go_back_t **out, uint64_t **idle_ns,
                             uint32_t *n);

/* The capture's transmit stalls (rep->stalls, infer.h) as uroce's captured
 * stalls (uroce.h): each at the same connection, message and packet of
 * path_mtu_bytes (s's sizes the capture's times scale), as long as the
 * capture's (the host's time: not scaled). *out (malloc'd, the caller's;
 * NULL when *n is 0) in capture order. Errors: JCT_ENOMEM. */
int jct__postmortem_stalls(const jct_schedule_t *s, const jct_infer_report_t *rep, double scale,
                           uint32_t path_mtu_bytes, jct_uroce_stall_t **out, uint32_t *n);

/* What the lab's rxe takes by itself from a NAK at the switch to its
 * retransmission there, in packet times: it goes back at once, but its
 * retransmission leaves behind the packets of the QP it had already handed
 * to the kernel (its in-flight skbs, at most RXE_INFLIGHT_SKBS_PER_QP_HIGH,
 * 64). Measured: the p2p capture's replay on verbs in the lab (--tdf 16,
 * 64.96 Mbit/s, no NAK held) took 16.1, 17.9 and 24.4 ms at its 3 NAKs
 * (`jctlab inspect --timeline`); the least, 31 packet times of 4096 bytes,
 * since rxe's queue grows while a NAK is held (held 6.0 ms of emulated
 * time, its NAK -> retransmission went from 16 to 33-35 ms, 80 re-sent: 64
 * queued plus the hold's; subtracting the median, 35, held 1.9 ms and
 * re-sent 32, as without a hold; 31 held 3.9 ms and re-sent 36, 32 and 78
 * in 3 repetitions). */
#define JCT_POSTMORTEM_RXE_QUEUE_PKTS 31

/* On verbs, the capture's requester's slow reaction to each NAK (g[n]:
 * the NAKs' go-backs, timer_ns 0 and nak_to_resend_ns > 0) as holds of
 * the NAK at its responder's host: one `delay nak=K@TIME,... at=host:R`
 * spec (injectors/delay.c) per rank R that sent such a NAK (a go-back's
 * responder: the connection's destination, or for a clear-to-send's its
 * source), appended to specs[*nspecs]. K counts the NAKs' go-backs R's
 * NAKs started, in capture order (from 1), as the host program counts the
 * PSN sequence error NAKs R sends; TIME is the capture's nak_to_resend_ns
 * less what the lab's rxe takes by itself (it goes back at once, but its
 * retransmission leaves behind the JCT_POSTMORTEM_RXE_QUEUE_PKTS packets
 * it had queued: that many packets of path_mtu_bytes at rate_bps, with
 * RoCEv2's headers and the wire's overhead), in emulated time as every
 * spec's (the host's kernel gets it x F: jct__hostdrop_cfg_wall); a NAK whose TIME comes to nothing
 * is counted, not held. Errors: JCT_EINVAL (no room for another spec), JCT_ENOMEM. */
int jct__postmortem_nak_holds(const jct_schedule_t *s, const jct_uroce_go_back_t *g, uint32_t n,
                              uint64_t rate_bps, uint32_t path_mtu_bytes,
                              char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs, char *err,
                              size_t errlen);

/* On verbs in the lab, the capture's transmit stalls x (jct__postmortem_stalls'
 * nx, a connection's in capture order) as stall injector specs
 * (injectors/stall.c), which stop the sending rank's VM: one spec per
 * connection with stalls (and per list a spec's value holds), named as the
 * verbs drops name it (qp-order= among the connections between its ranks,
 * where= its data without the other way's clear-to-sends), with
 * baseline=yes: the hosts' stalls are held in every repetition, baseline
 * and faulted alike, as uroce holds them. A stall before packet P (P > 0)
 * follows packet P-1 (the switch sees a packet go by, not one to come);
 * before packet 0 it follows packet 0. Stalls at one packet become one, as
 * long as both. Each lasts as long as the capture's (for= in emulated
 * time: a dilated clock makes it F times longer in wall time, with the
 * VMs' rxe timers, run.h). specs (malloc'd, the caller's to free either
 * way) in connection order. Errors: those of the verbs drops
 * (jct__postmortem_specs), JCT_ENOMEM. */
int jct__postmortem_stall_specs(const jct_schedule_t *s, const jct_uroce_stall_t *x, uint32_t nx,
                                char *specs[JCT_POSTMORTEM_MAX_SPECS], uint32_t *nspecs,
                                char *err, size_t errlen);

/* In the lab, the capture's timer go-backs with nothing lost (the hosts'
 * late ACKs: g's entries with timer_ns, not recovers_loss, not of
 * clear-to-sends) as timeout injectors (injectors/timeout.c), one spec per
 * connection with any (and per list a spec's value holds), each target the
 * packet the go-back went back to: from its first transmission the
 * switch drops its responder's ACKs of it and later until rxe's
 * retransmit timer sends the requester back, as uroce holds them itself
 * (uroce.h). Named as the stall specs are (qp-order=, where= its data and
 * the ACKs the other way), baseline=yes: the hosts' late ACKs came in
 * every repetition. specs (malloc'd, the caller's to free either way) in
 * connection order. Errors: those of the verbs drops, JCT_ENOMEM. */
int jct__postmortem_timeout_specs(const jct_schedule_t *s, const jct_uroce_go_back_t *g,
                                  uint32_t n, char *specs[JCT_POSTMORTEM_MAX_SPECS],
                                  uint32_t *nspecs, char *err, size_t errlen);

/* Leave to the QP's own timer each timer go-back it explains: one whose flow
 * had heard nothing for at least 4.096 us x 2^timeout before it (the shipped
 * capture's, 67.2 ms idle at timeout 14), which the replay's timer gives as
 * the capture's did; the entry is made inert (timer_ns and ahead_psns 0).
 * timeout 0 (no timer): none. */
void jct__postmortem_timer_go_backs(jct_uroce_go_back_t *g, const uint64_t *idle_ns, uint32_t n,
                                    uint8_t timeout);

#endif
