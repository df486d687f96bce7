/* A size sweep (internal), as nccl-tests runs one: its -b/-e/-f (smallest
 * size, largest, factor) or a list of sizes, expanded into the sizes that
 * `jctlab run --synth ALGO` runs one after the other. Each size is its own
 * case on a fabric built for it: after the warm-up repetitions, a replay
 * (K baseline and K faulted repetitions, interleaved) when there are
 * injectors, else a run of K repetitions; its figures become one row of
 * the table (report/sweep.h).
 *
 * Everything a size could be refused for (too small for its chunks, more
 * ops than a schedule holds, a message over RoCE's 2^31 bytes) is checked
 * for every size before anything is built.
 */
#ifndef JCT_SIZE_SWEEP_H
#define JCT_SIZE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "harness/report/sweep.h"
#include "jctlab/run.h"

#define JCT_SWEEP_MAX_SIZES 64

/* min, min*f, min*f^2, ... while not above max (nccl-tests' -b, -f, -e):
 * an integer factor multiplies exactly (as nccl-tests, whose -f is a
 * whole number), another rounds each size down to a whole byte. Errors:
 * JCT_EINVAL (min 0, min > max, factor not a finite number > 1, a factor
 * so close to 1 that two steps round to the same size, more than
 * JCT_SWEEP_MAX_SIZES sizes; err says which, in the options' words). */
int jct__sweep_sizes_range(uint64_t min, uint64_t max, double factor, uint64_t *sizes, uint32_t *n,
                           char *err, size_t errlen);

/* "1MiB,4MiB,16MiB": sizes as jct__parse_size_bytes() reads them,
 * separated by commas, run in the order given. Errors: JCT_EINVAL (an
 * item that is not a size, a size 0 or given twice, more than
 * JCT_SWEEP_MAX_SIZES; err says which). */
int jct__sweep_sizes_list(const char *text, uint64_t *sizes, uint32_t *n, char *err, size_t errlen);

typedef struct {
  const char *algorithm; /* a jct_schedule_synth() name */
  uint32_t ranks, channels;
  const uint64_t *sizes;
  uint32_t nsizes;
  jct_run_opts_t opts; /* fabric, reps, warmup, seed, injectors, outputs; schedule unset */
  uint32_t qps_per_conn; /* each size's connections as this many QPs (0, 1: none split;
                            jct_schedule_split_qps, NCCL_IB_QPS_PER_CONNECTION) */
} jct__sweep_plan_t;

/* Make and check every size's schedule (jct_schedule_synth, split across
 * qps_per_conn QPs, then jct_run_check), dropping each; name (len bytes) gets the name the
 * schedules record for the algorithm (nccl-tests' spellings are taken
 * for jctlab's). Returns 0, or JCT_EINVAL (err names the size: "size
 * 1099511627776: ..."), JCT_ENOMEM. */
int jct__sweep_check(const jct__sweep_plan_t *p, char *name, size_t len, char *err, size_t errlen);

/* The file a size writes for an output path (--pcap-out, --pcap-in,
 * --pcap-drops, --fault-log): path itself when there are fewer than 2
 * sizes (or path NULL), else path with "-sizeN" before its extension (the
 * last '.' after the last '/'; out.pcap: out-size65536.pcap), in buf. A
 * rotated capture's numbers go after that whole name (capture.h). */
const char *jct__sweep_size_path(const char *path, uint64_t bytes, uint32_t nsizes, char *buf,
                                 size_t len);

/* Called after each size, with its row. */
typedef void (*jct__sweep_row_cb)(const jct__sweep_row_t *row, uint32_t index, void *arg);

/* Run the sizes in order into rows[0..nsizes) (zeroed by the caller; free
 * each with jct__sweep_row_free), calling cb (may be NULL) after each.
 * With more than one size, --pcap-out, --pcap-in, --pcap-drops and
 * --fault-log get the size before their extension
 * (jct__sweep_size_path), so no size overwrites another's. After a
 * SIGINT or SIGTERM (base/interrupt.h) the sizes not started are not run.
 * *nrun: how many rows were filled. Returns 0, or the error that stopped
 * it (err names the size): JCT_EINVAL (an injector spec refused),
 * JCT_EIO (the fabric could not be built), JCT_ENOMEM. */
int jct__sweep_run(const jct__sweep_plan_t *p, jct__sweep_row_t *rows, uint32_t *nrun,
                   jct__sweep_row_cb cb, void *arg, char *err, size_t errlen);

#endif
