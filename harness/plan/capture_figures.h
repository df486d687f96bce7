/* What a capture showed, for a postmortem's fidelity (internal;
 * harness/report/fidelity.h defines the figures). */
#ifndef JCT_CAPTURE_FIGURES_H
#define JCT_CAPTURE_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "harness/report/fidelity.h"
#include "jctlab/infer.h"
#include "jctlab/schedule.h"

/* Measure the capture at path (jct_inspect_path) for the schedule s
 * inferred from it (rep: its ranks' addresses and connections' QPs): job
 * time, over the flows that carry messages larger than clear-to-send ones;
 * per connection, its flow's first to last data packet; retransmitted
 * packets, NAKs (PSN sequence
 * error) and timeouts as `jctlab inspect` counts them; the median loss
 * recovery from s->profile; what its hosts did with no fault behind it
 * (fidelity.h: timer go-backs that re-sent nothing lost, transmit stalls,
 * the NAK reaction), from rep. Errors: those of jct_inspect_path (err says
 * which), JCT_ENOMEM. */
int jct__capture_figures_measure(const char *path, const jct_schedule_t *s,
                                 const jct_infer_report_t *rep, jct__capture_figures_t *out,
                                 char *err, size_t errlen);

#endif
