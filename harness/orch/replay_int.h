/* Internal to replay*.c. */
#ifndef JCT_REPLAY_INT_H
#define JCT_REPLAY_INT_H

#include "jctlab/replay.h"
#include "jctlab/schedule.h"

/* Fill r->path, r->npath and r->culprit from the two repetitions'
 * timings. Returns 0 or -1 (out of memory). */
int jct__replay_path(const jct_schedule_t *s, const jct_op_timing_t *base,
                     const jct_op_timing_t *fault, jct_replay_result_t *r);

#endif
