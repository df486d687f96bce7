/* The options every command that runs on the emulated fabric shares
 * (`jctlab run`, `jctlab replay`), parsed in one place (internal). */
#ifndef JCT_RUN_ARGS_H
#define JCT_RUN_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/run.h"

typedef struct {
  const char *synth, *schedule;
  uint64_t ranks, bytes, channels, reps, timeout, retry;
  bool transport_set;
  const char *inject[JCT_RUN_MAX_INJECTORS];
  jct_run_opts_t run;
} jct__run_args_t;

/* Defaults: 1 channel, 5 reps, timeout 20, retry 7, PFC on, seed 1,
 * rate_bps, 1 us propagation delay. */
void jct__run_args_init(jct__run_args_t *a, uint64_t rate_bps);

/* Try argv[*i] (and its value) as a shared option. Returns 1 consumed
 * (*i moved past the value), 0 not a shared option, 2 bad (the message is
 * on stderr, prefixed "jctlab PROG: "). */
int jct__run_args_parse(jct__run_args_t *a, int argc, char **argv, int *i, const char *prog);

/* Copy the parsed counts into a->run (reps, timeout, retry, inject). */
void jct__run_args_finish(jct__run_args_t *a);

/* The lines of help text for the shared options. */
extern const char jct__run_args_help[];

#endif
