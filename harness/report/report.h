/* The reports a person reads (internal to the harness), made from the
 * result document of `jctlab replay` and `jctlab run SCENARIO` (result.h):
 * a table per case on the terminal, and with --report DIR a directory
 * holding report.md, report.html (self-contained: the plots inline) and
 * the plots as SVG files, drawn by gnuplot (Debian package gnuplot-nox)
 * run as a child process.
 *
 * Plots (report_plot.c):
 *   jct-vs-<key>.svg   degradation (faulted / baseline median JCT) against
 *                      the sweep value, with its 95% bootstrap interval as
 *                      error bars, and the faulted median JCT on the right
 *                      axis; one plot per sweep key. The x axis is
 *                      logarithmic when the values span two decades or
 *                      more; a value 0 then sits one decade below the
 *                      smallest other value, with its tick labelled "0".
 *   degradation.svg    when no case is part of a sweep: a bar per case
 *                      with its 95% interval.
 *   timeline-<i>.svg   case i (from 1; the first 16 cases): a bar per operation from start_ns
 *                      to done_ns at y = its rank, coloured by step, for
 *                      the baseline repetition (top) and the faulted one
 *                      (bottom) on the same time axis; the faulted rep's
 *                      critical path is outlined.
 *   retx-<i>.svg       case i (the first 16): retransmitted packets per time bin in the
 *                      faulted repetition, and in the baseline one.
 * A case without the figures a plot needs (an invalid run has no
 * degradation, timeline or bins) is left out of it, and the reports say so.
 *
 * The result document, schema version 1 ("jctlab_result": 1). Every figure
 * carries its unit in its name (_ns, _bytes, _bps, _gbps: GB/s of 1e9
 * bytes); every member the reports read may be null or absent (a case
 * whose run was invalid has no faulted figures) and the reports then
 * print "n/a" or leave the plot out:
 *
 * {
 *   "jctlab_result": 1, "command": "replay" | "run", "jctlab_version": "0.1.0",
 *   "input":  {"source", "kind": "trace"|"schedule"|"synth", "algorithm", "pattern",
 *              "ranks", "ops", "bytes"},
 *   "fabric": {"transport": "uroce", "rate_bps", "prop_delay_ns", "pfc", "ecn",
 *              "pfc_watchdog": "off"|"drop"|"forward"},
 *   "scale":  {"factor", "captured_rate_bps", "projected_rate_bps"},
 *   "seed", "reps",
 *   "cases": [{
 *     "name", "inject": ["drop p=0.001", ...],
 *     "sweep": {"key": "p", "value": 0.001} | null,
 *     "budget": {"max_degradation": 1.15} | {"max_jct_ns": N} | null,
 *     "verdict": "pass"|"fail"|"invalid"|"none", "invalid_why" (when invalid),
 *     "baseline": {"jct_ns": [per rep], "median_jct_ns", "p99_jct_ns", "min_jct_ns",
 *                  "max_jct_ns", "algbw_gbps", "busbw_gbps"},
 *     "faulted":  {the same},
 *     "degradation": {"median", "ci95_low", "ci95_high"},
 *     "projected": {"baseline_jct_ns", "faulted_jct_ns"} | null (scale 1),
 *     "transport": {"retransmitted_packets", "retransmitted_bytes", "naks",
 *                   "timeouts", "cnps"},
 *     "paused_ns",
 *     "drops": {"injectors": [{"spec", "kind", "seed", "seen", "matched", "dropped",
 *                              "held", "modified"}],
 *               "fabric": {"buffer_full", "pfc_watchdog", "link_down", ...}},
 *     "fabric_links": {"baseline": {links.c's}, "faulted": {the same}} | null (the star),
 *     "critical_path": [{"rank", "op", "step", "conn", "dst", "bytes", "start_ns",
 *                        "done_ns", "late_ns"}]   (the faulted rep's, first to last;
 *                        late_ns: how much later than in the baseline rep),
 *     "timeline": {"baseline": {"rep", "jct_ns", "ops": [{"op", "rank", "dst", "step",
 *                                "start_ns", "done_ns"}]}, (times from the rep's start)
 *                  "faulted": {the same}},
 *     "retransmissions": {"bin_ns", "baseline": [per bin], "faulted": [per bin]},
 *     "lateness": {"p50_ns", "p99_ns", "max_ns"}
 *   }]
 * }
 */
#ifndef JCT_REPORT_H
#define JCT_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Write DIR/report.md, DIR/report.html and the plots (above), creating
 * DIR (and its parents) when missing and replacing earlier reports' files
 * of the same names (others, such as an earlier report's timeline-9.svg,
 * are left alone). gnuplot runs with DIR as its working directory and
 * reads its script from an unlinked temporary file: nothing else is left
 * anywhere. Returns 0, or JCT_EINVAL (not a result document, version 1),
 * JCT_EIO (DIR cannot be made or written; gnuplot missing, failed, or ran
 * for more than 60 s: err gives its first error line), JCT_ENOMEM. */
int jct__report_write(const json_t *result, const char *dir, char *err, size_t errlen);

/* A table per case on out: baseline and faulted JCT (median, p99, min,
 * max), degradation with its 95% interval, algbw and busbw, retransmitted
 * packets and bytes, NAKs, timeouts, CNPs, pause time, drops by injector
 * and fabric reason, the critical path, the per-QP table
 * (jct__report_qps_text), the loop's lateness and the verdict against the
 * budget. */
void jct__report_text(FILE *out, const json_t *result, bool all_qps);

/* The per-QP table, as perftest prints one result line per test: a row per
 * connection of a "qps" array (result.h's jct__qps_json), two (baseline,
 * faulted) when its entries have sides: bytes and messages per repetition,
 * bandwidth, completion p50 / p99 / max, retransmitted packets ("n/a", and
 * a line saying why, where the transport does not count them per QP).
 * Shown when there are at most JCT__PER_QP_AUTO_MAX connections, or all
 * when all is set (--per-qp); else one line saying how to see them.
 * Nothing for an empty or missing array. */
#define JCT__PER_QP_AUTO_MAX 16
void jct__report_qps_text(FILE *out, const json_t *qps, bool all);

/* A "fabric_links" object (result.h, jct__links_json) as the table every
 * command prints: a row per link (bytes, peak queue, paused, drops, marks,
 * its data flows as src->dst:udp-sport and the small ones counted), the
 * ECMP imbalance and a line per collision, each line led by indent.
 * Nothing when fl has no links. */
void jct__links_text(FILE *out, const json_t *fl, const char *indent);
/* A link's data flows as text ("1->2:49153, 3->4:50001 +2 small") in buf. */
char *jct__links_flows_text(const json_t *link, char *buf, size_t len);

#endif
