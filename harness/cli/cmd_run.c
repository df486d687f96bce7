/* `jctlab run`: a collective on the emulated fabric, K times, and its job
 * completion time against the α-β model (include/jctlab/run.h).
 *
 *   jctlab run --synth ring --ranks 8 --bytes 64MiB --rate 1gbit --reps 5
 *              [--schedule FILE] [--channels C] [--delay 1us] [--no-pfc]
 *              [--timeout N] [--retry N] [--pcap-out FILE] [--json FILE] [--per-qp]
 *
 * Exit status: 0 a valid run; 2 bad input; 3 an invalid run (the harness
 * lost frames, or a repetition did not finish: never reported as a result);
 * 1 jctlab failed.
 */
#include <math.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "harness/base/interrupt.h"
#include "jctlab/error.h"
#include "jctlab/run.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "harness/orch/names.h"
#include "harness/plan/run_args.h"
#include "harness/base/units.h"
#include "harness/report/output.h"
#include "harness/report/report.h"
#include "harness/report/result.h"

static const char usage_text[] =
    "usage: jctlab run (--synth ALGO --ranks N --bytes SIZE | --schedule FILE) [options]\n"
    "       jctlab run SCENARIO.yaml [options]   (see jctlab run SCENARIO.yaml --help)\n"
    "\n"
    "Run a collective on jctlab's emulated fabric: ranks in network namespaces,\n"
    "RoCEv2 over jctlab's userspace transport (uroce), a userspace switch pacing\n"
    "every link. Prints the job completion time (JCT) of each repetition, their\n"
    "median, min, max and CV, algbw and busbw (nccl-tests' definitions), and the\n"
    "alpha-beta model's prediction for the same links, and per QP (as perftest per\n"
    "test) its bandwidth, message completion times and retransmissions.\n"
    "\n"
    "options:\n"
    "  --synth ALGO       ring, tree, halving-doubling (AllReduce), all-to-all, all-gather,\n"
    "                     reduce-scatter, broadcast or incast (see jctlab synth)\n"
    "  --ranks N          ranks (2 to 64)\n"
    "  --bytes SIZE       the collective's size: 8MiB, 64M, 1GiB\n"
    "  --channels C       channels (default 1)\n"
    "  --schedule FILE    a schedule (JSON, from jctlab synth or edited) instead of --synth\n"
    "  --warmup N         warm-up repetitions before the measured ones, without faults, not\n"
    "                     measured (as nccl-tests -w; default 0, and 1 with a size sweep)\n"
    "\n"
    "a size sweep, as nccl-tests' -b 8 -e 128M -f 2 (--synth only; one table row per size;\n"
    "with --inject each size is a replay: baseline and faulted repetitions interleaved):\n"
    "  -b, --bytes-min SIZE   the smallest size\n"
    "  -e, --bytes-max SIZE   the largest size\n"
    "  -f, --bytes-factor F   each size F times the one before (default 2; above 1)\n"
    "  --bytes SIZE,SIZE,...  or a list of sizes, run in that order (at most 64 sizes)\n"
    "\n"
    "the fabric, faults and outputs:\n"
    "%s"
    "  --json FILE        the result as JSON ('-': standard output, instead of the table)\n"
    "  --per-qp           a row per connection (QP pair) for any number of them: bytes,\n"
    "                     messages, bandwidth, completion p50/p99/max, retransmissions\n"
    "                     (default: shown when there are at most 16)\n"
    "\n"
    "exit status: 0 valid run, 2 bad input, 3 invalid run (the harness lost frames or a\n"
    "repetition did not finish), 1 jctlab failed.\n";

#define bad(...) jct__cmd_bad("run", __VA_ARGS__)

typedef struct {
  jct__run_args_t r;
  jct__sweep_args_t sweep;
  const char *json;
  bool per_qp;
} args_t;

static int parse(int argc, char **argv, args_t *a) {
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i];
    int got = jct__sweep_args_parse(&a->sweep, argc, argv, &i);
    if (got == 0) got = jct__run_args_parse(&a->r, argc, argv, &i, "run");
    if (got == 2) return 2;
    if (got == 1) continue;
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
      printf(usage_text, jct__run_args_help);
      return 0;
    } else if (!strcmp(w, "--per-qp")) {
      a->per_qp = true;
    } else if (!strcmp(w, "--json") || !strncmp(w, "--json=", 7)) {
      const char *v = w[6] == '=' ? w + 7 : i + 1 < argc ? argv[++i] : NULL;
      if (!v || !*v) return bad("--json needs a file");
      if (a->json) return bad("--json given twice ('%s' and '%s')", a->json, v);
      if (jct__cmd_output_ok("run", "--json", v)) return 2;
      a->json = v;
    } else {
      return bad("unknown option '%s'", w);
    }
  }
  if (!a->r.synth == !a->r.schedule) return bad("give --synth ALGO or --schedule FILE");
  if (jct__capture_opts_check(&a->r.run, "run")) return 2;
  int rc = jct__sweep_args_finish(&a->sweep, &a->r);
  if (rc != -1) return rc;
  /* A sweep checks each size's own names (cmd_run_sweep.c), not the bare one. */
  if (!a->sweep.nsizes && jct__capture_names_ok(&a->r.run, 1, "run")) return 2;
  return -1;
}

static void print_fabric(const jct_run_result_t *r) {
  const jct_switch_totals_t *f = &r->fabric;
  printf("fabric     %llu frames forwarded, %llu dropped", (unsigned long long)f->tx_frames,
         (unsigned long long)(f->tx_drops + f->rx_drops));
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    if (f->drops[k]) printf(" (%s %llu)", jct_switch_drop_name(k), (unsigned long long)f->drops[k]);
  char b[32];
  printf(
      ", PFC XOFF %llu / XON %llu sent, %llu XOFF received (queues paused %s), ECN marks %llu%s\n",
      (unsigned long long)f->tx_pfc_xoff, (unsigned long long)f->tx_pfc_xon,
      (unsigned long long)f->rx_pfc_xoff, jct__fmt_ns(r->paused_ns, b, sizeof b),
      (unsigned long long)f->ecn_marked,
      r->nlinks ? "; summed over the switches: a frame counts at each one it crossed" : "");
}

static void print_injectors(const jct_run_result_t *r) {
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_run_injector_t *in = &r->injectors[i];
    jct__cmd_print_injector("injector   ", i, in->spec, in->seed, &in->stats);
  }
}

/* A transport figure, or "n/a" where the transport does not count it. */
static void count_or_na(const jct_transport_stats_t *t, uint32_t bit, uint64_t v, char out[24]) {
  if (t->counted & bit)
    snprintf(out, 24, "%llu", (unsigned long long)v);
  else
    snprintf(out, 24, "n/a");
}

/* The congestion control's figures (uroce), and Jain's index over the QPs. */
static void print_congestion(const jct_run_opts_t *o, const jct_run_result_t *r) {
  const jct_transport_stats_t *t = &r->transport;
  char b1[32];
  if (jct_run_cc(o) == JCT_CC_DCQCN) {
    uint64_t cuts = 0;
    for (uint32_t c = 0; r->qps && c < o->schedule->nconns; c++)
      cuts += r->qps[c].rate_cuts;
    printf("congestion DCQCN (%s, parameters dilated x%.0f): %llu CNPs, %llu rate cuts",
           jct_dcqcn_profile_name(o->cc_profile), jct_run_cc_dilation(o),
           (unsigned long long)t->cnps, (unsigned long long)cuts);
  } else {
    printf("congestion none");
  }
  if (t->counted & JCT_TSTAT_NIC_PAUSED)
    printf(", NICs paused %s by PFC", jct__fmt_ns(t->nic_paused_ns, b1, 32));
  if (isfinite(r->jain_index)) printf("; Jain's index over the QPs' bandwidth %.3f", r->jain_index);
  printf("\n");
}

/* With faults: the go-back-N model's JCT beside the measured median
 * (include/jctlab/model.h), or that it does not cover them. */
static void print_loss_model(const jct_run_opts_t *o, const jct_run_result_t *r) {
  if (!o->ninject) return;
  json_t *m = jct__model_json(o);
  char b1[32];
  const json_t *jct = json_object_get(m, "jct_ns");
  if (!json_is_object(m))
    printf("model      go-back-N: none (it covers one Bernoulli `drop p=` on uroce)\n");
  else if (!json_is_number(jct))
    printf("model      go-back-N: never ends (QP timeout 0: a loss only the timer recovers)\n");
  else
    printf("model      go-back-N: %s (W %.1f packets, %.1f timeouts a repetition): "
           "measured/model %.3f\n",
           jct__fmt_ns((uint64_t)json_number_value(jct), b1, 32),
           json_number_value(json_object_get(m, "W_pkts")),
           json_number_value(json_object_get(m, "timeouts")),
           (double)r->median_ns / json_number_value(jct));
  json_decref(m);
}

/* The measured repetitions' JCTs, summed (the wall time's yardstick). */
static double jct_sum_ns(const jct_run_result_t *r) {
  double sum = 0;
  for (uint32_t i = 0; i < r->reps; i++)
    sum += (double)r->jct_ns[i];
  return sum;
}

static void print_dilation(const jct_run_result_t *r) {
  json_t *doc = json_object();
  json_object_set_new(doc, "dilation", jct__dilation_json(&r->dilation, r->wall_s, jct_sum_ns(r)));
  char buf[512];
  printf("dilation   %s\n", jct__dilation_text(doc, buf, sizeof buf));
  json_decref(doc);
}

static void print_table(const args_t *a, const jct_run_result_t *r) {
  const jct_schedule_t *s = a->r.run.schedule;
  char b1[32], b2[32], b3[32];
  const jct_run_opts_t *o = &a->r.run;
  const char *on = jct__transport_words(o);
  printf("jctlab run: %s, %u ranks, %s, %s links, delay %s, %s (PMTU %u), PFC %s\n",
         s->algorithm[0] ? s->algorithm : "schedule", s->nranks, jct__fmt_bytes(s->bytes, b1, 32),
         jct__fmt_rate(o->rate_bps, b2, 32), jct__fmt_ns(o->prop_delay_ns, b3, 32), on,
         o->path_mtu_bytes ? o->path_mtu_bytes : 4096, o->pfc ? "on" : "off");
  printf("\n  %4s  %14s\n", "rep", "JCT");
  for (uint32_t i = 0; i < r->reps; i++)
    printf("  %4u  %14s\n", i + 1, jct__fmt_ns(r->jct_ns[i], b1, 32));
  if (!r->valid) {
    printf("\nINVALID RUN: %s\n", r->invalid_why);
    print_dilation(r);
    print_fabric(r);
    print_injectors(r);
    return;
  }
  printf("\nJCT        median %s, min %s, max %s, CV %.2f%%\n", jct__fmt_ns(r->median_ns, b1, 32),
         jct__fmt_ns(r->min_ns, b2, 32), jct__fmt_ns(r->max_ns, b3, 32), r->cv * 100);
  printf("bandwidth  algbw %.4f GB/s, busbw %.4f GB/s (nccl-tests' definitions)\n", r->algbw_gbps,
         r->busbw_gbps);
  printf("model      alpha-beta: %s (alpha %s, B %s goodput): measured/model %.3f\n",
         jct__fmt_ns((uint64_t)r->model_ns, b1, 32), jct__fmt_ns((uint64_t)r->alpha_ns, b2, 32),
         jct__fmt_rate((uint64_t)r->goodput_bps, b3, 32), r->model_ratio);
  print_loss_model(o, r);
  printf("loop       lateness p50 %s, p99 %s, max %s; busy %.0f%% of the wall time: %s\n",
         jct__fmt_ns(r->lateness_p50_ns, b1, 32), jct__fmt_ns(r->lateness_p99_ns, b2, 32),
         jct__fmt_ns(r->lateness_max_ns, b3, 32), r->cpu_busy * 100,
         r->loop_bound ? "the LOOP, not the emulated link, set the pace"
                       : "the emulated link set the pace");
  print_dilation(r);
  if (r->skipped_ns)
    printf("idle       skipped %s of emulated time: nothing in flight, every rank waiting on a "
           "timer\n",
           jct__fmt_ns(r->skipped_ns, b1, 32));
  const jct_transport_stats_t *t = &r->transport;
  char f[6][24];
  count_or_na(t, JCT_TSTAT_PACKETS, t->packets, f[0]);
  count_or_na(t, JCT_TSTAT_DATA_PACKETS, t->data_packets, f[1]);
  count_or_na(t, JCT_TSTAT_RETX_PACKETS, t->retx_packets, f[2]);
  count_or_na(t, JCT_TSTAT_NAKS, t->naks, f[3]);
  count_or_na(t, JCT_TSTAT_TIMEOUTS, t->timeouts, f[4]);
  count_or_na(t, JCT_TSTAT_DUP_PACKETS, t->dup_packets, f[5]);
  printf("transport  %s packets (%s data), %s retransmitted, %s NAKs, %s timeouts, %s duplicates "
         "received%s\n",
         f[0], f[1], f[2], f[3], f[4], f[5],
         t->counted == JCT_TSTAT_ALL ? "" : " (n/a: the device does not count it)");
  print_fabric(r);
  print_congestion(o, r);
  json_t *links = jct__links_json(r->links, r->nlinks, r->ecmp_imbalance);
  if (json_is_object(links)) printf("\n");
  jct__links_text(stdout, links, "  ");
  json_decref(links);
  print_injectors(r);
  json_t *qps = r->qps ? jct__qps_json(s, NULL, r->qps) : NULL;
  jct__report_qps_text(stdout, qps, a->per_qp);
  json_decref(qps);
}

static int write_json(const args_t *a, const jct_run_result_t *r) {
  const jct_schedule_t *s = a->r.run.schedule;
  json_t *reps = json_array();
  for (uint32_t i = 0; i < r->reps; i++)
    json_array_append_new(reps, json_integer((json_int_t)r->jct_ns[i]));
  json_t *root = json_pack(
      "{s:i,s:b,s:s?,s:{s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:I},s:o}", "jctlab_run", 1, "valid", r->valid,
      "invalid_why", r->valid ? NULL : r->invalid_why, "config", "algorithm", s->algorithm, "ranks",
      (json_int_t)s->nranks, "bytes", (json_int_t)s->bytes, "rate_bps",
      (json_int_t)a->r.run.rate_bps, "prop_delay_ns", (json_int_t)a->r.run.prop_delay_ns, "reps",
      (json_int_t)r->reps, "pfc", a->r.run.pfc, "path_mtu_bytes",
      (json_int_t)(a->r.run.path_mtu_bytes ? a->r.run.path_mtu_bytes : 4096), "jct_ns", reps);
  /* Every key always present, null when the run has no value for it. */
  json_object_set_new(
      root, "jct",
      r->valid ? json_pack("{s:I,s:I,s:I,s:f}", "median_ns", (json_int_t)r->median_ns, "min_ns",
                           (json_int_t)r->min_ns, "max_ns", (json_int_t)r->max_ns, "cv", r->cv)
               : json_null());
  json_object_set_new(root, "algbw_gbps", r->valid ? json_real(r->algbw_gbps) : json_null());
  json_object_set_new(root, "busbw_gbps", r->valid ? json_real(r->busbw_gbps) : json_null());
  json_object_set_new(root, "model",
                      json_pack("{s:f,s:f,s:f,s:o}", "alpha_ns", r->alpha_ns, "goodput_bps",
                                r->goodput_bps, "jct_ns", r->model_ns, "ratio",
                                r->valid ? json_real(r->model_ratio) : json_null()));
  json_object_set_new(json_object_get(root, "model"), "loss",
                      a->r.run.ninject ? jct__model_json(&a->r.run) : json_null());
  json_object_set_new(root, "loop",
                      json_pack("{s:I,s:I,s:I,s:f,s:f,s:b,s:I}", "lateness_p50_ns",
                                (json_int_t)r->lateness_p50_ns, "lateness_p99_ns",
                                (json_int_t)r->lateness_p99_ns, "lateness_max_ns",
                                (json_int_t)r->lateness_max_ns, "packet_time_ns", r->packet_time_ns,
                                "cpu_busy", r->cpu_busy, "loop_bound", r->loop_bound,
                                "skipped_ns", (json_int_t)r->skipped_ns));
  json_object_set_new(root, "dilation", jct__dilation_json(&r->dilation, r->wall_s, jct_sum_ns(r)));
  json_object_set_new(root, "transport", jct__transport_json(&r->transport));
  const jct_switch_totals_t *f = &r->fabric;
  json_object_set_new(root, "fabric",
                      json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "frames_in",
                                (json_int_t)f->rx_frames, "frames_out", (json_int_t)f->tx_frames,
                                "drops", (json_int_t)(f->rx_drops + f->tx_drops), "duplicates",
                                (json_int_t)f->duplicates, "pfc_xoff_sent",
                                (json_int_t)f->tx_pfc_xoff, "pfc_xoff_received",
                                (json_int_t)f->rx_pfc_xoff, "ecn_marked", (json_int_t)f->ecn_marked,
                                "harness_losses", (json_int_t)r->harness_losses));
  json_t *drops = json_object();
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++) /* 0 is "forwarded" */
    json_object_set_new(drops, jct_switch_drop_name(k), json_integer((json_int_t)f->drops[k]));
  json_object_set_new(json_object_get(root, "fabric"), "drops_by_reason", drops);
  json_object_set_new(json_object_get(root, "fabric"), "paused_ns",
                      json_integer((json_int_t)r->paused_ns));
  json_object_set_new(json_object_get(root, "fabric"), "pfc_watchdog_storms",
                      json_integer((json_int_t)f->wd_storms));
  json_t *injs = json_array();
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_run_injector_t *in = &r->injectors[i];
    const jct_injector_stats_t *st = &in->stats;
    json_array_append_new(
        injs,
        json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "spec", in->spec,
                  "kind",
                  in->kind, "seed", (json_int_t)in->seed, "seen", (json_int_t)st->seen, "matched",
                  (json_int_t)st->matched, "dropped", (json_int_t)st->dropped, "held",
                  (json_int_t)st->held, "modified", (json_int_t)st->modified, "expedited",
                  (json_int_t)st->expedited, "generated", (json_int_t)st->generated, "duplicated",
                  (json_int_t)st->duplicated, "hold_ns_total", (json_int_t)st->hold_ns_total,
                  "link_down_ns", (json_int_t)st->link_down_ns, "refused",
                  (json_int_t)st->refused));
    json_t *last = json_array_get(injs, json_array_size(injs) - 1);
    json_object_set_new(last, "stalls", json_integer((json_int_t)st->stalls));
    json_object_set_new(last, "stall_ns", json_integer((json_int_t)st->stall_ns));
    json_object_set_new(last, "timeouts", json_integer((json_int_t)st->timeouts));
  }
  json_object_set_new(root, "injectors", injs);
  /* Per connection (README "Run JSON"): null when the run is invalid. */
  json_object_set_new(root, "qps", r->qps ? jct__qps_json(s, NULL, r->qps) : json_null());
  /* As replay's and the scenarios' documents: the signal that ended the run, or null. */
  json_object_set_new(root, "interrupted", json_null());
  jct__cases_mark_interrupted(root);
  json_object_set_new(json_object_get(root, "config"), "seed",
                      json_integer((json_int_t)a->r.run.seed));
  json_object_set_new(json_object_get(root, "config"), "warmup",
                      json_integer((json_int_t)a->r.run.warmup));
  json_t *cfg = json_object_get(root, "config");
  const jct_run_opts_t *o = &a->r.run;
  json_object_set_new(cfg, "ecn", json_boolean(o->ecn));
  json_object_set_new(cfg, "ecn_thresholds", jct__ecn_json(o));
  json_object_set_new(cfg, "qps_per_connection", json_integer((json_int_t)a->r.qps_per_conn));
  json_object_set_new(cfg, "rdma", jct__rdma_json(o));
  const jct_clos_t *cl = o->clos;
  json_object_set_new(
      cfg, "topology",
      cl ? json_pack("{s:s,s:i,s:i,s:i,s:I,s:s}", "shape", "leaf-spine", "leaves", (int)cl->leaves,
                     "spines", (int)cl->spines, "hosts_per_leaf", (int)cl->hosts_per_leaf,
                     "ecmp_seed", (json_int_t)cl->ecmp_seed, "ecmp",
                     cl->ecmp_mode == JCT_SW_ECMP_PER_PACKET ? "per-packet"
                     : cl->ecmp_mode == JCT_SW_ECMP_FLOWLET  ? "flowlet"
                                                             : "hash")
         : json_pack("{s:s}", "shape", "star"));
  json_t *hosts = json_array();
  for (uint32_t i = 0; cl && i < s->nranks && i < 64; i++)
    json_array_append_new(hosts, json_integer((json_int_t)r->host_of[i]));
  json_object_set_new(cfg, "host_of_rank", hosts);
  if (cl) {
    uint64_t d = jct_clos_reroute_detect_ns(cl);
    json_object_set_new(json_object_get(cfg, "topology"), "reroute_detection_ns",
                        d == JCT_CLOS_REROUTE_OFF ? json_null() : json_integer((json_int_t)d));
  }
  json_object_set_new(cfg, "cc", json_string(jct__cc_name(jct_run_cc(o))));
  bool dcqcn = jct_run_cc(o) == JCT_CC_DCQCN;
  json_object_set_new(cfg, "cc_profile",
                      dcqcn ? json_string(jct_dcqcn_profile_name(o->cc_profile)) : json_null());
  json_object_set_new(cfg, "cc_dilation", dcqcn ? json_real(jct_run_cc_dilation(o)) : json_null());
  json_object_set_new(root, "fabric_links",
                      jct__links_json(r->links, r->nlinks, r->ecmp_imbalance));
  json_object_set_new(root, "series", jct__series_json(r, s));
  json_object_set_new(root, "device_counters_by_rank", jct__dev_rank_json(r->dev_rank, s->nranks));
  json_object_set_new(root, "jain_index",
                      isfinite(r->jain_index) ? json_real(r->jain_index) : json_null());
  int rc = jct__json_write(root, a->json, "run");
  json_decref(root);
  return rc;
}

/* A leaf-spine fabric holds the ranks where the placement puts them:
 * checked before anything is made (exit 2). */
static int placement_ok(const jct_clos_t *c, uint32_t nranks) {
  uint32_t host_of[JCT_SWITCH_MAX_PORTS * JCT_CLOS_MAX_LEAVES];
  char err[256];
  if (nranks <= JCT_SWITCH_MAX_PORTS * JCT_CLOS_MAX_LEAVES &&
      jct_clos_place(c, nranks, host_of, err, sizeof err) == 0)
    return 0;
  if (nranks > JCT_SWITCH_MAX_PORTS * JCT_CLOS_MAX_LEAVES)
    snprintf(err, sizeof err, "%u ranks: more than a leaf-spine fabric holds", nranks);
  fprintf(stderr, "jctlab run: %s\n", err);
  return 2;
}

int jct__cmd_run(int argc, char **argv) {
  if (argc > 1 && jct__is_scenario_arg(argv[1])) return jct__cmd_run_scenario(argc, argv);
  args_t a = {0};
  jct__run_args_init(&a.r, 100000000u);
  a.sweep.warmup = -1;
  int status = parse(argc, argv, &a);
  if (status >= 0) return status;
  if (a.sweep.nsizes) {
    jct__run_args_finish(&a.r);
    return jct__run_sweep(&a.sweep, &a.r, a.json);
  }

  char err[512];
  jct_schedule_t *s;
  int rc = a.r.synth ? jct_schedule_synth(&s, a.r.synth, (uint32_t)a.r.ranks, a.r.bytes,
                                          (uint32_t)a.r.channels, err, sizeof err)
                     : jct_schedule_load(&s, a.r.schedule, err, sizeof err);
  if (!rc && a.r.qps_per_conn > 1) {
    jct_schedule_t *split;
    rc = jct_schedule_split_qps(&split, s, (uint32_t)a.r.qps_per_conn, err, sizeof err);
    jct_schedule_free(s);
    s = split;
  }
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  jct__run_args_finish(&a.r);
  a.r.run.schedule = s;
  if (a.r.clos.leaves && (rc = placement_ok(&a.r.clos, s->nranks))) {
    jct_schedule_free(s);
    return rc;
  }
  /* --agents: the hosts are reached over this host's own network. */
  if (!a.r.run.agents && (rc = jct_ns_isolate(err, sizeof err))) {
    fprintf(stderr, "jctlab run: %s\n", err);
    jct_schedule_free(s);
    return 1;
  }
  jct__interrupt_install();  /* a first SIGINT ends the run cleanly, its captures whole */
  static jct_run_result_t r; /* large: the per-repetition JCTs */
  rc = jct_run(&a.r.run, &r, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    jct_schedule_free(s);
    return rc == JCT_EINVAL ? 2 : 1;
  }
  if (!a.json || strcmp(a.json, "-")) print_table(&a, &r);
  status = a.json ? write_json(&a, &r) : 0;
  int sig = jct__interrupt_signal();
  if (sig) { /* as a shell reports a command a signal ended */
    fprintf(stderr,
            "jctlab run: interrupted (%s): the repetitions finished before it are reported\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    status = 128 + sig;
  } else if (!r.valid) {
    fprintf(stderr, "jctlab run: invalid run: %s\n", r.invalid_why);
    status = 3;
  }
  jct_run_result_free(&r);
  jct_schedule_free(s);
  return status;
}
