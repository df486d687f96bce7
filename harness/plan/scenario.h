/* Scenario files (internal to the harness): what `jctlab run SCENARIO.yaml`
 * reads. One YAML document (libyaml) says what job to replay, on what
 * fabric, and which fault cases to judge against which budget:
 *
 *     name: ring-loss-sweep
 *     synth: {algorithm: ring, ranks: 8, bytes: 1MiB}
 *     rate: 100mbit
 *     reps: 3
 *     cases:
 *       - name: loss
 *         inject: ["drop p=[0, 1e-4, 1e-3]"]
 *         max_degradation: 1.15
 *
 * suites/scenarios/README.md documents every key, its unit and default.
 * Loading validates everything a run would refuse later: unknown keys,
 * wrong types, missing or doubled sources, bad units, bad budgets, and
 * every injector spec (jct_injector_new() compiles it), so that a bad file
 * fails before any namespace is built. Errors read
 * "FILE:LINE:COL: what is wrong" (line and column from libyaml's marks,
 * counted from 1), with JCT_EINVAL. scenario_int.h says which file reads
 * what.
 *
 * Sweeps: one word of an inject spec may hold a list, `key=[v1, v2, ...]`
 * (or `[v1, v2]` as a kind's positional value: "delay [10us, 50us]"). The
 * case expands into one case per value, in order, named "NAME key=VALUE"
 * with VALUE as written; each records sweep_key and sweep_value. One list
 * per case: a second one is an error (a sweep has one axis; write two
 * cases to sweep two things). At most JCT_SCENARIO_MAX_CASES cases after
 * expansion, and case names must differ.
 */
#ifndef JCT_SCENARIO_H
#define JCT_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/clos.h"
#include "jctlab/run.h"
#include "harness/orch/names.h"
#include "run_args.h"
#include "harness/report/result.h"

#define JCT_SCENARIO_MAX_CASES 256

typedef enum { JCT_SCEN_SYNTH, JCT_SCEN_TRACE, JCT_SCEN_SCHEDULE } jct__scenario_source_t;

/* One fault case, after sweep expansion. Its fabric switches (pfc, ecn,
 * cc, pfc_watchdog) are the scenario's unless the case overrides them. */
typedef struct {
  char *name;
  char **inject; /* ninject spec strings, in chain order */
  uint32_t ninject;
  bool trace_faults;    /* faults: trace (the trace's own losses come first) */
  jct__budget_t budget; /* zeros: no budget */
  bool pfc, ecn;
  jct_cc_t cc;
  jct__watchdog_t pfc_watchdog;
  jct_clos_t clos;    /* the scenario's, with the case's reroute_detection: */
  char *sweep_key;    /* NULL: not part of a sweep */
  char *sweep_text;   /* the value as written ("1e-4", "50us") */
  double sweep_value; /* as a number: "1%" is 0.01, times in ns; a word ("normal"):
                         its position in the list, from 0; 0 when not in a sweep */
  uint32_t line;      /* of the case in the file, from 1 */
} jct__scenario_case_t;

typedef struct {
  char *path;        /* the scenario file, as given */
  char *name;        /* name:, or the file's name without .yaml/.yml */
  char *description; /* NULL when absent */
  jct__scenario_source_t source;
  struct {
    char algorithm[32];
    uint32_t ranks, channels;
    uint64_t bytes;
  } synth;     /* source JCT_SCEN_SYNTH */
  char *input; /* absolute path of the trace or schedule; NULL for synth */
  /* The fabric and the run, every case's unless the case overrides pfc,
   * ecn or pfc_watchdog: transport, lab_ranks (lab:), rate_bps, prop_delay_ns
   * (delay:), mtu and path_mtu_bytes (0: the fabric's defaults), pfc, ecn,
   * pfc_watchdog and watchdog_forward (names.h reads them as one), timeout,
   * retry_cnt (retry:), reps, seed; jct__run_opts_init()'s defaults where
   * the file is silent. No schedule and no inject: those are the cases'. */
  jct_run_opts_t run;
  /* topology:, placement:, ecmp_seed:, ecmp: (run.clos points here when
   * leaf-spine); qps_per_connection: (1: none split) */
  jct_clos_t clos;
  char placement[256];
  uint32_t qps_per_conn;
  uint64_t captured_rate_bps; /* 0: unknown */
  uint32_t user_set;          /* JCT__SET_* (run_args.h): the figures the file gives */
  double scale;
  jct__scenario_case_t *cases;
  uint32_t ncases;
} jct__scenario_t;

/* Load and validate the scenario at path. Relative trace:/schedule: paths
 * are taken from the scenario file's directory and returned absolute.
 * Errors: JCT_EINVAL ("FILE:LINE:COL: ..."), JCT_EIO (cannot read the
 * file), JCT_ENOMEM. On error *out is NULL. */
int jct__scenario_load(jct__scenario_t **out, const char *path, char *err, size_t errlen);

/* The same from memory (fuzzing, tests): name stands for the file in
 * errors, base_dir resolves relative paths (NULL: the current directory). */
int jct__scenario_load_mem(jct__scenario_t **out, const char *text, size_t len, const char *name,
                           const char *base_dir, char *err, size_t errlen);

void jct__scenario_free(jct__scenario_t *s);

/* The run options of case c: the scenario's (s->run) with the case's PFC,
 * ECN and watchdog and its inject specs (pointers into c, valid while s
 * lives; the trace's own faults, when c->trace_faults, are the caller's to
 * put first). o->schedule is NULL: the caller's. */
void jct__scenario_case_opts(const jct__scenario_t *s, const jct__scenario_case_t *c,
                             jct_run_opts_t *o);

/* "synth", "trace", "schedule". */
const char *jct__scenario_source_name(jct__scenario_source_t s);

/* Sweep expansion alone (scenario_sweep.c), for one case's specs:
 * find the list, if any. Returns 0 with *nvalues 0 when there is none,
 * or with the list's values (malloc'd strings, trimmed) in *values, the
 * spec index in *which, the key (the word before '=', or the kind for a
 * positional list) in key (keylen bytes), and [*start, *end) the list's
 * bytes in specs[*which] including the brackets. Errors: JCT_EINVAL (err
 * says why: two lists, an empty list or value, an unclosed '['),
 * JCT_ENOMEM. */
int jct__sweep_find(const char *const *specs, uint32_t n, uint32_t *which, char *key, size_t keylen,
                    size_t *start, size_t *end, char ***values, uint32_t *nvalues, char *err,
                    size_t errlen);

/* A sweep value as a number for plots: "1e-4" 1e-4, "1%" 0.01, "50us"
 * 50000 (ns), "1000/s" 1000; NAN when it does not start with a number. */
double jct__sweep_number(const char *text);

#endif
