/* What a case is built from (run_args.h): jctlab's defaults for a run, in
 * one place for the command line and the scenario files. */
#include "run_args.h"

#include <stdio.h>
#include <string.h>

/* Whether spec names its place (at=host:RANK or at=switch) itself. */
static bool placed(const char *spec) {
  for (const char *p = spec; (p = strstr(p, "at=")) != NULL; p += 3) {
    bool word = p == spec || p[-1] == ' ' || p[-1] == '\t';
    if (word && (!strncmp(p + 3, "host", 4) || !strncmp(p + 3, "switch", 6))) return true;
  }
  return false;
}

void jct__run_opts_init(jct_run_opts_t *o, uint64_t rate_bps) {
  *o = (jct_run_opts_t){.transport = JCT_TRANSPORT_UROCE,
                        .reps = 5,
                        .rate_bps = rate_bps,
                        .prop_delay_ns = 1000,
                        .timeout = 20,
                        .retry_cnt = 7,
                        .pfc = true,
                        .seed = 1};
}

void jct__run_args_init(jct__run_args_t *a, uint64_t rate_bps) {
  memset(a, 0, sizeof *a);
  jct__run_opts_init(&a->run, rate_bps);
  a->channels = 1;
  a->qps_per_conn = 1;
  jct_clos_default(&a->clos);
  a->reps = a->run.reps;
  a->timeout = a->run.timeout;
  a->retry = a->run.retry_cnt;
}

void jct__run_args_finish(jct__run_args_t *a) {
  a->run.reps = (uint32_t)a->reps;
  for (uint32_t i = 0; a->inject_at && i < a->run.ninject; i++) {
    if (placed(a->inject[i])) continue;
    snprintf(a->inject_placed[i], sizeof a->inject_placed[i], "%s at=%s", a->inject[i],
             a->inject_at);
    a->inject[i] = a->inject_placed[i];
  }
  a->run.inject = a->inject;
  a->run.timeout = (uint8_t)a->timeout;
  a->run.retry_cnt = (uint8_t)a->retry;
  a->run.clos = a->clos.leaves ? &a->clos : NULL;
}
