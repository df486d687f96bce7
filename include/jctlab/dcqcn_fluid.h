/* DCQCN's fluid model: what the paper predicts for N flows sharing one
 * bottleneck, to hold jctlab's emulated DCQCN (dcqcn.h, uroce's QPs) up
 * against.
 *
 * Source: Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, section 5 (the model the paper validated
 * against its simulations and testbed), as restated in eq. (11) of Zhu,
 * Ghobadi, Misra, Padhye, "ECN or Delay: Lessons Learnt from Analysis of
 * DCQCN and TIMELY", CoNEXT 2016. Per flow i: current rate RC, target rate
 * RT, alpha; one queue q at a bottleneck of capacity C; every quantity
 * marked ' is taken at t - tau_star (the feedback delay from the switch's
 * marking to the reaction point), p = p(q(t - tau_star)) is the switch's
 * RED-like marking (0 at q <= Kmin, Pmax (q - Kmin) / (Kmax - Kmin) up to
 * Kmax, 1 at q >= Kmax: switch.h's profile), rates in packets when they
 * are exponents:
 *   a = 1 - (1-p)^(tau RC')       CNP interval tau: a CNP in the interval
 *   b = p / ((1-p)^-B - 1)        byte counter B packets: an increase
 *   c = b (1-p)^(F B)             ... past F fast-recovery stages
 *   d = p / ((1-p)^(-T RC') - 1)  timer T: an increase
 *   e = d (1-p)^(F T RC')         ... past F stages
 *   dRC/dt    = -RC alpha a / (2 tau) + (RT - RC) RC' (b + d) / 2
 *   dRT/dt    = -(RT - RC) a / tau + R_AI RC' (c + e)
 *   dalpha/dt = g / tau' ((1 - (1-p)^(tau' RC')) - alpha)    alpha timer tau'
 *   dq/dt     = sum RC_i - C, q >= 0
 * The model has no hyper increase (R_HAI) and no PFC, and knows no
 * packets: where the emulation differs, that is why.
 *
 * Solved by forward Euler at a fixed step, with a ring of the last
 * tau_star of q and of each RC for the lagged terms. One extension, named
 * (queue_delay): the lag may also hold the marked packet's own wait in the
 * queue, q/C, which a switch that marks on enqueue puts into the loop;
 * the paper's model has one fixed tau_star. Each flow starts at
 * RC = RT = C, alpha = 1 (flow i at i x stagger_ns; not sending before),
 * rates held within [rpg_min_rate, C].
 */
#ifndef JCTLAB_DCQCN_FLUID_H
#define JCTLAB_DCQCN_FLUID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/dcqcn.h"

#define JCT_FLUID_MAX_FLOWS 64
#define JCT_FLUID_MAX_QUEUE_DELAY_NS 2000000ull /* 2 ms */

typedef struct {
  uint32_t flows;                  /* N, 1..JCT_FLUID_MAX_FLOWS */
  uint64_t line_rate_bps;          /* C: the bottleneck's, and each flow's start */
  uint64_t kmin_bytes, kmax_bytes; /* marking, 0 < kmin <= kmax */
  double pmax;                     /* (0, 1] */
  uint64_t tau_star_ns;            /* feedback delay, > step_ns */
  uint32_t packet_bytes;           /* a frame on the wire: the unit of marking and of B */
  /* The RP's and NP's parameters: tau = min_time_between_cnps, tau' =
   * alpha_period, T = rpg_time_reset, B = rpg_byte_reset (0: no byte
   * counter), F = rpg_threshold, R_AI = rpg_ai_rate, g, rpg_min_rate. */
  jct_dcqcn_params_t cc;
  uint64_t step_ns;     /* Euler step, > 0, well below tau_star */
  uint64_t duration_ns; /* how long to solve, >= step_ns */
  uint64_t sample_ns;   /* the trace's interval, >= step_ns */
  uint64_t stagger_ns;  /* flow i starts at i x stagger_ns (0: all at once) */
  /* The feedback delay: tau_star alone (the paper's, false) or tau_star
   * plus the marked packet's wait in the queue, q/C at its marking (true:
   * a switch that marks on enqueue, as jctlab's does, switch.h), looked
   * back over at most JCT_FLUID_MAX_QUEUE_DELAY_NS. */
  bool queue_delay;
  double fixed_p; /* in [0, 1]: the open loop, every packet marked with this
                     probability whatever the queue; < 0 (the default): p(q) */
} jct_fluid_cfg_t;

/* The paper's incast: flows sharing a 40 Gbit/s bottleneck, its marking
 * (5 KB, 200 KB, 1%), the paper profile, 4096-byte MTU frames (4154 bytes
 * with RoCEv2's headers), tau_star 4 us, 10 ns steps, 20 ms sampled every
 * 50 us. */
void jct_fluid_cfg_default(jct_fluid_cfg_t *cfg, uint32_t flows);
/* Check every field; JCT_EINVAL with err naming the first bad one. */
int jct_fluid_cfg_check(const jct_fluid_cfg_t *cfg, char *err, size_t errlen);

/* A solution, sampled: samples x (t, q, each RC). */
typedef struct {
  uint32_t flows;
  size_t samples;
  uint64_t *t_ns;      /* [samples] */
  double *queue_bytes; /* [samples] */
  double *rc_bps;      /* [samples * flows], sample-major: rc_bps[s * flows + i] */
} jct_fluid_trace_t;

/* Solve cfg into *tr (which jct_fluid_trace_free releases). Returns 0,
 * JCT_EINVAL (a bad cfg, err says which field) or JCT_ENOMEM; on error
 * *tr holds nothing to free. */
int jct_fluid_solve(const jct_fluid_cfg_t *cfg, jct_fluid_trace_t *tr, char *err, size_t errlen);
void jct_fluid_trace_free(jct_fluid_trace_t *tr);

/* The figures bench/dcqcn-paper prints, with its definitions. Converged is
 * the first sample, after the first cut (the lowest sum of the rates
 * within 1 ms of its first fall below C), at which the sum is back to
 * >= 0.9 C; the window is from then to
 * the end (the second half when never, or when fewer than 2 samples are
 * left). Percentiles interpolate linearly between sorted samples. */
typedef struct {
  int converged; /* 1: converge_ns is meaningful */
  uint64_t converge_ns;
  size_t window_from, window_samples;
  double queue_median_bytes, queue_p10_bytes, queue_p90_bytes;
  double queue_min_bytes, queue_max_bytes;
  double rate_mean_bps[JCT_FLUID_MAX_FLOWS]; /* each flow's mean over the window */
  double rate_sum_bps;                       /* the sum of those means */
  double jain;                               /* Jain's index over the means */
} jct_fluid_summary_t;

/* Summarize tr against a bottleneck of line_rate_bps. JCT_EINVAL on an
 * empty trace. */
int jct_fluid_summarize(const jct_fluid_trace_t *tr, uint64_t line_rate_bps,
                        jct_fluid_summary_t *s);

#endif
