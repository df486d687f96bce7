/* A postmortem's fidelity (fidelity.h). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity.h"

/* The median (lower middle) of n values, sorted in place. */
static uint64_t median_u64(uint64_t *v, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) /* insertion sort: a few repetitions */
    for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      uint64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n ? v[(n - 1) / 2] : 0;
}

/* The median of a side's per-repetition counter. */
static uint64_t rep_median(const jct_rep_t *reps, uint32_t n, size_t off) {
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return 0;
  for (uint32_t i = 0; i < n; i++)
    memcpy(&v[i], (const char *)&reps[i].transport + off, sizeof v[i]);
  uint64_t m = median_u64(v, n);
  free(v);
  return m;
}

static json_t *ratio(double captured, double replayed, bool have) {
  return have && captured > 0 ? json_real(replayed / captured) : json_null();
}

/* One figure; returns whether it is within the tolerance. */
static bool figure(json_t *figs, json_t *diverged, const char *key, uint64_t captured,
                   bool have_replayed, uint64_t replayed, bool decides, double t) {
  bool within = have_replayed && fabs((double)replayed - (double)captured) <= t * (double)captured;
  json_t *o = json_pack("{s:I, s:o, s:o, s:b, s:o}", "captured", (json_int_t)captured, "replayed",
                        have_replayed ? json_integer((json_int_t)replayed) : json_null(), "ratio",
                        ratio((double)captured, (double)replayed, have_replayed), "decides",
                        decides, "within", have_replayed ? json_boolean(within) : json_null());
  json_object_set_new(figs, key, o);
  if (decides && !within) json_array_append_new(diverged, json_string(key));
  return within;
}

json_t *jct__fidelity_json(const jct__capture_figures_t *cap, double tolerance,
                           const jct_run_opts_t *o, const jct_replay_result_t *r, bool lossless,
                           bool *reproduced) {
  *reproduced = false;
  if (!r->valid) return json_null();
  const jct_replay_side_t *side = lossless ? &r->b : &r->f;
  const jct_rep_t *reps = lossless ? r->baseline : r->faulted;
  const jct_transport_stats_t *t = &side->transport;
  json_t *figs = json_object(), *diverged = json_array(), *conns = json_array();
  bool ok = figure(figs, diverged, "job_ns", cap->job_ns, true, side->median_ns, true, tolerance);
#define REP_MEDIAN(field) rep_median(reps, r->reps, offsetof(jct_transport_stats_t, field))
  ok &= figure(figs, diverged, "retransmitted_packets", cap->retx_packets,
               t->counted & JCT_TSTAT_RETX_PACKETS, REP_MEDIAN(retx_packets), true, tolerance);
  figure(figs, diverged, "naks", cap->naks, t->counted & JCT_TSTAT_NAKS, REP_MEDIAN(naks), false,
         tolerance);
  /* As the capture's inspector counts them: a go-back with no NAK before
   * it (a timer's back to the PSN of a NAK the requester ignored is, on
   * the wire, that NAK's go-back). */
  uint64_t *wire_to = malloc((r->reps ? r->reps : 1) * sizeof *wire_to);
  for (uint32_t i = 0; wire_to && i < r->reps; i++)
    wire_to[i] = reps[i].transport.timeouts - reps[i].transport.timeouts_after_nak;
  figure(figs, diverged, "timeouts", cap->timeouts, wire_to && (t->counted & JCT_TSTAT_TIMEOUTS),
         wire_to ? median_u64(wire_to, r->reps) : 0, false, tolerance);
  free(wire_to);
#undef REP_MEDIAN
  /* Both timed alike: hole to retransmission, on the capture's wire and on
   * the frames the replay's switch sent (replay.h). */
  bool have_cap = cap->loss_recovery_ns > 0, have_rep = side->losses_recovered > 0;
  json_object_set_new(
      figs, "loss_recovery_ns",
      json_pack("{s:o, s:o, s:o, s:b, s:o}", "captured",
                have_cap ? json_integer((json_int_t)cap->loss_recovery_ns) : json_null(),
                "replayed", have_rep ? json_integer((json_int_t)side->loss_recovery_ns) : json_null(),
                "ratio", ratio((double)cap->loss_recovery_ns, (double)side->loss_recovery_ns,
                               have_cap && have_rep),
                "decides", false, "within",
                have_cap && have_rep
                    ? json_boolean(fabs((double)side->loss_recovery_ns -
                                        (double)cap->loss_recovery_ns) <=
                                   tolerance * (double)cap->loss_recovery_ns)
                    : json_null()));
  const jct_schedule_t *s = o->schedule;
  for (uint32_t c = 0; c < s->nconns && c < cap->nconns; c++) {
    const jct_qp_figures_t *q = side->qps ? &side->qps[c] : NULL;
    bool have = q && q->reps && q->bw_bps > 0;
    double replayed = have ? 8.0 * (double)q->bytes / q->bw_bps * 1e9 : 0;
    json_array_append_new(
        conns,
        json_pack("{s:i, s:o, s:o, s:o}", "conn", (int)c, "captured_ns",
                  cap->conn_ns[c] ? json_integer((json_int_t)cap->conn_ns[c]) : json_null(),
                  "replayed_ns", have ? json_integer((json_int_t)llround(replayed)) : json_null(),
                  "ratio", ratio((double)cap->conn_ns[c], replayed, have)));
  }
  *reproduced = ok;
  return json_pack("{s:s, s:f, s:b, s:o, s:o, s:o}", "side", lossless ? "baseline" : "faulted",
                   "tolerance", tolerance, "reproduced", ok, "diverged", diverged, "figures", figs,
                   "connections", conns);
}

void jct__capture_figures_free(jct__capture_figures_t *c) {
  free(c->conn_ns);
  memset(c, 0, sizeof *c);
}
