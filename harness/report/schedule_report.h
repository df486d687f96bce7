/* The report of a schedule inferred from a capture (include/jctlab/infer.h),
 * for a person (text) and for programs (JSON). Internal to the harness:
 * `jctlab schedule` writes both; `jctlab replay` may quote them. */
#ifndef JCT_SCHEDULE_REPORT_H
#define JCT_SCHEDULE_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "jctlab/infer.h"
#include "jctlab/schedule.h"

/* The confidence report as text: what the capture held, the schedule, the
 * pattern, how far to trust the deps, clock skew, the losses (the first
 * max_faults listed). Returns 0, or JCT_EIO when writing failed. */
int jct__infer_report_text(FILE *out, const char *trace, const jct_schedule_t *s,
                           const jct_infer_report_t *rep, unsigned max_faults);

/* The same as JSON ("jctlab_infer": 1; every key always present):
 * {"jctlab_infer": 1, "trace",
 *  "capture": {"frames", "roce_packets", "pfc_frames", "malformed_frames",
 *              "control_frames", "control_tcp", "control_cm", "control_other",
 *              "messages", "messages_completed", "flow_control", "not_sends",
 *              "retransmitted_packets"},
 *  "schedule": {"ranks", "connections", "ops", "total_bytes", "rank_addresses": [...]},
 *  "pattern": {"name", "evidence", "bytes_estimate", "repetitions"},
 *  "confidence": {"ops_with_deps", "deps_received", "deps_program_order",
 *                 "ops_program_order", "order_pause_ns", "ops_incomplete", "ops_queued",
 *                 "frames_backwards", "skewed_messages", "turnaround_ns",
 *                 "gap_median_ns", "gap_max_ns"},
 *  "faults": [{"op", "psn", "offset_bytes", "tail", "timeout", "before_capture",
 *              "retransmission", "again"}], "faults_on_flow_control"}
 * Returns a new reference, or NULL when out of memory. */
json_t *jct__infer_report_json(const char *trace, const jct_infer_report_t *rep);

#endif
