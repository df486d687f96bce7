/* What report.md and report.html say, once (report_int.h): the run's
 * input and fabric; a summary table of every case; the plots over all
 * cases; then per case its figures baseline against faulted, its drops by
 * injector and by fabric reason, its critical path, its per-QP table and
 * its plots. The writers (report_md.c, report_html.c) only spell it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_int.h"
#include "result.h"
#include "harness/base/units.h"

#define PATH_ROWS_MAX 20 /* the critical path's last operations shown */
#define QP_ROWS_MAX 32   /* the QPs shown (the slowest, when there are more) */

typedef struct {
  const jct__doc_ops_t *ops;
  FILE *f;
  const char *dir;
  unsigned seq;
  char *err;
  size_t errlen;
} doc_t;

#define ROW(d, ...)                                                                                \
  do {                                                                                             \
    const char *const cells_[] = {__VA_ARGS__};                                                    \
    (d)->ops->table_row((d)->f, cells_, sizeof cells_ / sizeof cells_[0]);                         \
  } while (0)

static void header(doc_t *d, const json_t *r) {
  char buf[600], t[64];
  d->ops->heading(d->f, 1, "jctlab report");
  const char *cmd = jct__rstr(r, "command"), *ver = jct__rstr(r, "jctlab_version");
  double reps = 0, seed = 0, scale = 1, rate;
  jct__rnum(r, "reps", &reps);
  jct__rnum(r, "seed", &seed);
  jct__rnum(r, "scale.factor", &scale);
  snprintf(buf, sizeof buf,
           "jctlab %s %s: every case ran %.0f baseline and %.0f faulted repetitions, "
           "interleaved; seed %.0f.",
           ver ? ver : "", cmd ? cmd : "", reps, reps, seed);
  d->ops->para(d->f, buf);
  const char *h[] = {"", ""};
  d->ops->table_begin(d->f, h, 2);
  ROW(d, "input", jct__rfmt_input(r, buf, sizeof buf));
  char fab[300];
  ROW(d, "fabric", jct__rfmt_fabric(r, fab, sizeof fab));
  if (jct__rfmt_replay_profile(r, buf, sizeof buf)) ROW(d, "replay profile", buf);
  if (scale != 1) {
    char sc[200];
    if (jct__rnum(r, "scale.captured_rate_bps", &rate) && rate >= 1)
      snprintf(sc, sizeof sc, "sizes x %.4g; JCTs projected to the captured %s", scale,
               jct__fmt_rate((uint64_t)rate, t, sizeof t));
    else
      snprintf(sc, sizeof sc, "sizes x %.4g (no captured rate: no projection)", scale);
    ROW(d, "scale", sc);
  }
  d->ops->table_end(d->f);
}

static void summary(doc_t *d, const json_t *cases) {
  const char *h[] = {"case",
                     "inject",
                     "verdict",
                     "budget",
                     "baseline median",
                     "faulted median",
                     "degradation [95% CI]",
                     "retransmitted",
                     "NAKs",
                     "timeouts",
                     "paused"};
  d->ops->heading(d->f, 2, "Summary");
  d->ops->table_begin(d->f, h, sizeof h / sizeof h[0]);
  size_t i;
  const json_t *c;
  json_array_foreach(cases, i, c) {
    char inj[400], bud[64], b[32], f[32], deg[64], rx[32], nak[32], to[32], pz[32];
    const char *name = jct__rstr(c, "name");
    ROW(d, name ? name : "?", jct__rfmt_inject(c, inj, sizeof inj), jct__rverdict(c),
        jct__rfmt_budget(c, bud, sizeof bud), jct__rfmt_ns(c, "baseline.median_jct_ns", b, 32),
        jct__rfmt_ns(c, "faulted.median_jct_ns", f, 32), jct__rfmt_degradation(c, deg, sizeof deg),
        jct__rfmt_count(c, "transport.retransmitted_packets", rx, 32),
        jct__rfmt_count(c, "transport.naks", nak, 32),
        jct__rfmt_count(c, "transport.timeouts", to, 32), jct__rfmt_ns(c, "paused_ns", pz, 32));
  }
  d->ops->table_end(d->f);
}

static int figures(doc_t *d, const jct__plots_t *p, long case_index) {
  for (size_t i = 0; i < p->n; i++) {
    if (p->v[i].case_index != case_index) continue;
    int rc = d->ops->figure(d->f, &p->v[i], d->dir, d->seq++, d->err, d->errlen);
    if (rc) return rc;
    if (p->v[i].note[0]) d->ops->para(d->f, p->v[i].note);
  }
  return 0;
}

static void figures_table(doc_t *d, const json_t *c) {
  static const struct {
    const char *label, *key, *kind;
  } rows[] = {
      {"JCT median", "median_jct_ns", "ns"}, {"JCT p99", "p99_jct_ns", "ns"},
      {"JCT min", "min_jct_ns", "ns"},       {"JCT max", "max_jct_ns", "ns"},
      {"algbw (GB/s)", "algbw_gbps", "r"},   {"busbw (GB/s)", "busbw_gbps", "r"},
  };
  const char *h[] = {"", "baseline", "faulted"};
  d->ops->table_begin(d->f, h, 3);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char pb[64], pf[64], b[32], f[32];
    snprintf(pb, sizeof pb, "baseline.%s", rows[i].key);
    snprintf(pf, sizeof pf, "faulted.%s", rows[i].key);
    if (rows[i].kind[0] == 'n')
      ROW(d, rows[i].label, jct__rfmt_ns(c, pb, b, 32), jct__rfmt_ns(c, pf, f, 32));
    else
      ROW(d, rows[i].label, jct__rfmt_real(c, pb, "%.4f", b, 32),
          jct__rfmt_real(c, pf, "%.4f", f, 32));
  }
  double pb, pf;
  if (jct__rnum(c, "projected.baseline_jct_ns", &pb) &&
      jct__rnum(c, "projected.faulted_jct_ns", &pf)) {
    char b[32], f[32];
    ROW(d, "JCT median, projected", jct__rfmt_ns(c, "projected.baseline_jct_ns", b, 32),
        jct__rfmt_ns(c, "projected.faulted_jct_ns", f, 32));
  }
  d->ops->table_end(d->f);
}

static void counters_table(doc_t *d, const json_t *c) {
  char a[32], b[32], x[32], y[32], z[32], w[32], v[32], l1[32], l2[32], l3[32];
  const char *h[] = {"faulted repetitions", ""};
  d->ops->table_begin(d->f, h, 2);
  char rx[96];
  snprintf(rx, sizeof rx, "%s packets (%s)",
           jct__rfmt_count(c, "transport.retransmitted_packets", a, 32),
           jct__rfmt_bytes(c, "transport.retransmitted_bytes", b, 32));
  ROW(d, "retransmitted", rx);
  ROW(d, "NAKs", jct__rfmt_count(c, "transport.naks", x, 32));
  ROW(d, "timeouts", jct__rfmt_count(c, "transport.timeouts", y, 32));
  ROW(d, "CNPs", jct__rfmt_count(c, "transport.cnps", z, 32));
  ROW(d, "paused (PFC)", jct__rfmt_ns(c, "paused_ns", w, 32));
  /* verbs: the RDMA devices' own counters that moved (faulted / baseline). */
  const json_t *dev = jct__rget(c, "device_counters"),
               *bdev = jct__rget(c, "baseline_device_counters");
  const char *k;
  const json_t *val;
  json_object_foreach((json_t *)dev, k, val) {
    json_int_t fv = json_integer_value(val), bv = json_integer_value(json_object_get(bdev, k));
    if (!fv && !bv) continue;
    char label[64], cell[64];
    snprintf(label, sizeof label, "device: %s", k);
    snprintf(cell, sizeof cell, "%lld (baseline %lld)", (long long)fv, (long long)bv);
    ROW(d, label, cell);
  }
  char lat[128];
  snprintf(lat, sizeof lat, "p50 %s, p99 %s, max %s", jct__rfmt_ns(c, "lateness.p50_ns", l1, 32),
           jct__rfmt_ns(c, "lateness.p99_ns", l2, 32), jct__rfmt_ns(c, "lateness.max_ns", l3, 32));
  ROW(d, "event loop lateness", lat);
  char dil[512];
  if (jct__rget(c, "dilation")) ROW(d, "time dilation", jct__dilation_text(c, dil, sizeof dil));
  const json_t *fab = jct__rget(c, "drops.fabric");
  json_object_foreach((json_t *)fab, k, val) {
    char label[96];
    snprintf(label, sizeof label, "fabric drops: %s", k);
    snprintf(v, sizeof v, "%.0f", json_is_number(val) ? json_number_value(val) : 0.0);
    ROW(d, label, v);
  }
  d->ops->table_end(d->f);
}

static void injectors_table(doc_t *d, const json_t *c) {
  const json_t *inj = jct__rget(c, "drops.injectors"), *e;
  if (!json_array_size(inj)) return;
  const char *h[] = {"injector", "kind", "seed",     "seen",      "matched",
                     "dropped",  "held", "modified", "duplicated"};
  d->ops->table_begin(d->f, h, sizeof h / sizeof h[0]);
  size_t i;
  json_array_foreach(inj, i, e) {
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32];
    const char *spec = jct__rstr(e, "spec"), *kind = jct__rstr(e, "kind");
    ROW(d, spec ? spec : "?", kind ? kind : "?", jct__rfmt_count(e, "seed", s1, 32),
        jct__rfmt_count(e, "seen", s2, 32), jct__rfmt_count(e, "matched", s3, 32),
        jct__rfmt_count(e, "dropped", s4, 32), jct__rfmt_count(e, "held", s5, 32),
        jct__rfmt_count(e, "modified", s6, 32), jct__rfmt_count(e, "duplicated", s7, 32));
  }
  d->ops->table_end(d->f);
}

static void path_table(doc_t *d, const json_t *c) {
  const json_t *path = jct__rget(c, "critical_path"), *e;
  size_t n = json_array_size(path), i;
  if (!n) return;
  char buf[200];
  snprintf(buf, sizeof buf,
           "Critical path of the faulted repetition: %zu operations%s; late = how much later "
           "each completed than in the baseline repetition.",
           n, n > PATH_ROWS_MAX ? ", the last 20 shown" : "");
  d->ops->para(d->f, buf);
  const char *h[] = {"op", "step", "rank", "to", "bytes", "start", "done", "late"};
  d->ops->table_begin(d->f, h, sizeof h / sizeof h[0]);
  json_array_foreach(path, i, e) {
    if (i + PATH_ROWS_MAX < n) continue;
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32], s8[32];
    ROW(d, jct__rfmt_count(e, "op", s1, 32), jct__rfmt_count(e, "step", s2, 32),
        jct__rfmt_count(e, "rank", s3, 32), jct__rfmt_count(e, "dst", s4, 32),
        jct__rfmt_bytes(e, "bytes", s5, 32), jct__rfmt_ns(e, "start_ns", s6, 32),
        jct__rfmt_ns(e, "done_ns", s7, 32), jct__rfmt_ns(e, "late_ns", s8, 32));
  }
  d->ops->table_end(d->f);
}

/* A leaf-spine fabric's links, the faulted side's (the same figures as the
 * terminal's table, report.h), and each side's ECMP imbalance and
 * collisions. */
static void links_table(doc_t *d, const json_t *c) {
  const json_t *fl = jct__rget(c, "fabric_links"), *l;
  const json_t *links = jct__rget(fl, "faulted.links");
  if (!json_array_size(links)) return;
  char buf[900], coll[2][300];
  const char *side[2] = {"baseline", "faulted"};
  for (int k = 0; k < 2; k++) {
    char key[32];
    snprintf(key, sizeof key, "%s.collisions", side[k]);
    size_t used = 0, i;
    coll[k][0] = 0;
    json_array_foreach(jct__rget(fl, key), i, l) {
      int w = snprintf(coll[k] + used, sizeof coll[k] - used, "%s%s", i ? ", " : "",
                       json_string_value(l) ? json_string_value(l) : "?");
      if (w < 0 || (size_t)w >= sizeof coll[k] - used) break;
      used += (size_t)w;
    }
  }
  char im[2][32];
  jct__rfmt_real(fl, "baseline.ecmp_imbalance", "%.2f", im[0], 32);
  jct__rfmt_real(fl, "faulted.ecmp_imbalance", "%.2f", im[1], 32);
  snprintf(buf, sizeof buf,
           "Links between switches, faulted repetitions. ECMP uplink load max/mean: baseline %s, "
           "faulted %s (1.00: even). Collisions (an uplink with two data flows or more while "
           "another of its leaf had none): baseline %s; faulted %s.",
           im[0], im[1], coll[0][0] ? coll[0] : "none", coll[1][0] ? coll[1] : "none");
  d->ops->para(d->f, buf);
  const char *h[] = {"link", "bytes", "peak queue", "paused", "drops", "marks", "data flows"};
  d->ops->table_begin(d->f, h, sizeof h / sizeof h[0]);
  size_t i;
  json_array_foreach(links, i, l) {
    char s1[32], s2[32], s3[32], s4[32], s5[32], flows[1024];
    const char *name = jct__rstr(l, "link");
    ROW(d, name ? name : "?", jct__rfmt_bytes(l, "bytes", s1, 32),
        jct__rfmt_bytes(l, "peak_queue_bytes", s2, 32), jct__rfmt_ns(l, "paused_ns", s3, 32),
        jct__rfmt_count(l, "drops", s4, 32), jct__rfmt_count(l, "ecn_marked", s5, 32),
        jct__links_flows_text(l, flows, sizeof flows));
  }
  d->ops->table_end(d->f);
}

/* A QP's faulted completion p99 (or its only side's), for ranking. */
static double qp_p99(const json_t *e) {
  double v;
  if (jct__rnum(e, "faulted.completion_p99_ns", &v) || jct__rnum(e, "completion_p99_ns", &v))
    return v;
  return -1;
}

static int by_p99_desc(const void *x, const void *y) {
  double a = qp_p99(*(const json_t *const *)x), b = qp_p99(*(const json_t *const *)y);
  return (a < b) - (a > b);
}

/* One row of a QP's figures: the connection's cells on its first side's
 * row only. */
static void qp_row(doc_t *d, const json_t *e, const json_t *side, const char *label, bool first) {
  char conn[32], ranks[80], a[32], b[32], bytes[32], msgs[32], bw[32], p50[32], p99[32], mx[32],
      rx[32];
  double v;
  snprintf(ranks, sizeof ranks, "%s -> %s", jct__rfmt_count(e, "src", a, 32),
           jct__rfmt_count(e, "dst", b, 32));
  if (!jct__rnum(side, "bw_bps", &v) || v < 0)
    snprintf(bw, sizeof bw, "n/a");
  else
    jct__fmt_rate((uint64_t)v, bw, sizeof bw);
  ROW(d, first ? jct__rfmt_count(e, "conn", conn, 32) : "", first ? ranks : "",
      first ? jct__rfmt_bytes(e, "bytes", bytes, 32) : "",
      first ? jct__rfmt_count(e, "messages", msgs, 32) : "", label, bw,
      jct__rfmt_ns(side, "completion_p50_ns", p50, 32),
      jct__rfmt_ns(side, "completion_p99_ns", p99, 32),
      jct__rfmt_ns(side, "completion_max_ns", mx, 32),
      jct__rfmt_count(side, "retransmitted_packets", rx, 32));
}

/* Per QP, as perftest reports per test: every connection up to
 * QP_ROWS_MAX, else the QP_ROWS_MAX slowest (faulted completion p99). */
static void qps_table(doc_t *d, const json_t *c) {
  const json_t *qps = jct__rget(c, "qps");
  size_t n = json_array_size(qps), shown = n < QP_ROWS_MAX ? n : QP_ROWS_MAX, i;
  if (!n) return;
  const json_t **v = malloc(n * sizeof *v);
  if (!v) return;
  for (i = 0; i < n; i++)
    v[i] = json_array_get(qps, i);
  if (n > QP_ROWS_MAX) qsort(v, n, sizeof *v, by_p99_desc);
  char buf[400];
  char some[96] = "";
  if (n > QP_ROWS_MAX)
    snprintf(some, sizeof some, ", the %d of %zu with the longest faulted p99 (the JSON has all)",
             QP_ROWS_MAX, n);
  snprintf(buf, sizeof buf,
           "Per QP (a connection of the schedule, one RC QP pair)%s: bytes and messages per "
           "repetition; bandwidth from each QP's first post to its last completion, as "
           "perftest's BW average; completion = post to received whole, over every "
           "repetition's messages; retransmitted packets summed over the repetitions.",
           some);
  d->ops->para(d->f, buf);
  const char *h[] = {"QP",        "ranks",          "bytes", "messages", "side",
                     "bandwidth", "completion p50", "p99",   "max",      "retransmitted"};
  d->ops->table_begin(d->f, h, sizeof h / sizeof h[0]);
  bool uncounted = false;
  for (i = 0; i < shown; i++) {
    const json_t *b = jct__rget(v[i], "baseline"), *f = jct__rget(v[i], "faulted");
    if (!f) { /* one side: a run's */
      qp_row(d, v[i], v[i], "", true);
      uncounted |= !jct__rget(v[i], "retransmitted_packets");
      continue;
    }
    qp_row(d, v[i], b, "baseline", true);
    qp_row(d, v[i], f, "faulted", false);
    uncounted |= !jct__rget(f, "retransmitted_packets");
  }
  d->ops->table_end(d->f);
  if (uncounted)
    d->ops->para(d->f, "Retransmitted n/a: the transport counts retransmissions per device, "
                       "not per QP.");
  free(v);
}

/* A capture's replay: the capture beside the replay, and the verdict on it. */
static void fidelity_table(doc_t *d, const json_t *c) {
  jct__fid_row_t rows[64];
  size_t n = jct__fidelity_rows(c, rows, sizeof rows / sizeof rows[0]);
  if (!n) return;
  const char *side = jct__rstr(c, "fidelity.side");
  char rep[32], buf[700];
  snprintf(rep, sizeof rep, "replay (%s)", side ? side : "");
  const char *h[] = {"fidelity", "capture", rep, "ratio", ""};
  d->ops->table_begin(d->f, h, 5);
  for (size_t i = 0; i < n; i++)
    ROW(d, rows[i].label, rows[i].captured, rows[i].replayed, rows[i].ratio, rows[i].note);
  d->ops->table_end(d->f);
  d->ops->para(d->f, jct__rfmt_fidelity(c, buf, sizeof buf));
  for (size_t i = 0; jct__rfmt_fidelity_why(c, i, buf, sizeof buf); i++)
    d->ops->para(d->f, buf);
  for (size_t i = 0; jct__rfmt_fidelity_spread(c, i, buf, sizeof buf); i++)
    d->ops->para(d->f, buf);
}

static int one_case(doc_t *d, const json_t *c, long index, const jct__plots_t *p) {
  char buf[700], inj[400], bud[64], deg[64];
  const char *name = jct__rstr(c, "name");
  snprintf(buf, sizeof buf, "Case %ld: %s", index + 1, name ? name : "?");
  d->ops->heading(d->f, 2, buf);
  snprintf(buf, sizeof buf, "Inject: %s. Verdict: %s (budget: %s). Degradation %s.",
           jct__rfmt_inject(c, inj, sizeof inj), jct__rverdict(c),
           jct__rfmt_budget(c, bud, sizeof bud), jct__rfmt_degradation(c, deg, sizeof deg));
  d->ops->para(d->f, buf);
  const char *why = jct__rstr(c, "invalid_why");
  if (why) {
    snprintf(buf, sizeof buf, "Invalid run, not a result: %.600s", why);
    d->ops->para(d->f, buf);
  }
  figures_table(d, c);
  fidelity_table(d, c);
  counters_table(d, c);
  injectors_table(d, c);
  links_table(d, c);
  path_table(d, c);
  qps_table(d, c);
  return figures(d, p, index);
}

int jct__report_doc(const jct__doc_ops_t *ops, FILE *f, const json_t *r, const jct__plots_t *p,
                    const char *dir, char *err, size_t errlen) {
  doc_t d = {ops, f, dir, 0, err, errlen};
  const json_t *cases = jct__rget(r, "cases"), *c;
  ops->begin(f, "jctlab report");
  header(&d, r);
  summary(&d, cases);
  int rc = figures(&d, p, -1);
  size_t i;
  json_array_foreach(cases, i, c) {
    if (rc) break;
    rc = one_case(&d, c, (long)i, p);
  }
  ops->end(f);
  return rc;
}
