/* The result document: a replay's figures as JSON (result.h). */
#include <math.h>
#include <string.h>

#include "harness/orch/names.h"
#include "jctlab/error.h"
#include "result.h"

#define JCT_VERSION_STR "0.1.0"

jct__verdict_kind_t jct__verdict_of(const jct_replay_result_t *r, const jct__budget_t *b) {
  if (!r->valid) return JCT_VERDICT_INVALID;
  if (b->max_degradation > 0)
    return r->degradation <= b->max_degradation ? JCT_VERDICT_PASS : JCT_VERDICT_FAIL;
  if (b->max_jct_ns > 0)
    return r->f.median_ns <= b->max_jct_ns ? JCT_VERDICT_PASS : JCT_VERDICT_FAIL;
  return JCT_VERDICT_NONE;
}

const char *jct__verdict_name(jct__verdict_kind_t v) {
  static const char *const names[] = {"none", "pass", "fail", "invalid"};
  return (unsigned)v < 4 ? names[v] : "none";
}

/* A real, or null where there is no figure (NaN). */
static json_t *real_or_null(double v) {
  return isnan(v) ? json_null() : json_real(v);
}

static json_t *u64(uint64_t v) {
  return json_integer((json_int_t)v);
}

/* The congestion control o runs: "cc" ("none", "dcqcn"), and for DCQCN
 * its "cc_profile" and "cc_dilation" (null without). */
static void cc_json(json_t *o, const jct_run_opts_t *r) {
  if (!o) return;
  bool dcqcn = jct_run_cc(r) == JCT_CC_DCQCN;
  json_object_set_new(o, "cc", json_string(jct__cc_name(jct_run_cc(r))));
  json_object_set_new(o, "cc_profile",
                      dcqcn ? json_string(jct_dcqcn_profile_name(r->cc_profile)) : json_null());
  json_object_set_new(o, "cc_dilation", dcqcn ? json_real(jct_run_cc_dilation(r)) : json_null());
}

json_t *jct__ecn_json(const jct_run_opts_t *o) {
  if (!o->ecn) return json_null();
  return json_pack("{s:I,s:I,s:f}", "kmin_bytes",
                   (json_int_t)(o->ecn_kmin_bytes ? o->ecn_kmin_bytes : JCT_FABRIC_ECN_KMIN_BYTES),
                   "kmax_bytes",
                   (json_int_t)(o->ecn_kmax_bytes ? o->ecn_kmax_bytes : JCT_FABRIC_ECN_KMAX_BYTES),
                   "pmax", o->ecn_pmax > 0 ? o->ecn_pmax : JCT_FABRIC_ECN_PMAX);
}

json_t *jct__rdma_json(const jct_run_opts_t *o) {
  if (o->transport != JCT_TRANSPORT_VERBS) return json_null();
  const jct_rdma_opts_t *r = &o->rdma;
  json_t *c = json_null();
  if (r->ncounters) {
    c = json_array();
    for (uint32_t i = 0; i < r->ncounters; i++)
      json_array_append_new(c, json_string(r->counters[i]));
  }
  return json_pack("{s:o,s:o,s:o,s:i,s:o}", "device",
                   r->device[0] ? json_string(r->device) : json_null(), "port",
                   r->port ? json_integer(r->port) : json_null(), "gid_index",
                   r->has_gid_index ? json_integer(r->gid_index) : json_null(), "traffic_class",
                   r->has_traffic_class ? r->traffic_class : JCT_RDMA_DEFAULT_TRAFFIC_CLASS,
                   "counters", c);
}

json_t *jct__dev_rank_json(const jct_dev_counters_t *d, uint32_t n) {
  if (!d) return json_null();
  json_t *a = json_array();
  for (uint32_t r = 0; r < n; r++) {
    json_t *c = json_object();
    for (uint32_t i = 0; i < d[r].n; i++)
      json_object_set_new(c, d[r].c[i].name, json_integer((json_int_t)d[r].c[i].value));
    json_array_append_new(a, json_pack("{s:I,s:o}", "rank", (json_int_t)r, "counters", c));
  }
  return a;
}

json_t *jct__result_new(const char *command, const jct_run_opts_t *o,
                        const jct__result_input_t *in) {
  const jct_schedule_t *s = o->schedule;
  double scale = in->scale > 0 ? in->scale : 1;
  json_t *doc = json_pack(
      "{s:i,s:s,s:s,s:{s:s,s:s,s:s,s:s?,s:I,s:I,s:I},"
      "s:{s:s,s:I,s:I,s:b,s:b,s:s,s:I,s:i,s:i},s:{s:f,s:I,s:I},s:I,s:I,s:[]}",
      "jctlab_result", 1, "command", command, "jctlab_version", JCT_VERSION_STR, "input", "source",
      in->source, "kind", in->kind, "algorithm", s->algorithm, "pattern", in->pattern, "ranks",
      (json_int_t)s->nranks, "ops", (json_int_t)s->nops, "bytes", (json_int_t)s->bytes, "fabric",
      "transport",
      o->transport == JCT_TRANSPORT_VERBS && o->lab_ranks ? "verbs (rxe lab)"
                                                          : jct__transport_name(o->transport),
      "rate_bps", (json_int_t)o->rate_bps, "prop_delay_ns", (json_int_t)o->prop_delay_ns, "pfc",
      o->pfc, "ecn", o->ecn, "pfc_watchdog",
      in->pfc_watchdog ? in->pfc_watchdog : jct__watchdog_name(jct__watchdog_of(o)),
      "path_mtu_bytes", (json_int_t)(o->path_mtu_bytes ? o->path_mtu_bytes : 4096), "timeout",
      o->timeout, "retry_cnt", o->retry_cnt, "scale", "factor", scale, "captured_rate_bps",
      (json_int_t)in->captured_rate_bps, "projected_rate_bps",
      (json_int_t)(scale != 1 && in->captured_rate_bps ? in->captured_rate_bps : 0), "seed",
      (json_int_t)o->seed, "reps", (json_int_t)o->reps, "cases");
  /* null, or the signal that ended the run early ("SIGINT", "SIGTERM"). */
  if (doc) json_object_set_new(doc, "interrupted", json_null());
  if (doc && o->transport == JCT_TRANSPORT_UROCE)
    json_object_set_new(json_object_get(doc, "fabric"), "nic_queue_pkts",
                        json_integer((json_int_t)o->nic_queue_pkts));
  if (doc && o->transport == JCT_TRANSPORT_UROCE) {
    json_object_set_new(json_object_get(doc, "fabric"), "nak_delay_ns",
                        json_integer((json_int_t)o->nak_delay_ns));
    json_object_set_new(json_object_get(doc, "fabric"), "nak_react_ns",
                        json_integer((json_int_t)o->nak_react_ns));
  }
  /* Where a capture's replay took its fabric figures from (replay_profile.h). */
  if (doc)
    json_object_set(doc, "replay_profile", in->replay_profile ? in->replay_profile : json_null());
  if (doc) cc_json(json_object_get(doc, "fabric"), o);
  if (doc) json_object_set_new(json_object_get(doc, "fabric"), "ecn_thresholds", jct__ecn_json(o));
  if (doc) json_object_set_new(json_object_get(doc, "fabric"), "rdma", jct__rdma_json(o));
  return doc;
}

static json_t *side_json(const jct_replay_result_t *r, const jct_replay_side_t *s,
                         const jct_rep_t *reps) {
  json_t *jct = json_array();
  for (uint32_t i = 0; i < r->reps; i++)
    json_array_append_new(jct, reps[i].ok ? u64(reps[i].jct_ns) : json_null());
  json_t *o = json_pack("{s:o}", "jct_ns", jct);
  if (!r->valid) return o;
  json_object_set_new(o, "median_jct_ns", u64(s->median_ns));
  json_object_set_new(o, "p99_jct_ns", u64(s->p99_ns));
  json_object_set_new(o, "min_jct_ns", u64(s->min_ns));
  json_object_set_new(o, "max_jct_ns", u64(s->max_ns));
  json_object_set_new(o, "algbw_gbps", json_real(s->algbw_gbps));
  json_object_set_new(o, "busbw_gbps", json_real(s->busbw_gbps));
  return o;
}

/* A figure the transport does not count is null (verbs: rxe counts neither
 * the packets it resends nor the data packets it sends apart from its
 * ACKs). */
static json_t *figure(const jct_transport_stats_t *t, uint32_t bit, uint64_t v) {
  return t->counted & bit ? u64(v) : json_null();
}

json_t *jct__transport_json(const jct_transport_stats_t *t) {
  return json_pack(
      "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "packets", figure(t, JCT_TSTAT_PACKETS, t->packets),
      "data_packets", figure(t, JCT_TSTAT_DATA_PACKETS, t->data_packets), "retransmitted_packets",
      figure(t, JCT_TSTAT_RETX_PACKETS, t->retx_packets), "retransmitted_bytes",
      figure(t, JCT_TSTAT_RETX_BYTES, t->retx_bytes), "naks", figure(t, JCT_TSTAT_NAKS, t->naks),
      "timeouts", figure(t, JCT_TSTAT_TIMEOUTS, t->timeouts), "duplicate_packets",
      figure(t, JCT_TSTAT_DUP_PACKETS, t->dup_packets), "cnps",
      figure(t, JCT_TSTAT_CNPS, t->cnps), "nic_paused_ns",
      figure(t, JCT_TSTAT_NIC_PAUSED, t->nic_paused_ns));
}

/* The RDMA devices' own counters (verbs), or null (uroce). */
static json_t *dev_json(const jct_dev_counters_t *d) {
  if (!d->n) return json_null();
  json_t *o = json_object();
  for (uint32_t i = 0; i < d->n; i++)
    json_object_set_new(o, d->c[i].name, json_integer((json_int_t)d->c[i].value));
  return o;
}

static json_t *drops_json(const jct_replay_result_t *r) {
  json_t *inj = json_array();
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_run_injector_t *in = &r->injectors[i];
    const jct_injector_stats_t *st = &in->stats;
    json_array_append_new(
        inj, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "spec", in->spec, "kind",
                       in->kind, "seed", (json_int_t)in->seed, "seen", (json_int_t)st->seen,
                       "matched", (json_int_t)st->matched, "dropped", (json_int_t)st->dropped,
                       "held", (json_int_t)st->held, "modified",
                       (json_int_t)(st->modified + st->expedited), "generated",
                       (json_int_t)st->generated, "duplicated", (json_int_t)st->duplicated));
    /* A flap's: how long its link was down, what its host refused meanwhile. */
    json_t *last = json_array_get(inj, json_array_size(inj) - 1);
    json_object_set_new(last, "link_down_ns", u64(st->link_down_ns));
    json_object_set_new(last, "refused", u64(st->refused));
    /* A stall's: the senders' stalls it asked for, and their time. */
    json_object_set_new(last, "stalls", u64(st->stalls));
    json_object_set_new(last, "stall_ns", u64(st->stall_ns));
    /* A timeout's: the requesters' go-backs that ended its ACK drops. */
    json_object_set_new(last, "timeouts", u64(st->timeouts));
  }
  const jct_switch_totals_t *f = &r->f.fabric;
  json_t *fab = json_pack(
      "{s:I,s:I,s:I}", "buffer_full",
      (json_int_t)(f->drops[JCT_SW_DROP_BUFFER_OVERFLOW] + f->drops[JCT_SW_DROP_PFC_HEADROOM]),
      "pfc_watchdog", (json_int_t)f->drops[JCT_SW_DROP_PFC_WATCHDOG], "link_down", (json_int_t)0);
  /* Every reason the switch counts, by its own name, too. */
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    if (k != JCT_SW_DROP_INJECTOR && f->drops[k])
      json_object_set_new(fab, jct_switch_drop_name(k), u64(f->drops[k]));
  uint64_t link_down = 0;
  for (uint32_t i = 0; i < r->ninjectors; i++)
    if (strcmp(r->injectors[i].kind, "flap") == 0) link_down += r->injectors[i].stats.dropped;
  json_object_set_new(fab, "link_down", u64(link_down));
  json_object_set_new(fab, "pfc_xoff_received", u64(f->rx_pfc_xoff)); /* a storm's, at the switch */
  /* The PFC watchdog: queues it declared in storm, and restored. */
  json_object_set_new(fab, "pfc_watchdog_storms", u64(f->wd_storms));
  json_object_set_new(fab, "pfc_watchdog_restores", u64(f->wd_restores));
  return json_pack("{s:o,s:o}", "injectors", inj, "fabric", fab);
}

static json_t *timeline_json(const jct_schedule_t *s, const jct_rep_t *rep, uint32_t index) {
  json_t *ops = json_array();
  for (uint32_t i = 0; i < s->nops; i++) {
    const jct_conn_t *c = &s->conns[s->ops[i].conn];
    const jct_op_timing_t *t = &rep->timing[i];
    json_array_append_new(ops, json_pack("{s:I,s:I,s:I,s:i,s:I,s:I}", "op", (json_int_t)i, "rank",
                                         (json_int_t)c->src, "dst", (json_int_t)c->dst, "step",
                                         s->ops[i].step, "start_ns", (json_int_t)t->start_ns,
                                         "done_ns", (json_int_t)t->done_ns));
  }
  return json_pack("{s:I,s:I,s:o}", "rep", (json_int_t)index, "jct_ns", (json_int_t)rep->jct_ns,
                   "ops", ops);
}

static json_t *bins_json(const jct_rep_t *rep) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < rep->nbins; i++)
    json_array_append_new(a, json_integer(rep->retx_bins[i]));
  return a;
}

static json_t *path_json(const jct_schedule_t *s, const jct_replay_result_t *r) {
  json_t *a = json_array();
  const jct_rep_t *rep = &r->faulted[r->f.median_rep];
  for (uint32_t i = 0; i < r->npath; i++) {
    const jct_path_op_t *p = &r->path[i];
    const jct_op_t *op = &s->ops[p->op];
    const jct_conn_t *c = &s->conns[op->conn];
    json_array_append_new(
        a, json_pack("{s:I,s:I,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "rank", (json_int_t)c->src,
                     "op", (json_int_t)p->op, "step", op->step, "conn", (json_int_t)op->conn, "dst",
                     (json_int_t)c->dst, "bytes", (json_int_t)op->bytes, "start_ns",
                     (json_int_t)rep->timing[p->op].start_ns, "done_ns",
                     (json_int_t)rep->timing[p->op].done_ns, "late_ns", (json_int_t)p->late_ns,
                     "added_ns", (json_int_t)p->added_ns, "culprit", (int32_t)i == r->culprit));
  }
  return a;
}

int jct__result_add_case(json_t *doc, const jct_run_opts_t *o, const jct__result_input_t *in,
                         const jct__case_meta_t *m, const jct_replay_result_t *r) {
  const jct_schedule_t *s = o->schedule;
  json_t *inject = json_array();
  for (uint32_t i = 0; i < m->ninject; i++)
    json_array_append_new(inject, json_string(m->inject[i]));
  jct__verdict_kind_t v = jct__verdict_of(r, &m->budget);
  json_t *c = json_pack("{s:s,s:o}", "name", m->name, "inject", inject);
  cc_json(c, o); /* a case may run its own */
  json_object_set_new(c, "sweep",
                      m->sweep_key
                          ? json_pack("{s:s,s:f}", "key", m->sweep_key, "value", m->sweep_value)
                          : json_null());
  json_object_set_new(c, "budget",
                      m->budget.max_degradation > 0
                          ? json_pack("{s:f}", "max_degradation", m->budget.max_degradation)
                      : m->budget.max_jct_ns
                          ? json_pack("{s:I}", "max_jct_ns", (json_int_t)m->budget.max_jct_ns)
                          : json_null());
  json_object_set_new(c, "verdict", json_string(jct__verdict_name(v)));
  /* Every key is always there, null where it has no value (an invalid run
   * has no degradation, critical path, timeline or projection). */
  json_object_set_new(c, "invalid_why", r->valid ? json_null() : json_string(r->invalid_why));
  json_object_set_new(c, "baseline", side_json(r, &r->b, r->baseline));
  json_object_set_new(c, "faulted", side_json(r, &r->f, r->faulted));
  if (r->valid) {
    json_object_set_new(c, "degradation",
                        json_pack("{s:f,s:o,s:o}", "median", r->degradation, "ci95_low",
                                  real_or_null(r->ci95_low), "ci95_high",
                                  real_or_null(r->ci95_high)));
    double scale = in->scale > 0 ? in->scale : 1;
    if (scale != 1 && in->captured_rate_bps) {
      /* Bandwidth-bound projection: sizes back to 1/scale, rate to the captured one. */
      double k = (double)o->rate_bps / (scale * (double)in->captured_rate_bps);
      json_object_set_new(c, "projected",
                          json_pack("{s:I,s:I}", "baseline_jct_ns",
                                    (json_int_t)((double)r->b.median_ns * k), "faulted_jct_ns",
                                    (json_int_t)((double)r->f.median_ns * k)));
    } else {
      json_object_set_new(c, "projected", json_null());
    }
  } else {
    json_object_set_new(c, "degradation", json_null());
    json_object_set_new(c, "projected", json_null());
  }
  json_object_set_new(c, "model", m->ninject ? jct__model_json(o) : json_null());
  json_object_set_new(c, "transport", jct__transport_json(&r->f.transport));
  json_object_set_new(c, "baseline_transport", jct__transport_json(&r->b.transport));
  json_object_set_new(c, "device_counters", dev_json(&r->f.dev));
  json_object_set_new(c, "baseline_device_counters", dev_json(&r->b.dev));
  json_object_set_new(c, "device_counters_by_rank",
                      r->b.dev_rank || r->f.dev_rank
                          ? json_pack("{s:o,s:o}", "baseline",
                                      jct__dev_rank_json(r->b.dev_rank, s->nranks), "faulted",
                                      jct__dev_rank_json(r->f.dev_rank, s->nranks))
                          : json_null());
  json_object_set_new(c, "paused_ns", u64(r->f.paused_ns));
  json_object_set_new(c, "drops", drops_json(r));
  /* A leaf-spine fabric's links, each side's (null: the star). */
  json_object_set_new(c, "fabric_links",
                      r->b.links || r->f.links
                          ? json_pack("{s:o,s:o}", "baseline",
                                      jct__links_json(r->b.links, r->b.nlinks, r->b.ecmp_imbalance),
                                      "faulted",
                                      jct__links_json(r->f.links, r->f.nlinks, r->f.ecmp_imbalance))
                          : json_null());
  if (r->valid) {
    json_object_set_new(c, "critical_path", path_json(s, r));
    const jct_rep_t *b = &r->baseline[r->b.median_rep], *f = &r->faulted[r->f.median_rep];
    json_object_set_new(c, "timeline",
                        json_pack("{s:o,s:o}", "baseline", timeline_json(s, b, r->b.median_rep),
                                  "faulted", timeline_json(s, f, r->f.median_rep)));
    json_object_set_new(c, "retransmissions",
                        json_pack("{s:I,s:o,s:o}", "bin_ns", (json_int_t)f->bin_ns, "baseline",
                                  bins_json(b), "faulted", bins_json(f)));
  } else {
    json_object_set_new(c, "critical_path", json_null());
    json_object_set_new(c, "timeline", json_null());
    json_object_set_new(c, "retransmissions", json_null());
  }
  json_object_set_new(c, "qps",
                      r->valid && r->b.qps && r->f.qps ? jct__qps_json(s, r->b.qps, r->f.qps)
                                                       : json_null());
  json_object_set_new(c, "lateness",
                      json_pack("{s:I,s:I,s:I,s:f}", "p50_ns", (json_int_t)r->lateness_p50_ns,
                                "p99_ns", (json_int_t)r->lateness_p99_ns, "max_ns",
                                (json_int_t)r->lateness_max_ns, "packet_time_ns",
                                r->packet_time_ns));
  json_object_set_new(c, "skipped_ns", json_integer((json_int_t)r->skipped_ns));
  json_object_set_new(c, "wall_s", json_real(r->wall_s));
  double jct_sum = 0;
  for (uint32_t i = 0; r->baseline && r->faulted && i < r->reps; i++)
    jct_sum += (double)r->baseline[i].jct_ns + (double)r->faulted[i].jct_ns;
  json_object_set_new(c, "dilation", jct__dilation_json(&r->dilation, r->wall_s, jct_sum));
  bool reproduced = false;
  json_object_set_new(c, "fidelity",
                      in->capture && m->fidelity ? jct__fidelity_json(in->capture,
                                                       in->fidelity_tolerance > 0
                                                           ? in->fidelity_tolerance
                                                           : JCT__FIDELITY_TOLERANCE,
                                                       o, r, m->lossless || m->ninject == 0,
                                                       &reproduced)
                                  : json_null());
  return json_array_append_new(json_object_get(doc, "cases"), c) ? JCT_ENOMEM : 0;
}
