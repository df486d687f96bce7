/* The terminal's report (report.h): the run in two lines, then a table per
 * case, baseline against faulted, and the case's counters below it. Every
 * figure missing from the document (an invalid case has no faulted ones)
 * prints as "n/a". */
#include <stdio.h>
#include <string.h>

#include "harness/base/units.h"
#include "report.h"
#include "report_int.h"
#include "result.h"

#define COL 16

static void side_row(FILE *out, const json_t *c, const char *label, const char *key, bool ns) {
  char pb[64], pf[64], b[32], f[32];
  snprintf(pb, sizeof pb, "baseline.%s", key);
  snprintf(pf, sizeof pf, "faulted.%s", key);
  if (ns)
    fprintf(out, "  %-16s %*s %*s\n", label, COL, jct__rfmt_ns(c, pb, b, 32), COL,
            jct__rfmt_ns(c, pf, f, 32));
  else
    fprintf(out, "  %-16s %*s %*s\n", label, COL, jct__rfmt_real(c, pb, "%.4f", b, 32), COL,
            jct__rfmt_real(c, pf, "%.4f", f, 32));
}

static void drops(FILE *out, const json_t *c) {
  const json_t *inj = jct__rget(c, "drops.injectors"), *e;
  size_t i;
  const char *lead = "  drops            ";
  json_array_foreach(inj, i, e) {
    char s[7][32];
    const char *spec = jct__rstr(e, "spec"), *kind = jct__rstr(e, "kind");
    fprintf(out,
            "%s#%zu '%s' (%s, seed %s): %s seen, %s matched, %s dropped, %s held, %s modified, "
            "%s duplicated\n",
            lead, i + 1, spec ? spec : "?", kind ? kind : "?", jct__rfmt_count(e, "seed", s[0], 32),
            jct__rfmt_count(e, "seen", s[1], 32), jct__rfmt_count(e, "matched", s[2], 32),
            jct__rfmt_count(e, "dropped", s[3], 32), jct__rfmt_count(e, "held", s[4], 32),
            jct__rfmt_count(e, "modified", s[5], 32), jct__rfmt_count(e, "duplicated", s[6], 32));
    lead = "                   ";
    if (kind && strcmp(kind, "stall") == 0) /* the host stalls it asked for */
      fprintf(out, "%s  %s stalls of its senders' hosts, %.1f ms in all\n", lead,
              jct__rfmt_count(e, "stalls", s[0], 32),
              (double)json_integer_value(json_object_get(e, "stall_ns")) / 1e6);
    if (kind && strcmp(kind, "timeout") == 0) /* the timer go-backs it waited for */
      fprintf(out, "%s  %s requester timeouts (its ACKs dropped until the go-back)\n", lead,
              jct__rfmt_count(e, "timeouts", s[0], 32));
  }
  const json_t *fab = jct__rget(c, "drops.fabric"), *v;
  const char *k;
  if (!json_object_size(fab)) {
    if (!json_array_size(inj)) fprintf(out, "%sn/a\n", lead);
    return;
  }
  fprintf(out, "%sfabric:", lead);
  const char *sep = " ";
  json_object_foreach((json_t *)fab, k, v) {
    fprintf(out, "%s%s %.0f", sep, k, json_is_number(v) ? json_number_value(v) : 0.0);
    sep = ", ";
  }
  fprintf(out, "\n");
}

/* The RDMA devices' own counters (verbs): the faulted side's, then the
 * baseline's, for the counters that moved. */
static void device_counters(FILE *out, const json_t *c) {
  const json_t *f = jct__rget(c, "device_counters"), *b = jct__rget(c, "baseline_device_counters");
  if (!json_is_object(f)) return;
  fprintf(out, "  %-16s faulted / baseline, summed over ranks and repetitions:\n",
          "device counters");
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)f, k, v) {
    json_int_t bv = json_integer_value(json_object_get(b, k));
    if (json_integer_value(v) || bv)
      fprintf(out, "  %-16s   %-22s %10lld / %lld\n", "", k, (long long)json_integer_value(v),
              (long long)bv);
  }
}

static void critical_path(FILE *out, const json_t *c) {
  const json_t *path = jct__rget(c, "critical_path");
  size_t n = json_array_size(path);
  if (!n) {
    fprintf(out, "  critical path    n/a\n");
    return;
  }
  const json_t *last = json_array_get(path, n - 1), *worst = NULL, *e;
  double most = -1, v;
  size_t i;
  json_array_foreach(path, i, e) {
    if (jct__rnum(e, "added_ns", &v) && v > most) most = v, worst = e;
  }
  char s[5][32];
  fprintf(out, "  critical path    %zu ops, ending with op %s (rank %s -> %s, step %s), %s late\n",
          n, jct__rfmt_count(last, "op", s[0], 32), jct__rfmt_count(last, "rank", s[1], 32),
          jct__rfmt_count(last, "dst", s[2], 32), jct__rfmt_count(last, "step", s[3], 32),
          jct__rfmt_ns(last, "late_ns", s[4], 32));
  if (worst && most > 0)
    fprintf(out, "                   most delay added at op %s (rank %s -> %s, step %s): %s\n",
            jct__rfmt_count(worst, "op", s[0], 32), jct__rfmt_count(worst, "rank", s[1], 32),
            jct__rfmt_count(worst, "dst", s[2], 32), jct__rfmt_count(worst, "step", s[3], 32),
            jct__rfmt_ns(worst, "added_ns", s[4], 32));
}

/* A space, then s right-aligned in width terminal columns (UTF-8: "µs" is
 * two bytes, one column). */
static void cell(FILE *out, const char *s, int width) {
  int cols = 0;
  for (const char *p = s; *p; p++)
    cols += ((unsigned char)*p & 0xc0) != 0x80;
  fprintf(out, " %*s%s", width > cols ? width - cols : 0, "", s);
}

/* One side's figures of a QP entry (side: an object of it, or the entry). */
static bool qp_figures(FILE *out, const json_t *side) {
  char s[5][32];
  double bw;
  cell(out,
       jct__rnum(side, "bw_bps", &bw) && bw >= 0 ? jct__fmt_rate((uint64_t)bw, s[0], 32) : "n/a",
       13);
  cell(out, jct__rfmt_ns(side, "completion_p50_ns", s[1], 32), 10);
  cell(out, jct__rfmt_ns(side, "completion_p99_ns", s[2], 32), 10);
  cell(out, jct__rfmt_ns(side, "completion_max_ns", s[3], 32), 10);
  cell(out, jct__rfmt_count(side, "retransmitted_packets", s[4], 32), 7);
  fputc('\n', out);
  return jct__rget(side, "retransmitted_packets") == NULL;
}

void jct__report_qps_text(FILE *out, const json_t *qps, bool all) {
  size_t n = json_array_size(qps), i;
  if (!n) return;
  if (!all && n > JCT__PER_QP_AUTO_MAX) {
    fprintf(out, "  %-16s %zu connections, not shown (--per-qp shows them; --json has them)\n",
            "per QP", n);
    return;
  }
  const json_t *e, *first = json_array_get(qps, 0);
  bool sides = json_is_object(json_object_get(first, "faulted")), uncounted = false;
  fprintf(out, "  per QP (connection: QP pair; bytes and messages per repetition;\n"
               "          completion: post to received, over every repetition's messages)\n");
  fprintf(out, "  %5s %-11s %10s %5s%s %13s %10s %10s %10s %7s\n", "QP", "ranks", "bytes", "msgs",
          sides ? " side    " : "", "bandwidth", "compl. p50", "p99", "max", "retx");
  json_array_foreach(qps, i, e) {
    char s[4][32], ranks[40];
    snprintf(ranks, sizeof ranks, "%s -> %s", jct__rfmt_count(e, "src", s[0], 32),
             jct__rfmt_count(e, "dst", s[1], 32));
    fprintf(out, "  %5s %-11s", jct__rfmt_count(e, "conn", s[2], 32), ranks);
    cell(out, jct__rfmt_bytes(e, "bytes", s[3], 32), 10);
    cell(out, jct__rfmt_count(e, "messages", s[0], 32), 5);
    if (!sides) {
      uncounted |= qp_figures(out, e);
      continue;
    }
    fprintf(out, " %-8s", "baseline");
    uncounted |= qp_figures(out, json_object_get(e, "baseline"));
    fprintf(out, "  %5s %-11s %10s %5s %-8s", "", "", "", "", "faulted");
    uncounted |= qp_figures(out, json_object_get(e, "faulted"));
  }
  if (uncounted)
    fprintf(out, "  retx n/a: the transport counts retransmissions per device, not per QP\n");
}

/* A capture's replay: the capture beside the replay, and whether it was reproduced. */
static void fidelity(FILE *out, const json_t *c) {
  jct__fid_row_t rows[40];
  size_t n = jct__fidelity_rows(c, rows, sizeof rows / sizeof rows[0]);
  if (!n) return;
  const char *side = jct__rstr(c, "fidelity.side");
  fprintf(out, "  fidelity         %-24s %12s %12s %7s\n", "figure", "capture",
          side ? side : "replay", "ratio");
  for (size_t i = 0; i < n; i++)
    fprintf(out, "                   %-24s %12s %12s %7s  %s\n", rows[i].label, rows[i].captured,
            rows[i].replayed, rows[i].ratio, rows[i].note);
  char buf[700];
  fprintf(out, "                   %s\n", jct__rfmt_fidelity(c, buf, sizeof buf));
  for (size_t i = 0; jct__rfmt_fidelity_why(c, i, buf, sizeof buf); i++)
    fprintf(out, "                   %s\n", buf);
  for (size_t i = 0; jct__rfmt_fidelity_spread(c, i, buf, sizeof buf); i++)
    fprintf(out, "                   %s\n", buf);
}

/* The go-back-N model's prediction (include/jctlab/model.h), or what it
 * does not cover: nothing made up for other faults. */
static void model(FILE *out, const json_t *c) {
  const json_t *m = jct__rget(c, "model");
  double dg, w = 0, to = 0, losses = 0;
  char s[3][32];
  const json_t *inj = jct__rget(c, "inject");
  if (!json_is_object(m)) {
    if (json_array_size(inj))
      fprintf(out, "  %-16s none: the go-back-N model covers one Bernoulli `drop p=` on uroce\n",
              "model");
    return;
  }
  if (!jct__rnum(c, "model.degradation", &dg)) {
    fprintf(out, "  %-16s never ends: QP timeout 0 (no timer) and a loss only the timer recovers\n",
            "model");
    return;
  }
  jct__rnum(c, "model.W_pkts", &w);
  jct__rnum(c, "model.timeouts", &to);
  jct__rnum(c, "model.losses", &losses);
  fprintf(out, "  %-16s JCT %s, degradation %.3f (go-back-N: W %.1f packets of %s, timer %s; "
               "per repetition %.1f frames lost, %.1f timeouts",
          "model", jct__rfmt_ns(c, "model.jct_ns", s[0], 32), dg, w,
          jct__rfmt_ns(c, "model.packet_time_ns", s[1], 32),
          jct__rfmt_ns(c, "model.timer_ns", s[2], 32), losses, to);
  fprintf(out, ")\n");
}

static void one_case(FILE *out, const json_t *c, size_t index, bool all_qps) {
  char buf[400], bud[64], s[8][32];
  const char *name = jct__rstr(c, "name");
  fprintf(out, "\ncase %zu: %s\n", index + 1, name ? name : "?");
  fprintf(out, "  %-16s %s\n", "inject", jct__rfmt_inject(c, buf, sizeof buf));
  fprintf(out, "  %-16s %*s %*s\n", "", COL, "baseline", COL, "faulted");
  side_row(out, c, "JCT median", "median_jct_ns", true);
  side_row(out, c, "JCT p99", "p99_jct_ns", true);
  side_row(out, c, "JCT min", "min_jct_ns", true);
  side_row(out, c, "JCT max", "max_jct_ns", true);
  side_row(out, c, "algbw (GB/s)", "algbw_gbps", false);
  side_row(out, c, "busbw (GB/s)", "busbw_gbps", false);
  double v;
  if (jct__rnum(c, "projected.baseline_jct_ns", &v))
    fprintf(out, "  %-16s %*s %*s\n", "JCT projected", COL,
            jct__rfmt_ns(c, "projected.baseline_jct_ns", s[0], 32), COL,
            jct__rfmt_ns(c, "projected.faulted_jct_ns", s[1], 32));
  fprintf(out, "  %-16s %s (faulted / baseline median [95%% interval])\n", "degradation",
          jct__rfmt_degradation(c, buf, sizeof buf));
  model(out, c);
  fprintf(out, "  %-16s %s packets (%s), %s NAKs, %s timeouts, %s CNPs\n", "retransmitted",
          jct__rfmt_count(c, "transport.retransmitted_packets", s[0], 32),
          jct__rfmt_bytes(c, "transport.retransmitted_bytes", s[1], 32),
          jct__rfmt_count(c, "transport.naks", s[2], 32),
          jct__rfmt_count(c, "transport.timeouts", s[3], 32),
          jct__rfmt_count(c, "transport.cnps", s[4], 32));
  fprintf(out, "  %-16s %s\n", "paused (PFC)", jct__rfmt_ns(c, "paused_ns", s[0], 32));
  if (jct__rnum(c, "transport.nic_paused_ns", &v)) /* uroce: the ranks' NICs, by the switch */
    fprintf(out, "  %-16s %s baseline, %s faulted (summed over ranks)\n", "NICs paused",
            jct__rfmt_ns(c, "baseline_transport.nic_paused_ns", s[0], 32),
            jct__rfmt_ns(c, "transport.nic_paused_ns", s[1], 32));
  const char *cc = jct__rstr(c, "cc");
  if (cc && !strcmp(cc, "dcqcn") && jct__rnum(c, "cc_dilation", &v))
    fprintf(out, "  %-16s DCQCN (%s, parameters dilated x%.0f); CNPs %s baseline, %s faulted\n",
            "congestion", jct__rstr(c, "cc_profile") ? jct__rstr(c, "cc_profile") : "?", v,
            jct__rfmt_count(c, "baseline_transport.cnps", s[2], 32),
            jct__rfmt_count(c, "transport.cnps", s[3], 32));
  device_counters(out, c);
  drops(out, c);
  if (jct__rget(c, "fabric_links.faulted.links")) {
    fprintf(out, "  links, faulted repetitions:\n");
    jct__links_text(out, jct__rget(c, "fabric_links.faulted"), "    ");
    fprintf(out, "  links, baseline repetitions:\n");
    jct__links_text(out, jct__rget(c, "fabric_links.baseline"), "    ");
  }
  critical_path(out, c);
  jct__report_qps_text(out, jct__rget(c, "qps"), all_qps);
  fprintf(out, "  %-16s p50 %s, p99 %s, max %s\n", "loop lateness",
          jct__rfmt_ns(c, "lateness.p50_ns", s[0], 32),
          jct__rfmt_ns(c, "lateness.p99_ns", s[1], 32),
          jct__rfmt_ns(c, "lateness.max_ns", s[2], 32));
  double skipped;
  if (jct__rnum(c, "skipped_ns", &skipped) && skipped > 0)
    fprintf(out, "  %-16s %s of emulated time, nothing in flight and every rank waiting on a timer\n",
            "idle skipped", jct__rfmt_ns(c, "skipped_ns", s[0], 32));
  char dil[512];
  if (jct__rget(c, "dilation"))
    fprintf(out, "  %-16s %s\n", "time dilation", jct__dilation_text(c, dil, sizeof dil));
  fidelity(out, c);
  fprintf(out, "  %-16s %s (budget: %s)\n", "verdict", jct__rverdict(c),
          jct__rfmt_budget(c, bud, sizeof bud));
  const char *why = jct__rstr(c, "invalid_why");
  if (why) fprintf(out, "  %-16s %s\n", "invalid run", why);
}

void jct__report_text(FILE *out, const json_t *r, bool all_qps) {
  char buf[600], fab[300];
  double reps = 0, seed = 0;
  jct__rnum(r, "reps", &reps);
  jct__rnum(r, "seed", &seed);
  const char *cmd = jct__rstr(r, "command");
  fprintf(out, "jctlab %s: %s\n", cmd ? cmd : "result", jct__rfmt_input(r, buf, sizeof buf));
  fprintf(out, "fabric: %s; %.0f baseline and %.0f faulted repetitions per case, seed %.0f\n",
          jct__rfmt_fabric(r, fab, sizeof fab), reps, reps, seed);
  if (jct__rfmt_replay_profile(r, buf, sizeof buf))
    fprintf(out, "replay profile: %s\n", buf);
  size_t i;
  const json_t *c;
  json_array_foreach(jct__rget(r, "cases"), i, c) one_case(out, c, i, all_qps);
}
