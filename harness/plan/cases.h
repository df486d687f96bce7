/* Running fault cases one after the other (internal): each case is one
 * replay (K baseline and K faulted repetitions, interleaved, on a fabric
 * built for it) whose figures go into the result document. Shared by
 * `jctlab replay` (one case, or one per value of a sweep) and `jctlab run
 * SCENARIO` (the scenario's cases). */
#ifndef JCT_CASES_H
#define JCT_CASES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/run.h"
#include "harness/report/result.h"

typedef struct {
  jct__case_meta_t meta;
  jct_run_opts_t opts; /* schedule, fabric, reps, seed and meta's injectors */
} jct__case_t;

/* The worst verdict so far decides the exit status. */
typedef struct {
  uint32_t pass, fail, invalid, none;
  uint32_t unreproduced; /* valid cases whose "fidelity" says the capture was not reproduced */
} jct__case_tally_t;

/* Run cases[0..n) in order, appending each to doc; a progress bar on
 * stderr when it is a terminal. With more than one case, each case's
 * --pcap-out, --pcap-in, --pcap-drops and --fault-log get the case's
 * number before the extension (jct__case_path), so no case overwrites
 * another's. Stops at the first error: JCT_EINVAL (a bad injector spec:
 * err names the case), JCT_EIO, JCT_ENOMEM. */
int jct__run_cases(json_t *doc, const jct__result_input_t *in, const jct__case_t *cases, uint32_t n,
                   jct__case_tally_t *tally, char *err, size_t errlen);

/* The file case k (from 1) of n writes for the output path: path itself
 * when n < 2 (or path NULL), else path with "-caseK" before its extension
 * (the last '.' after the last '/'; out.pcap: out-case1.pcap,
 * out-case2.pcap, ...; out: out-case1), in buf. A rotated capture's
 * numbers go after that whole name (out-case1.pcap1, capture.h). */
const char *jct__case_path(const char *path, uint32_t k, uint32_t n, char *buf, size_t len);

/* Exit status for a tally: 3 any invalid, 4 any capture not reproduced
 * (fidelity.h: its baseline is no counterfactual), 1 any budget exceeded,
 * else 0. */
int jct__cases_status(const jct__case_tally_t *t);

/* Expand a sweep in specs (at most one 'key=[v1, v2, ...]' list, as in
 * scenario files) into one spec list per value. On return *nout lists of
 * n specs each are in *out (malloc'd; free with jct__sweep_free), and the
 * key and each value's text in *key / *values; with no list, one copy.
 * Errors: JCT_EINVAL (err says why), JCT_ENOMEM. */
typedef struct {
  char **specs;     /* n of them */
  char *value_text; /* NULL when not a sweep */
  double value;
} jct__sweep_point_t;
int jct__sweep_expand(const char *const *specs, uint32_t n, jct__sweep_point_t **out,
                      uint32_t *nout, char *key, size_t keylen, char *err, size_t errlen);
void jct__sweep_free(jct__sweep_point_t *p, uint32_t npoints, uint32_t nspecs);

#endif
