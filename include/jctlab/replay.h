/* Replay: a schedule run K times without faults (baseline) and K times
 * with them (faulted), interleaved B F B F ... on one emulated fabric, and
 * the job's slowdown (DESIGN.md, decision 5).
 *
 * Figures (times in ns, from CLOCK_MONOTONIC on the orchestrator):
 * - JCT per repetition: first send of the schedule to its last receive.
 * - median; p99 by nearest rank (with K < 100 it is the maximum); min; max.
 * - degradation = faulted median / baseline median, with a 95% percentile
 *   bootstrap interval: 2000 resamples of each side's K JCTs (with
 *   replacement, seeded by the run's seed), the ratio of the resampled
 *   medians each time, its 2.5th and 97.5th percentiles (Efron and
 *   Tibshirani, "An Introduction to the Bootstrap", ch. 13).
 * - algbw = S / median JCT, busbw = algbw * factor (nccl-tests: 2(N-1)/N
 *   for AllReduce), in GB/s (1e9 bytes per second).
 * - the critical path of the faulted median repetition: from the op that
 *   completed last, back through the dependency that completed last before
 *   each op became ready, to an op with none; per op, late_ns is how much
 *   later it completed than in the baseline median repetition, and
 *   added_ns how much longer its own transfer (start to done) took. The op
 *   with the largest added_ns is the one that made the job late.
 *
 * A replay is invalid (never reported as a result) when a repetition did
 * not finish, the harness lost frames by its own fault, or the loop's p99
 * lateness exceeded one packet's serialization time at the emulated rate
 * (the loop, not the link, set the pace).
 */
#ifndef JCTLAB_REPLAY_H
#define JCTLAB_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/dev_counters.h"
#include "jctlab/executor.h"
#include "jctlab/injector.h"
#include "jctlab/profile.h"
#include "jctlab/run.h"
#include "jctlab/switch.h"

#define JCT_REP_MAX_BINS 200
#define JCT_REPLAY_BOOTSTRAP 2000
/* Fewer repetitions a side than this and the interval is not given
 * (ci95_low and ci95_high are NaN, null in JSON): a percentile bootstrap
 * of a median of 1 to 4 values takes a handful of distinct values, so the
 * "interval" of one repetition is a point and two seeded runs of two give
 * intervals that do not overlap. The median is reported all the same. */
#define JCT_REPLAY_MIN_REPS_CI 5

/* One repetition. */
typedef struct {
  bool faulted;
  bool ok; /* finished; when false, why says what went wrong */
  char why[256];
  uint64_t jct_ns;
  jct_op_timing_t *timing;         /* schedule->nops of them, from the repetition's start; owned */
  jct_transport_stats_t transport; /* counters moved by this repetition and its drain */
  jct_conn_counts_t *conn; /* schedule->nconns: each connection's counts in the same span;
                              NULL where the transport does not count per QP (verbs); owned */
  jct_dev_counters_t dev; /* verbs: the devices' counters (n 0 on uroce) */
  /* verbs: each rank's device counters moved in this repetition (the
   * scenario's counters when it names some, else every one its agent
   * read), schedule->nranks of them; NULL on uroce. Owned. */
  jct_dev_counters_t *dev_rank;
  jct_switch_totals_t fabric;
  uint64_t paused_ns;
  /* A leaf-spine fabric's links (fabric.h): what each carried in this
   * repetition and its drain, its peak queue in them; NULL and 0 for the
   * star. Owned (jct__rep_clear); run and replay sum them and let go. */
  jct_fabric_link_stats_t *links;
  uint32_t nlinks;
  jct_injector_stats_t injectors[JCT_RUN_MAX_INJECTORS];
  uint64_t bin_ns;
  uint32_t nbins;
  uint32_t retx_bins[JCT_REP_MAX_BINS]; /* retransmitted packets per bin_ns */
  jct_series_t *series; /* run.h's time series (series_ns); NULL: none. Owned */
} jct_rep_t;

typedef struct {
  uint64_t median_ns, p99_ns, min_ns, max_ns;
  double algbw_gbps, busbw_gbps;
  jct_transport_stats_t transport; /* summed over the side's repetitions */
  jct_dev_counters_t dev;
  jct_dev_counters_t *dev_rank; /* verbs: each rank's, summed over the side's repetitions
                                   (schedule->nranks; NULL on uroce); owned by the result */
  jct_switch_totals_t fabric;
  uint64_t paused_ns;
  uint32_t median_rep;   /* index (into the side's reps) of the repetition at the median */
  /* A leaf-spine fabric's links summed over the side's repetitions (peak
   * queue: the deepest of theirs), NULL and 0 for the star; owned by the
   * result. ecmp_imbalance: max / mean of the uplinks' bytes, NaN without. */
  jct_fabric_link_stats_t *links;
  uint32_t nlinks;
  double ecmp_imbalance;
  jct_qp_figures_t *qps; /* schedule->nconns, by connection (run.h); NULL when the replay
                            is invalid; owned by the result */
  /* With o->watch_losses: the side's losses whose retransmission crossed
   * the switch (losses_recovered, over its repetitions) and the median of
   * their hole → retransmission times (lower middle), timed on the frames
   * the switch sent toward the hosts as `jctlab inspect` times a capture
   * (inspect.h, "hole_resent"); 0 and 0 when none was, or unwatched.
   * Likewise the go-backs after NAKs seen there (go_backs) and the median
   * of their depths, the PSNs past the hole the requester had sent when
   * it went back (profile.h, go_back_psns). Each with how its samples
   * spread over the profile's bins (profile.h, jct_figure_t.spread; all
   * zero when none was, or unwatched). */
  uint64_t loss_recovery_ns, losses_recovered;
  uint64_t go_back_psns, go_backs;
  uint64_t loss_recovery_spread[JCT_FIGURE_BINS], go_back_spread[JCT_FIGURE_BINS];
} jct_replay_side_t;

typedef struct {
  uint32_t op;
  uint64_t late_ns;  /* completed this much later than in the baseline (0 if earlier) */
  int64_t added_ns;  /* its own transfer took this much longer */
} jct_path_op_t;

typedef struct {
  uint32_t reps;
  jct_rep_t *baseline, *faulted; /* reps each, in the order they ran */
  jct_replay_side_t b, f;
  double degradation, ci95_low, ci95_high;
  bool valid;
  char invalid_why[256];
  uint32_t ninjectors;
  jct_run_injector_t injectors[JCT_RUN_MAX_INJECTORS]; /* summed over faulted reps */
  jct_path_op_t *path; /* npath, first to last */
  uint32_t npath;
  int32_t culprit; /* index into path of the op with the largest added_ns, -1: none */
  uint64_t lateness_p50_ns, lateness_p99_ns, lateness_max_ns;
  double packet_time_ns, cpu_busy;
  uint64_t harness_losses;
  uint64_t skipped_ns; /* idle time the clock skipped, both sides (clock.h) */
  double wall_s;       /* wall time here, which skipped time is not in */
  jct_run_dilation_t dilation; /* the time dilation it ran with (run.h) */
} jct_replay_result_t;

/* Progress: called after each repetition with how many of total ran. */
typedef void (*jct_replay_progress_cb)(uint32_t done, uint32_t total, void *arg);

/* Replay o->schedule: o->reps baseline and o->reps faulted repetitions,
 * interleaved, the faulted ones with o->inject on the switch's path.
 * The caller must have called jct_ns_isolate() first. Returns 0 with *res
 * filled (res->valid says whether it may be reported; free it with
 * jct_replay_result_free), or JCT_EINVAL (bad options or injector spec: err
 * says which), JCT_EIO (the fabric could not be built), JCT_ENOMEM. */
int jct_replay(const jct_run_opts_t *o, jct_replay_progress_cb progress, void *arg,
               jct_replay_result_t *res, char *err, size_t errlen);

void jct_replay_result_free(jct_replay_result_t *res);

/* The statistics alone, for tests: fills b/f (median, p99, min, max),
 * degradation and its interval from the JCTs. */
void jct_replay_stats(const uint64_t *base_ns, const uint64_t *fault_ns, uint32_t k,
                      uint64_t seed, jct_replay_side_t *b, jct_replay_side_t *f,
                      double *degradation, double *lo, double *hi);

#endif
