/* A capture's replay in words (report_int.h): its fidelity rows and
 * verdict, and where its fabric's figures came from, for the terminal's
 * report and report.md/.html alike. */
#include <stdio.h>
#include <string.h>

#include "harness/base/units.h"
#include "jctlab/profile.h"
#include "report_int.h"
#include "spread_text.h"

static const struct {
  const char *key, *label;
  bool ns;
} figs[] = {
    {"job_ns", "job time", true},
    {"retransmitted_packets", "retransmitted packets", false},
    {"naks", "NAKs", false},
    {"timeouts", "timeouts", false},
    {"loss_recovery_ns", "loss recovery (median)", true},
    {"go_back_psns", "go-back depth (median PSNs)", false},
};

static void cell(const json_t *o, const char *key, bool ns, char *buf, size_t len) {
  if (ns)
    jct__rfmt_ns(o, key, buf, len);
  else
    jct__rfmt_count(o, key, buf, len);
}

static void ratio(const json_t *o, const char *key, char *buf, size_t len) {
  double r;
  if (jct__rnum(o, key, &r))
    snprintf(buf, len, "%.2f", r);
  else
    snprintf(buf, len, "n/a");
}

size_t jct__fidelity_rows(const json_t *c, jct__fid_row_t *rows, size_t max) {
  const json_t *fid = jct__rget(c, "fidelity");
  if (!fid) return 0;
  size_t n = 0;
  for (size_t i = 0; i < sizeof figs / sizeof figs[0] && n < max; i++) {
    const json_t *f = jct__rget(fid, "figures");
    f = f ? json_object_get(f, figs[i].key) : NULL;
    if (!f) continue;
    jct__fid_row_t *r = &rows[n++];
    snprintf(r->label, sizeof r->label, "%s", figs[i].label);
    cell(f, "captured", figs[i].ns, r->captured, sizeof r->captured);
    cell(f, "replayed", figs[i].ns, r->replayed, sizeof r->replayed);
    ratio(f, "ratio", r->ratio, sizeof r->ratio);
    const json_t *w = json_object_get(f, "within");
    bool decides = json_is_true(json_object_get(f, "decides"));
    snprintf(r->note, sizeof r->note, "%s%s",
             json_is_boolean(w) ? (json_is_true(w) ? "within" : "OUTSIDE") : "",
             decides ? " (decides)" : "");
  }
  size_t i;
  const json_t *e;
  json_array_foreach(jct__rget(fid, "connections"), i, e) {
    if (n == max) break;
    jct__fid_row_t *r = &rows[n++];
    double conn = 0;
    jct__rnum(e, "conn", &conn);
    snprintf(r->label, sizeof r->label, "connection %.0f time", conn);
    cell(e, "captured_ns", true, r->captured, sizeof r->captured);
    cell(e, "replayed_ns", true, r->replayed, sizeof r->replayed);
    ratio(e, "ratio", r->ratio, sizeof r->ratio);
    r->note[0] = 0;
  }
  return n;
}

char *jct__rfmt_fidelity(const json_t *c, char *buf, size_t len) {
  const json_t *fid = jct__rget(c, "fidelity");
  double t = 0;
  if (!fid || !jct__rnum(fid, "tolerance", &t)) {
    snprintf(buf, len, "n/a (no figures: an invalid run)");
    return buf;
  }
  const char *side = jct__rstr(fid, "side");
  if (json_is_true(json_object_get(fid, "reproduced"))) {
    snprintf(buf, len,
             "reproduced: the %s replay's job time and retransmitted packets are within "
             "±%.0f%% of the capture's; the baseline is its counterfactual",
             side ? side : "", t * 100);
    return buf;
  }
  size_t off = (size_t)snprintf(buf, len, "NOT reproduced (outside ±%.0f%%:", t * 100);
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(fid, "diverged"), i, e) {
    if (off < len)
      off += (size_t)snprintf(buf + off, len - off, "%s %s", i ? "," : "", json_string_value(e));
  }
  if (off < len)
    snprintf(buf + off, len - off, "): the baseline is not a counterfactual of the capture");
  return buf;
}

char *jct__rfmt_fidelity_why(const json_t *c, size_t i, char *buf, size_t len) {
  const json_t *e = json_array_get(jct__rget(c, "fidelity.why"), i);
  const char *fig = jct__rstr(e, "figure"), *why = jct__rstr(e, "reason");
  if (!fig || !why) return NULL;
  snprintf(buf, len, "why %s: %s", fig, why);
  return buf;
}

char *jct__rfmt_fidelity_spread(const json_t *c, size_t i, char *buf, size_t len) {
  static const struct {
    const char *key, *label;
    bool ns;
  } spreads[] = {{"loss_recovery_ns", "loss recovery", true},
                 {"go_back_psns", "go-back depth", false}};
  static const char *const sides[] = {"captured_spread", "replayed_spread"};
  const char *side_name = jct__rstr(c, "fidelity.side");
  size_t seen = 0;
  for (size_t f = 0; f < sizeof spreads / sizeof spreads[0]; f++) {
    const json_t *fig = json_object_get(jct__rget(c, "fidelity.figures"), spreads[f].key);
    if (!json_is_false(json_object_get(fig, "within"))) continue;
    for (size_t s = 0; s < 2; s++) {
      const json_t *bins = json_object_get(fig, sides[s]);
      if (!json_array_size(bins) || seen++ != i) continue;
      uint64_t spread[JCT_FIGURE_BINS] = {0};
      size_t k;
      const json_t *b;
      json_array_foreach(bins, k, b) {
        double from = 0, n = 0;
        if (jct__rnum(b, "from", &from) && jct__rnum(b, "n", &n) && from >= 0 && n >= 0)
          spread[jct_figure_bin((uint64_t)from)] += (uint64_t)n;
      }
      char text[600];
      jct__fmt_spread(spread, spreads[f].ns, text, sizeof text, NULL);
      snprintf(buf, len, "spread of %s, %s: %s", spreads[f].label,
               s ? (side_name ? side_name : "replay") : "capture", text);
      return buf;
    }
  }
  return NULL;
}

char *jct__rfmt_replay_profile(const json_t *r, char *buf, size_t len) {
  const json_t *p = jct__rget(r, "replay_profile");
  if (!p) return NULL;
  static const struct {
    const char *key, *label;
    int unit; /* 0 count, 1 rate, 2 time */
  } keys[] = {{"rate_bps", "rate", 1},
              {"prop_delay_ns", "link delay", 2},
              {"path_mtu_bytes", "path MTU", 0},
              {"nic_queue_pkts", "NIC queue", 0},
              {"nak_delay_ns", "NAK delay", 2},
              {"nak_react_ns", "NAK reaction", 2},
              {"go_backs", "captured go-backs", 0},
              {"stalls", "captured stalls", 0},
              {"cts_slots", "clear-to-send buffers", 0},
              {"timeout", "timeout exponent", 0},
              {"retry_cnt", "retry count", 0},
              {"tdf", "time dilation x", 0}};
  size_t off = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0] && off < len; i++) {
    const json_t *f = json_object_get(p, keys[i].key);
    double v;
    if (!f || !jct__rnum(f, "value", &v)) continue;
    char val[32];
    if (keys[i].unit == 1)
      jct__fmt_rate((uint64_t)v, val, sizeof val);
    else if (keys[i].unit == 2)
      jct__fmt_ns((uint64_t)v, val, sizeof val);
    else
      snprintf(val, sizeof val, "%.0f", v);
    const char *src = jct__rstr(f, "source");
    off += (size_t)snprintf(buf + off, len - off, "%s%s %s (%s)", off ? ", " : "", keys[i].label,
                            val, src ? src : "?");
  }
  return buf;
}
