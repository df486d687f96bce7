/* The go-back-N loss model: what Bernoulli packet loss on a lossy fabric
 * (no PFC needed, drops by `drop p=P` on every port) costs a job run by
 * uroce, at any link rate, propagation delay, path MTU, window, ACK
 * coalescing and QP timeout. It is set beside every covered case of a run
 * or replay (run.h's α-β model is its lossless part) and read by
 * bench/loss-sweep and bench/real-rates.
 *
 * Terms (one star fabric: rank -> switch -> rank, store and forward):
 *   t        one full packet's time on a link: wire bytes of a PMTU packet
 *            (uroce.h, jct_uroce_full_packet_wire_bytes) * 8 / rate, ns
 *   t_a      one ACK/NAK's time: BTH 12 + AETH 4 + ICRC 4 + 66 bytes of
 *            UDP, IPv4, Ethernet, preamble, FCS and gap, * 8 / rate
 *   RTT      4 * prop_delay_ns (two links each way)
 *   BDP      RTT / t, packets (fractional)
 *   detect   3 + 2 t_a / t, packets: the hole's own time, its store and
 *            forward, and the next packet, whose arrival makes the
 *            responder NAK (IBA 9.7.5.2.1, a NAK PSN sequence error, once
 *            per gap), plus the NAK's serialization on two links
 *   W        BDP + detect (+ the slow host's NAK latencies / t): packets in
 *            flight when the requester sees the NAK; go-back-N (IBA
 *            9.7.5.1) sends them all again, so a loss noticed by a NAK
 *            costs its message W * t. At 400 Gbit/s, 1 us per link (4 us
 *            RTT) and 4 KiB MTU W is 50.9; at 100 Mbit/s it is 3.05.
 *   T        the local ACK timeout, 4.096 us * 2^timeout (IBA 9.7.6.1.3;
 *            0: no timer, and a timer case never ends)
 *   c, w     AckReq at least every c packets and on a message's last
 *            (64); at most w PSNs unacknowledged (128; rxe's limits)
 *
 * Per data packet lost (its first transmission), as uroce and Linux rxe
 * recover it (uroce_comp.c, rxe_comp.c: one go-back at a time, a further
 * NAK ignored until an ACK makes progress):
 *   - a NAK, the go-back, cost W * t; then the timer cases, each costing
 *     about T: the NAK itself lost (p; the timer runs from the last ACK
 *     that made progress, g packets before the hole: T - g t), the resent
 *     hole lost again (p), a fresh packet lost before the first ACK after
 *     the go-back returns (each of the J - W packets between the hole + W
 *     and the next AckReq at J, J uniform in 1..c: p each), a go-back copy
 *     of a packet lost the first time lost again (p^2 each);
 *   - a tail loss: the last packet of a connection's last message (no
 *     later packet to reveal the gap): the timer, T - g t;
 *   - a message's last packet when another message follows on its QP: the
 *     next message's first packet reveals it, W * t;
 *   - a lost ACK: the next one (c packets on) covers it; the window stalls
 *     max(0, 2c + BDP - w) - max(0, c + BDP - w) packet times; the last ACK
 *     of a connection is a timer expiry that costs the job nothing (the
 *     receiver has the data);
 *   - a lost clear-to-send (executor.h): the next one reveals it (a NAK a
 *     step later, harmless with 8 slots); the connection's last one waits
 *     for the timer, T after it was sent, and delays the message it clears.
 * Losses inside a go-back's W are resent with it; retry_cnt exhaustion
 * (seven timeouts in a row, ~p^7) is not modelled.
 *
 * The job: every op of the schedule is a message of ceil(bytes / PMTU)
 * packets that starts when its deps were received, its gap passed, its
 * CTS arrived and its connection's previous message was sent, and lasts
 * α + bytes' wire time / rate + its loss cost (run.h's α). The cost of
 * the losses to a job is the schedule's longest path with them, which is
 * a maximum over paths (a step waits for its slowest link) and has no
 * closed form: it is taken over `trials` seeded draws of every op's
 * losses (Monte Carlo), and the prediction is the median JCT over them,
 * as the measurement is a median; excess = that - the path without loss.
 * The prediction is base + excess, base the larger of run.h's α-β
 * model_ns (which counts links shared, as incast's) and the lossless path
 * (which counts compute gaps, as a capture's); degradation = it / base.
 */
#ifndef JCTLAB_MODEL_H
#define JCTLAB_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/run.h"
#include "jctlab/schedule.h"

#define JCT_MODEL_DEFAULT_TRIALS 201

typedef struct {
  uint64_t rate_bps;      /* per link, > 0 */
  uint64_t prop_delay_ns; /* per link */
  uint32_t path_mtu_bytes; /* 0: 4096 */
  uint32_t window_pkts;    /* 0: JCT_UROCE_MAX_UNACKED_PSNS (128) */
  uint32_t ack_every_pkts; /* 0: JCT_UROCE_MAX_PKTS_PER_ACK (64) */
  uint32_t cts_slots;      /* 0: JCT_EXEC_DEFAULT_SLOTS (8) */
  uint8_t timeout;         /* exponent; 0: no timer */
  uint64_t nak_delay_ns, nak_react_ns; /* a slow host's (uroce.h; 0: none) */
  double p;                /* each frame lost with p where it leaves the switch, [0, 1) */
  uint32_t trials;         /* 0: JCT_MODEL_DEFAULT_TRIALS */
  uint64_t seed;
} jct_loss_model_in_t;

typedef struct {
  /* The per-loss figures (jct_loss_model_params) */
  double packet_time_ns, ack_time_ns, rtt_ns, bdp_pkts, detect_pkts, w_pkts, timer_ns;
  double nak_cost_ns;  /* W * t */
  double p_timer;      /* chance a loss noticed by a NAK ends on the timer (J at c / 2) */
  /* Over the schedule (jct_loss_model): expectations per job */
  double data_pkts;    /* request packets of first transmission, CTSs included */
  double losses;       /* of them lost, p * data_pkts */
  double timeouts;     /* timer expiries, mean over the trials (harmless ones too) */
  double base_ns;      /* max(run.h's α-β model_ns, the lossless longest path) */
  double excess_ns;    /* median JCT over the trials - the lossless longest path */
  double mean_excess_ns;
  double jct_ns;       /* base_ns + excess_ns */
  double degradation;  /* jct_ns / base_ns */
  uint32_t trials;
} jct_loss_model_t;

/* The per-loss figures of in (terms above), no schedule needed. */
void jct_loss_model_params(const jct_loss_model_in_t *in, jct_loss_model_t *out);

/* The whole model for schedule s (valid) under in; base_ns with run.h's
 * α-β model for o's rate, delay and MTU (o may be NULL: base_ns is then
 * the lossless longest path alone). Returns 0, JCT_EINVAL (rate 0, p outside
 * [0, 1); err says which) or JCT_ENOMEM. */
int jct_loss_model(const jct_schedule_t *s, const jct_run_opts_t *o, const jct_loss_model_in_t *in,
                   jct_loss_model_t *out, char *err, size_t errlen);

/* Whether the model covers a case of o: uroce with no NIC queue and no
 * congestion control, and one injector, `drop p=P` (seed= and dir=out
 * allowed; no where=, port=, at=, until=, burst= or other model). Fills
 * *in from o (seed: o's) and returns true; false (nothing filled) when
 * not covered. */
bool jct_loss_model_covers(const jct_run_opts_t *o, jct_loss_model_in_t *in);

#endif
