/* A postmortem's fidelity (fidelity.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity.h"
#include "schedule/profile_json.h"

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

static const json_t *jget_replayed(const json_t *figs, const char *key) {
  return json_object_get(json_object_get(figs, key), "replayed");
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

/* Append {"figure": key, "reason": text} to why. */
static void reason(json_t *why, const char *key, const char *text) {
  json_array_append_new(why, json_pack("{s:s, s:s}", "figure", key, "reason", text));
}

/* Whether figure key of figs is outside the tolerance (replayed and not within). */
static bool outside(const json_t *figs, const char *key) {
  const json_t *w = json_object_get(json_object_get(figs, key), "within");
  return json_is_false(w);
}

/* A figure measured alike on both wires, which does not decide, with how
 * each side's samples spread (profile.h's bins: a median hides groups):
 * null, and [], where a side has none. */
static void wire_figure(json_t *figs, const char *key, bool have_cap, uint64_t captured,
                        const uint64_t *cap_spread, bool have_rep, uint64_t replayed,
                        const uint64_t *rep_spread, double tolerance) {
  static const uint64_t none[JCT_FIGURE_BINS];
  json_object_set_new(
      figs, key,
      json_pack("{s:o, s:o, s:o, s:b, s:o, s:o*, s:o*}", "captured",
                have_cap ? json_integer((json_int_t)captured) : json_null(), "replayed",
                have_rep ? json_integer((json_int_t)replayed) : json_null(), "ratio",
                ratio((double)captured, (double)replayed, have_cap && have_rep), "decides", false,
                "within",
                have_cap && have_rep ? json_boolean(fabs((double)replayed - (double)captured) <=
                                                    tolerance * (double)captured)
                                     : json_null(),
                "captured_spread", jct__spread_json(have_cap ? cap_spread : none),
                "replayed_spread", jct__spread_json(have_rep ? rep_spread : none)));
}

/* What the replay's rxe did of the capture's timer go-backs, from the run's
 * own timeouts: unknown (not counted), or so many a repetition, made at
 * the capture's packets (timeout injectors, dropping the ACKs until rxe's
 * timer runs out), or by itself, or (stalls held) as a stopped VM's peer
 * times out waiting for its ACKs. */
static const char *rxe_timer(char *t, size_t n, const json_t *figs, const jct_run_opts_t *o) {
  const json_t *r = jget_replayed(figs, "timeouts");
  /* The capture's timeout specs, which the replay added (run.h), not a
   * timeout injector given by hand. */
  const char *how = o->capture_timeouts ? ", made at the capture's packets (its ACKs dropped "
                                          "until the timer ran out), and a stopped VM's peer's "
                                          "by itself"
                    : o->nstalls        ? ", a stopped VM's peer by itself"
                                        : ", by itself, none on demand";
  if (!json_is_integer(r))
    snprintf(t, n, "rxe's own timer, not repeated on demand");
  else
    snprintf(t, n, "rxe timed out %lld times a repetition here%s", (long long)json_integer_value(r),
             how);
  return t;
}

/* On verbs, what of the capture the lab's rxe does not repeat, named
 * beside each figure it keeps outside the tolerance (fidelity.h). */
static void verbs_reasons(json_t *why, const json_t *figs, const jct__capture_figures_t *cap,
                          const jct_run_opts_t *o, uint64_t replayed_retx) {
  char b[600], t[200];
  jct_run_dilation_t d;
  jct_run_dilation(o, &d);
  /* The stalls are held when the lab stops the senders' VMs (o->nstalls: stall injectors). */
  bool stalls = cap->stalls && !o->nstalls;
  if (outside(figs, "job_ns") && (stalls || cap->host_timer_go_backs)) {
    int n = 0;
    if (stalls)
      n = snprintf(b, sizeof b,
                   "the capture's %u transmit stalls of its hosts (%.1f ms in all) are not held "
                   "on verbs (rxe in the lab stalls by itself or not)",
                   cap->stalls, (double)cap->stall_ns / 1e6);
    if (cap->host_timer_go_backs && n >= 0 && (size_t)n < sizeof b)
      snprintf(b + n, sizeof b - (size_t)n,
               "%s%u timer go-backs with nothing lost (%llu PSNs re-sent after its hosts' late "
               "ACKs): %s",
               n ? "; its " : "the capture's ", cap->host_timer_go_backs,
               (unsigned long long)cap->host_timer_resent_psns, rxe_timer(t, sizeof t, figs, o));
    reason(why, "job_ns", b);
  }
  if (outside(figs, "retransmitted_packets")) {
    int n = 0;
    b[0] = 0;
    if (cap->host_timer_resent_psns)
      n = snprintf(b, sizeof b,
                   "%llu of the capture's %llu re-sent packets are its %u timer go-backs with "
                   "nothing lost (its hosts' late ACKs): %s",
                   (unsigned long long)cap->host_timer_resent_psns,
                   (unsigned long long)cap->retx_packets, cap->host_timer_go_backs,
                   rxe_timer(t, sizeof t, figs, o));
    uint64_t rest = cap->retx_packets > cap->host_timer_resent_psns
                        ? cap->retx_packets - cap->host_timer_resent_psns
                        : 0;
    /* The NAKs were held when the replay added the postmortem's holds
     * (run.h, postmortem.h): --hold-naks alone may have added none (no
     * NAK of the capture waited long enough). Its first hold spec is only
     * quoted. A NAK hold given by hand is not the capture's reaction. */
    const char *spec = NULL;
    for (uint32_t i = 0; i < o->ninject && !spec && o->capture_nak_holds; i++)
      spec = strstr(o->inject[i], "delay nak=") ? o->inject[i] : NULL;
    char quote[300] = "";
    if (spec) snprintf(quote, sizeof quote, " ('%s')", spec);
    if (o->capture_nak_holds && cap->nak_to_resend_ns && n >= 0 && (size_t)n < sizeof b)
      snprintf(b + n, sizeof b - (size_t)n,
               "%sthe capture's requester went back a median %.1f ms after its NAK, %u PSNs "
               "deep; the lab's rxe goes back at once, so its NAKs were held at the responder's "
               "host for that less what rxe takes by itself%s, but rxe's queue in its NIC "
               "when the NAK comes (30 to 64 packets a QP) is its VM's timing, not the capture's",
               n ? "; " : "", (double)cap->nak_to_resend_ns / 1e6, cap->nak_go_back_psns, quote);
    else if (cap->nak_to_resend_ns && replayed_retx < rest && n >= 0 && (size_t)n < sizeof b)
      snprintf(b + n, sizeof b - (size_t)n,
               "%sthe capture's requester went back a median %.1f ms after its NAK, %u PSNs "
               "deep, sending new ones at its host's pace meanwhile (the host's reaction); the "
               "lab's rxe%s goes back as deep as it had queued in its NIC when the NAK came (at "
               "most 64 packets a QP), which it does not repeat on demand",
               n ? "; " : "", (double)cap->nak_to_resend_ns / 1e6, cap->nak_go_back_psns,
               d.tdf > 1 ? ", its turnaround undilated, reacts at once and" : "");
    else if (cap->nak_to_resend_ns && replayed_retx > cap->retx_packets && n >= 0 &&
             (size_t)n < sizeof b) {
      const json_t *g = jget_replayed(figs, "go_back_psns");
      char here[48] = "as deep";
      if (json_is_integer(g))
        snprintf(here, sizeof here, "a median %lld PSNs deep", (long long)json_integer_value(g));
      snprintf(b + n, sizeof b - (size_t)n,
               "%seach of the capture's go-backs after a NAK went a median %u PSNs deep; the "
               "lab's rxe went %s, as far as it had queued in its NIC when the NAK came (up to "
               "64 packets a QP, waiting in its VM's shaper), which its VM's pace sets, not the "
               "capture's",
               n ? "; " : "", cap->nak_go_back_psns, here);
    }
    if (b[0]) reason(why, "retransmitted_packets", b);
  }
  if (outside(figs, "timeouts") && cap->host_timer_go_backs) {
    snprintf(b, sizeof b,
             "%u of the capture's %llu timeouts are timer go-backs with nothing lost (its hosts' "
             "late ACKs): %s",
             cap->host_timer_go_backs, (unsigned long long)cap->timeouts,
             rxe_timer(t, sizeof t, figs, o));
    reason(why, "timeouts", b);
  }
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
  /* Both measured alike, on the capture's wire and on the frames the
   * replay's switch sent (replay.h): hole to retransmission, and how deep
   * each NAK's go-back went. */
  wire_figure(figs, "loss_recovery_ns", cap->loss_recovery_ns > 0, cap->loss_recovery_ns,
              cap->loss_recovery_spread, side->losses_recovered > 0, side->loss_recovery_ns,
              side->loss_recovery_spread, tolerance);
  wire_figure(figs, "go_back_psns", cap->nak_to_resend_ns > 0, cap->nak_go_back_psns,
              cap->go_back_spread, side->go_backs > 0, side->go_back_psns, side->go_back_spread,
              tolerance);
  json_t *why = json_array();
  if (o->transport == JCT_TRANSPORT_VERBS)
    verbs_reasons(why, figs, cap, o,
                  (uint64_t)json_integer_value(jget_replayed(figs, "retransmitted_packets")));
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
  return json_pack("{s:s, s:f, s:b, s:o, s:o, s:o, s:o}", "side", lossless ? "baseline" : "faulted",
                   "tolerance", tolerance, "reproduced", ok, "diverged", diverged, "figures", figs,
                   "connections", conns, "why", why);
}

void jct__capture_figures_free(jct__capture_figures_t *c) {
  free(c->conn_ns);
  memset(c, 0, sizeof *c);
}
