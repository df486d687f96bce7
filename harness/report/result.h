/* The result document (internal to the harness): what `jctlab replay` and
 * `jctlab run SCENARIO` print with --json and what --report and --junit
 * are made from. One jansson object, schema "jctlab_result": 1, every
 * figure with its unit in its name; README "Result JSON" documents it.
 *
 * Verdicts: a case with a budget passes when its faulted median JCT is
 * within it (max_degradation: faulted median / baseline median <= the
 * budget; max_jct: faulted median <= the budget), fails when not, and is
 * invalid when its replay was (never judged); with no budget it is
 * "none".
 */
#ifndef JCT_RESULT_H
#define JCT_RESULT_H

#include <jansson.h>
#include <stdint.h>

#include "jctlab/replay.h"
#include "jctlab/run.h"
#include "fidelity.h"

typedef enum { JCT_VERDICT_NONE, JCT_VERDICT_PASS, JCT_VERDICT_FAIL, JCT_VERDICT_INVALID } jct__verdict_kind_t;

typedef struct {
  double max_degradation; /* 0: none */
  uint64_t max_jct_ns;    /* 0: none */
} jct__budget_t;

typedef struct {
  const char *source;  /* the trace, schedule file or "synth" */
  const char *kind;    /* "trace", "schedule", "synth" */
  const char *pattern; /* what inference recognised, or NULL */
  double scale;        /* sizes were multiplied by this (1: not scaled) */
  uint64_t captured_rate_bps; /* the trace's link rate, 0: unknown */
  const char *pfc_watchdog;   /* "off", "drop", "forward" */
  /* A capture's replay: its figures, for each case's "fidelity"
   * (fidelity.h; NULL: none), with this tolerance (0: the default), and
   * where the replay's fabric figures came from ("replay_profile",
   * replay_profile.h; NULL: none). */
  const jct__capture_figures_t *capture;
  double fidelity_tolerance;
  json_t *replay_profile;
} jct__result_input_t;

typedef struct {
  const char *name;
  const char *const *inject; /* the case's injector specs */
  uint32_t ninject;
  const char *sweep_key; /* NULL: not part of a sweep */
  double sweep_value;
  jct__budget_t budget;
  bool fidelity; /* its faults are the capture's own (or none, a lossless capture): its
                    "fidelity" compares it with the capture (jct__result_input_t) */
  bool lossless; /* a lossless capture replayed as it was: its fidelity is its baseline's
                    (so is a case with no injector); its injectors, if any, are its hosts'
                    (stall baseline=yes) */
} jct__case_meta_t;

jct__verdict_kind_t jct__verdict_of(const jct_replay_result_t *r, const jct__budget_t *b);
const char *jct__verdict_name(jct__verdict_kind_t v);

/* A new document with an empty "cases" array. NULL: out of memory. */
json_t *jct__result_new(const char *command, const jct_run_opts_t *o,
                        const jct__result_input_t *in);

/* Per connection of s, in connection order: {"conn", "src", "dst",
 * "channel", "bytes", "messages" (per repetition, the schedule's), then
 * the figures of include/jctlab/run.h's jct_qp_figures_t: "reps",
 * "completion_reps", "bw_bps", "completion_p50_ns", "completion_p99_ns",
 * "completion_max_ns", "retransmitted_packets"} (null where there is no
 * figure: no repetition measured, no message, or retransmissions not
 * counted per QP). With base, those figures go in "baseline" (from base)
 * and "faulted" (from fault) objects; without (a run), in the entry
 * itself. fault (and base) hold s->nconns entries. NULL: out of memory. */
json_t *jct__qps_json(const jct_schedule_t *s, const jct_qp_figures_t *base,
                      const jct_qp_figures_t *fault);

/* Time dilation (run.h) as JSON: {"tdf", "auto", "ceiling_bps",
 * "wall_rate_bps" (rate / F), "wall_s" (the measured repetitions' wall
 * time), "wall_per_jct" (wall_s over the sum of their JCTs; null without
 * one)}. NULL: out of memory. */
json_t *jct__dilation_json(const jct_run_dilation_t *d, double wall_s, double jct_sum_ns);

/* The sentence the reports print for doc's "dilation" ("n/a" without). */
char *jct__dilation_text(const json_t *doc, char *buf, size_t len);

/* A leaf-spine fabric's n links (links.c) as the reports' "fabric_links":
 * {"links": [{"link", "uplink", "bytes", "frames", "peak_queue_bytes",
 * "paused_ns", "drops", "ecn_marked", "flows": [{"src_rank", "dst_rank",
 * "udp_sport", "frames", "bytes", "data"}], "other_flow_frames",
 * "collision"}], "ecmp_imbalance" (null: NaN), "collisions": [link names]};
 * a data flow has at least a tenth of the largest flow's bytes, and a
 * collision is an uplink with two data flows or more while another uplink
 * of its leaf had none. JSON null for no links (the star). */
/* ECN's marking thresholds as the run used them: {"kmin_bytes",
 * "kmax_bytes", "pmax"}, null without ECN. */
json_t *jct__ecn_json(const jct_run_opts_t *o);
/* The verbs transport's RDMA settings as the run used them (run.h):
 * {"device", "port", "gid_index" (null: rdma_cm's, by address),
 * "traffic_class", "counters" (null: every hw_counter)}; null on uroce. */
json_t *jct__rdma_json(const jct_run_opts_t *o);
/* n ranks' device counters: [{"rank", "counters": {name: moved}}], or
 * null (d NULL: uroce). */
json_t *jct__dev_rank_json(const jct_dev_counters_t *d, uint32_t n);

json_t *jct__links_json(const jct_fabric_link_stats_t *l, uint32_t n, double imbalance);

/* Append one case (the replay's figures, judged against meta->budget). */
/* A transport's counts as JSON ({"packets", "data_packets",
 * "retransmitted_packets", "retransmitted_bytes", "naks", "timeouts",
 * "duplicate_packets", "cnps", "nic_paused_ns"}), null where it does not
 * count (t->counted). */
json_t *jct__transport_json(const jct_transport_stats_t *t);

/* The go-back-N model's prediction for a case of o (include/jctlab/model.h):
 * {"covers", "p", "jct_ns", "degradation", "base_ns", "excess_ns",
 * "mean_excess_ns", "W_pkts", "bdp_pkts", "detect_pkts", "packet_time_ns",
 * "nak_cost_ns", "timer_ns", "p_timer", "losses", "timeouts" (per
 * repetition), "trials"}, or JSON null when the model does not cover its
 * faults (anything but one `drop p=` on uroce) or runs out of memory. */
json_t *jct__model_json(const jct_run_opts_t *o);

int jct__result_add_case(json_t *doc, const jct_run_opts_t *o, const jct__result_input_t *in,
                         const jct__case_meta_t *meta, const jct_replay_result_t *r);

#endif
