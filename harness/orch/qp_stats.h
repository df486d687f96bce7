/* Per-QP figures (internal to orch/): each connection's bandwidth,
 * message completion times and retransmissions, gathered one repetition
 * at a time and turned into jct_qp_figures_t (include/jctlab/run.h says
 * what each figure is).
 *
 * Memory, for a schedule of C connections and M messages: 20 bytes per
 * connection (and 64 per figure at the end) and 4 per message, and 8 bytes
 * per completion time kept, which is M per repetition up to
 * JCT_QP_MAX_SAMPLES in all (128 MiB);
 * past that, the later repetitions add to the bandwidth and the
 * retransmissions but not to the percentiles (completion_reps says so).
 * The times are kept exactly, not in a histogram, because a connection
 * carries few messages per repetition (a ring: 2(N-1)) and a histogram
 * per connection would cost more than the samples for every schedule up
 * to JCT_SCHEDULE_MAX_CONNS connections.
 */
#ifndef JCT_QP_STATS_H
#define JCT_QP_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "jctlab/replay.h"
#include "jctlab/run.h"
#include "jctlab/schedule.h"

typedef struct jct__qp_acc jct__qp_acc_t;

/* For s (which must outlive it) and at most reps repetitions, keeping at
 * most max_samples completion times (JCT_QP_MAX_SAMPLES; at least one
 * repetition's are kept whatever it says); retx_counted: the repetitions
 * will carry conn. Errors: JCT_ENOMEM. */
int jct__qp_acc_new(jct__qp_acc_t **out, const jct_schedule_t *s, uint32_t reps,
                    uint32_t max_samples, bool retx_counted);

/* Add a repetition that finished (rep->ok; others are ignored), from its
 * timing and conn. */
void jct__qp_acc_add(jct__qp_acc_t *a, const jct_rep_t *rep);

/* The figures, schedule->nconns of them in *out (malloc'd; the caller
 * frees). Sorts what it holds: call once, after the last add. Errors:
 * JCT_ENOMEM. */
int jct__qp_acc_figures(jct__qp_acc_t *a, jct_qp_figures_t **out);

void jct__qp_acc_free(jct__qp_acc_t *a);

#endif
