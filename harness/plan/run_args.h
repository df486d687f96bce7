/* What a case is built from (internal): the job (a generated collective,
 * or a schedule) and the fabric's options, as `jctlab run` and `jctlab
 * replay` take them on their command lines (cli/run_args.c parses argv
 * into it) and as a scenario's job is loaded (replay_input.h). Counts are
 * kept wide while parsing and copied into run by jct__run_args_finish(). */
#ifndef JCT_RUN_ARGS_H
#define JCT_RUN_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/clos.h"
#include "jctlab/run.h"

/* Which of a replay's fabric and transport figures the user gave (command
 * line or scenario file): the others may come from a capture's profile
 * (replay_profile.h). */
enum {
  JCT__SET_RATE = 1u << 0,
  JCT__SET_DELAY = 1u << 1,
  JCT__SET_PATH_MTU = 1u << 2,
  JCT__SET_NIC_QUEUE = 1u << 3,
  JCT__SET_TIMEOUT = 1u << 4,
  JCT__SET_RETRY = 1u << 5,
  JCT__SET_NAK_DELAY = 1u << 6,
  JCT__SET_NAK_REACT = 1u << 7,
};

typedef struct {
  const char *synth, *schedule;
  uint64_t ranks, bytes, channels, reps, timeout, retry;
  uint64_t qps_per_conn; /* --qps-per-connection (1: none split) */
  bool transport_set;
  uint32_t user_set; /* JCT__SET_* */
  const char *inject[JCT_RUN_MAX_INJECTORS];
  /* --inject-at: where the injectors that name no place run (at=host:RANK
   * or at=switch); NULL: the switch. Their specs with it added are kept in
   * inject_placed. */
  const char *inject_at;
  char inject_placed[JCT_RUN_MAX_INJECTORS][600];
  jct_clos_t clos; /* the fabric's shape (--topology, --placement, --ecmp...) */
  jct_run_opts_t run;
} jct__run_args_t;

/* jctlab's defaults for a run, the command line's and the scenario files'
 * (suites/scenarios/README.md): uroce, links of rate_bps with 1 us of
 * propagation delay, PFC on, ECN and the watchdog off, NCCL's QP timeout
 * 20 and retry count 7, 5 repetitions, seed 1; everything else zero. */
void jct__run_opts_init(jct_run_opts_t *o, uint64_t rate_bps);

/* No job yet, 1 channel, and jct__run_opts_init()'s defaults. */
void jct__run_args_init(jct__run_args_t *a, uint64_t rate_bps);

/* Copy the parsed counts into a->run (reps, timeout, retry, inject, with
 * inject_at added to the specs that name no place, clos: a->run then
 * points into a, which must not move). */
void jct__run_args_finish(jct__run_args_t *a);

#endif
