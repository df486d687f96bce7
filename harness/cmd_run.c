/* `jctlab run`: a collective on the emulated fabric, K times, and its job
 * completion time against the α-β model (include/jctlab/run.h).
 *
 *   jctlab run --synth ring --ranks 8 --bytes 64MiB --rate 1gbit --reps 5
 *              [--schedule FILE] [--channels C] [--delay 1us] [--no-pfc]
 *              [--timeout N] [--retry N] [--pcap-out FILE] [--json FILE]
 *
 * Exit status: 0 a valid run; 2 bad input; 3 an invalid run (the harness
 * lost frames, or a repetition did not finish: never reported as a result);
 * 1 jctlab failed.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "jctlab/error.h"
#include "jctlab/run.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "units.h"

static const char usage_text[] =
    "usage: jctlab run (--synth ALGO --ranks N --bytes SIZE | --schedule FILE) [options]\n"
    "\n"
    "Run a collective on jctlab's emulated fabric: ranks in network namespaces,\n"
    "RoCEv2 over jctlab's userspace transport (uroce), a userspace switch pacing\n"
    "every link. Prints the job completion time (JCT) of each repetition, their\n"
    "median, min, max and CV, algbw and busbw (nccl-tests' definitions), and the\n"
    "alpha-beta model's prediction for the same links.\n"
    "\n"
    "options:\n"
    "  --synth ALGO       ring, tree, halving-doubling or all-to-all (see jctlab synth)\n"
    "  --ranks N          ranks (2 to 64)\n"
    "  --bytes SIZE       the collective's size: 8MiB, 64M, 1GiB\n"
    "  --channels C       channels (default 1)\n"
    "  --schedule FILE    a schedule (JSON, from jctlab synth or edited) instead of --synth\n"
    "  --rate RATE        every link's rate: 100mbit, 1gbit, 10gbit (default 1gbit)\n"
    "  --delay TIME       every link's propagation delay: 1us, 500ns, 2ms (default 1us)\n"
    "  --reps K           repetitions (default 5)\n"
    "  --no-pfc           no PFC on the data priority (lossy fabric)\n"
    "  --ecn              ECN marking on the data priority (Kmin 64 KiB, Kmax 256 KiB, Pmax 0.2)\n"
    "  --timeout N        QP local ACK timeout exponent, 4.096 us * 2^N (default 20, NCCL's)\n"
    "  --retry N          QP retry count (default 7, NCCL's)\n"
    "  --inject SPEC      an injector on the switch's path, repeatable, in order:\n"
    "                     'drop p=0.001', 'drop psn=4096 qp=0x101', 'delay 50us jitter=10us',\n"
    "                     'pause prio=3 quanta=65535 rate=1000/s for=200ms port=2', 'ecn p=0.05',\n"
    "                     'corrupt p=0.0001', 'flap down=5ms every=1s', 'reorder p=0.01 gap=5'\n"
    "                     (common keys: where=\"FILTER\" port=N dir=in|out at= until= seed=)\n"
    "  --seed N           the run's seed; injectors without seed= derive theirs (default 1)\n"
    "  --pfc-watchdog[=drop|forward]  the switch's PFC watchdog (200 ms, 200 ms, drop)\n"
    "  --fault-log FILE   every injector action as a JSON line\n"
    "  --pcap-drops FILE  the frames injectors dropped (nanosecond pcap)\n"
    "  --pcap-out FILE    write every frame that crossed the switch (nanosecond pcap)\n"
    "  --json FILE        the result as JSON ('-': standard output, instead of the table)\n"
    "\n"
    "exit status: 0 valid run, 2 bad input, 3 invalid run (the harness lost frames or a\n"
    "repetition did not finish), 1 jctlab failed.\n";

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "jctlab run: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try 'jctlab run --help')\n");
  va_end(ap);
  return 2;
}

/* "1us", "500ns", "2ms", "1s", a plain number of ns. */
static int parse_time_ns(const char *s, uint64_t *out) {
  static const struct {
    const char *u;
    uint64_t mult;
  } units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return JCT_EINVAL;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(end, units[i].u) == 0) {
      *out = v * units[i].mult;
      return 0;
    }
  return JCT_EINVAL;
}

typedef struct {
  const char *synth, *schedule, *json;
  uint64_t ranks, bytes, channels, reps, timeout, retry;
  const char *inject[JCT_RUN_MAX_INJECTORS];
  jct_run_opts_t run;
} args_t;

static int parse(int argc, char **argv, args_t *a) {
  for (int i = 1; i < argc; i++) {
    const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED(what)                                                                                 \
  do {                                                                                             \
    if (!v) return bad("%s needs %s", w, what);                                                    \
    i++;                                                                                           \
  } while (0)
    if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (!strcmp(w, "--synth")) {
      NEED("an algorithm");
      a->synth = v;
    } else if (!strcmp(w, "--schedule")) {
      NEED("a file");
      a->schedule = v;
    } else if (!strcmp(w, "--ranks")) {
      NEED("a number");
      if (jct__parse_count(v, 1u << 20, &a->ranks)) return bad("--ranks: '%s' is not a number", v);
    } else if (!strcmp(w, "--bytes")) {
      NEED("a size");
      if (jct__parse_size_bytes(v, &a->bytes)) return bad("--bytes: '%s' is not a size", v);
    } else if (!strcmp(w, "--channels")) {
      NEED("a number");
      if (jct__parse_count(v, 64, &a->channels) || !a->channels)
        return bad("--channels: '%s' is not 1 to 64", v);
    } else if (!strcmp(w, "--rate")) {
      NEED("a rate");
      if (jct__parse_rate_bps(v, &a->run.rate_bps))
        return bad("--rate: '%s' is not a rate (100mbit, 1gbit, 10gbit)", v);
    } else if (!strcmp(w, "--delay")) {
      NEED("a time");
      if (parse_time_ns(v, &a->run.prop_delay_ns) || a->run.prop_delay_ns > 1000000000u)
        return bad("--delay: '%s' is not a time up to 1 s (1us, 500ns, 2ms)", v);
    } else if (!strcmp(w, "--reps")) {
      NEED("a number");
      if (jct__parse_count(v, JCT_RUN_MAX_REPS, &a->reps) || !a->reps)
        return bad("--reps: '%s' is not 1 to %u", v, JCT_RUN_MAX_REPS);
    } else if (!strcmp(w, "--timeout")) {
      NEED("an exponent");
      if (jct__parse_count(v, 31, &a->timeout)) return bad("--timeout: '%s' is not 0 to 31", v);
    } else if (!strcmp(w, "--retry")) {
      NEED("a count");
      if (jct__parse_count(v, 7, &a->retry)) return bad("--retry: '%s' is not 0 to 7", v);
    } else if (!strcmp(w, "--no-pfc")) {
      a->run.pfc = false;
    } else if (!strcmp(w, "--ecn")) {
      a->run.ecn = true;
    } else if (!strcmp(w, "--inject")) {
      NEED("a spec");
      if (a->run.ninject == JCT_RUN_MAX_INJECTORS)
        return bad("at most %u --inject", JCT_RUN_MAX_INJECTORS);
      a->inject[a->run.ninject++] = v;
    } else if (!strcmp(w, "--seed")) {
      NEED("a number");
      if (jct__parse_count(v, UINT64_MAX, &a->run.seed))
        return bad("--seed: '%s' is not a number", v);
    } else if (!strcmp(w, "--pfc-watchdog") || !strcmp(w, "--pfc-watchdog=drop")) {
      a->run.pfc_watchdog = true;
    } else if (!strcmp(w, "--pfc-watchdog=forward")) {
      a->run.pfc_watchdog = a->run.watchdog_forward = true;
    } else if (!strncmp(w, "--pfc-watchdog=", 15)) {
      return bad("--pfc-watchdog: action '%s' is not drop or forward", w + 15);
    } else if (!strcmp(w, "--fault-log")) {
      NEED("a file");
      a->run.fault_log = v;
    } else if (!strcmp(w, "--pcap-drops")) {
      NEED("a file");
      a->run.pcap_drops = v;
    } else if (!strcmp(w, "--pcap-out")) {
      NEED("a file");
      a->run.pcap_out = v;
    } else if (!strcmp(w, "--json")) {
      NEED("a file");
      a->json = v;
    } else {
      return bad("unknown option '%s'", w);
    }
#undef NEED
  }
  if (!a->synth == !a->schedule) return bad("give --synth ALGO or --schedule FILE");
  if (a->synth && (!a->ranks || !a->bytes)) return bad("--synth needs --ranks and --bytes");
  return -1;
}

static void print_fabric(const jct_run_result_t *r) {
  const jct_switch_totals_t *f = &r->fabric;
  printf("fabric     %llu frames forwarded, %llu dropped", (unsigned long long)f->tx_frames,
         (unsigned long long)(f->tx_drops + f->rx_drops));
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++)
    if (f->drops[k]) printf(" (%s %llu)", jct_switch_drop_name(k), (unsigned long long)f->drops[k]);
  char b[32];
  printf(", PFC XOFF %llu / XON %llu sent, %llu XOFF received (queues paused %s), ECN marks %llu\n",
         (unsigned long long)f->tx_pfc_xoff, (unsigned long long)f->tx_pfc_xon,
         (unsigned long long)f->rx_pfc_xoff, jct__fmt_ns(r->paused_ns, b, sizeof b),
         (unsigned long long)f->ecn_marked);
}

static void print_injectors(const jct_run_result_t *r) {
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_run_injector_t *in = &r->injectors[i];
    const jct_injector_stats_t *st = &in->stats;
    printf("injector   #%u '%s' (seed %llu): %llu seen, %llu matched, %llu dropped, %llu held, "
           "%llu modified, %llu generated\n",
           i, in->spec, (unsigned long long)in->seed, (unsigned long long)st->seen,
           (unsigned long long)st->matched, (unsigned long long)st->dropped,
           (unsigned long long)st->held, (unsigned long long)(st->modified + st->expedited),
           (unsigned long long)st->generated);
  }
}

static void print_table(const args_t *a, const jct_run_result_t *r) {
  const jct_schedule_t *s = a->run.schedule;
  char b1[32], b2[32], b3[32];
  printf("jctlab run: %s, %u ranks, %s, %s links, delay %s, uroce (PMTU %u), PFC %s\n",
         s->algorithm[0] ? s->algorithm : "schedule", s->nranks, jct__fmt_bytes(s->bytes, b1, 32),
         jct__fmt_rate(a->run.rate_bps, b2, 32), jct__fmt_ns(a->run.prop_delay_ns, b3, 32),
         a->run.path_mtu_bytes ? a->run.path_mtu_bytes : 4096, a->run.pfc ? "on" : "off");
  printf("\n  %4s  %14s\n", "rep", "JCT");
  for (uint32_t i = 0; i < r->reps; i++)
    printf("  %4u  %14s\n", i + 1, jct__fmt_ns(r->jct_ns[i], b1, 32));
  if (!r->valid) {
    printf("\nINVALID RUN: %s\n", r->invalid_why);
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
  printf("loop       lateness p50 %s, p99 %s, max %s; busy %.0f%% of the wall time: %s\n",
         jct__fmt_ns(r->lateness_p50_ns, b1, 32), jct__fmt_ns(r->lateness_p99_ns, b2, 32),
         jct__fmt_ns(r->lateness_max_ns, b3, 32), r->cpu_busy * 100,
         r->loop_bound ? "the LOOP, not the emulated link, set the pace"
                       : "the emulated link set the pace");
  printf("transport  %llu packets (%llu data), %llu retransmitted, %llu NAKs, %llu timeouts\n",
         (unsigned long long)r->transport.tx_pkts, (unsigned long long)r->transport.tx_data_pkts,
         (unsigned long long)r->transport.retx_pkts, (unsigned long long)r->transport.rx_naks,
         (unsigned long long)r->transport.timeouts);
  print_fabric(r);
  print_injectors(r);
}

static int write_json(const args_t *a, const jct_run_result_t *r) {
  const jct_schedule_t *s = a->run.schedule;
  json_t *reps = json_array();
  for (uint32_t i = 0; i < r->reps; i++)
    json_array_append_new(reps, json_integer((json_int_t)r->jct_ns[i]));
  json_t *root = json_pack(
      "{s:i,s:b,s:s?,s:{s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:I},s:o}", "jctlab_run", 1, "valid", r->valid,
      "invalid_why", r->valid ? NULL : r->invalid_why, "config", "algorithm", s->algorithm, "ranks",
      (json_int_t)s->nranks, "bytes", (json_int_t)s->bytes, "rate_bps", (json_int_t)a->run.rate_bps,
      "prop_delay_ns", (json_int_t)a->run.prop_delay_ns, "reps", (json_int_t)r->reps, "pfc",
      a->run.pfc, "path_mtu_bytes",
      (json_int_t)(a->run.path_mtu_bytes ? a->run.path_mtu_bytes : 4096), "jct_ns", reps);
  if (r->valid) {
    json_object_set_new(root, "jct",
                        json_pack("{s:I,s:I,s:I,s:f}", "median_ns", (json_int_t)r->median_ns,
                                  "min_ns", (json_int_t)r->min_ns, "max_ns", (json_int_t)r->max_ns,
                                  "cv", r->cv));
    json_object_set_new(root, "algbw_gbps", json_real(r->algbw_gbps));
    json_object_set_new(root, "busbw_gbps", json_real(r->busbw_gbps));
  }
  json_object_set_new(root, "model",
                      json_pack("{s:f,s:f,s:f,s:o}", "alpha_ns", r->alpha_ns, "goodput_bps",
                                r->goodput_bps, "jct_ns", r->model_ns, "ratio",
                                r->valid ? json_real(r->model_ratio) : json_null()));
  json_object_set_new(root, "loop",
                      json_pack("{s:I,s:I,s:I,s:f,s:f,s:b}", "lateness_p50_ns",
                                (json_int_t)r->lateness_p50_ns, "lateness_p99_ns",
                                (json_int_t)r->lateness_p99_ns, "lateness_max_ns",
                                (json_int_t)r->lateness_max_ns, "packet_time_ns", r->packet_time_ns,
                                "cpu_busy", r->cpu_busy, "loop_bound", r->loop_bound));
  const jct_uroce_stats_t *t = &r->transport;
  json_object_set_new(root, "transport",
                      json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "packets", (json_int_t)t->tx_pkts,
                                "data_packets", (json_int_t)t->tx_data_pkts,
                                "retransmitted_packets", (json_int_t)t->retx_pkts,
                                "retransmitted_bytes", (json_int_t)t->retx_bytes, "naks",
                                (json_int_t)t->rx_naks, "timeouts", (json_int_t)t->timeouts));
  const jct_switch_totals_t *f = &r->fabric;
  json_object_set_new(root, "fabric",
                      json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "frames_in", (json_int_t)f->rx_frames,
                                "frames_out", (json_int_t)f->tx_frames, "drops",
                                (json_int_t)(f->rx_drops + f->tx_drops), "pfc_xoff_sent",
                                (json_int_t)f->tx_pfc_xoff, "ecn_marked", (json_int_t)f->ecn_marked,
                                "harness_losses", (json_int_t)r->harness_losses));
  json_t *drops = json_object();
  for (int k = 1; k < JCT_SW_DROP_NREASONS; k++) /* 0 is "forwarded" */
    json_object_set_new(drops, jct_switch_drop_name(k), json_integer((json_int_t)f->drops[k]));
  json_object_set_new(json_object_get(root, "fabric"), "drops_by_reason", drops);
  json_object_set_new(json_object_get(root, "fabric"), "paused_ns",
                      json_integer((json_int_t)r->paused_ns));
  json_t *injs = json_array();
  for (uint32_t i = 0; i < r->ninjectors; i++) {
    const jct_run_injector_t *in = &r->injectors[i];
    const jct_injector_stats_t *st = &in->stats;
    json_array_append_new(
        injs, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "spec", in->spec, "kind",
                        in->kind, "seed", (json_int_t)in->seed, "seen", (json_int_t)st->seen,
                        "matched", (json_int_t)st->matched, "dropped", (json_int_t)st->dropped,
                        "held", (json_int_t)st->held, "modified", (json_int_t)st->modified,
                        "expedited", (json_int_t)st->expedited, "generated",
                        (json_int_t)st->generated, "hold_ns_total", (json_int_t)st->hold_ns_total));
  }
  json_object_set_new(root, "injectors", injs);
  json_object_set_new(json_object_get(root, "config"), "seed",
                      json_integer((json_int_t)a->run.seed));
  int rc = strcmp(a->json, "-") == 0
               ? json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
               : json_dump_file(root, a->json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (rc) fprintf(stderr, "jctlab run: %s: cannot write\n", a->json);
  return rc ? 1 : 0;
}

int jct_cmd_run(int argc, char **argv) {
  args_t a = {.channels = 1, .reps = 5, .timeout = 20, .retry = 7};
  a.run.rate_bps = 1000000000u;
  a.run.prop_delay_ns = 1000;
  a.run.pfc = true;
  a.run.seed = 1;
  int status = parse(argc, argv, &a);
  if (status >= 0) return status;

  char err[512];
  jct_schedule_t *s;
  int rc = a.synth ? jct_schedule_synth(&s, a.synth, (uint32_t)a.ranks, a.bytes,
                                        (uint32_t)a.channels, err, sizeof err)
                   : jct_schedule_load(&s, a.schedule, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  a.run.schedule = s;
  a.run.reps = (uint32_t)a.reps;
  a.run.inject = a.inject;
  a.run.timeout = (uint8_t)a.timeout;
  a.run.retry_cnt = (uint8_t)a.retry;
  if ((rc = jct_ns_isolate(err, sizeof err))) {
    fprintf(stderr, "jctlab run: %s\n", err);
    jct_schedule_free(s);
    return 1;
  }
  static jct_run_result_t r; /* large: the per-repetition JCTs */
  rc = jct_run(&a.run, &r, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab run: %s\n", err);
    jct_schedule_free(s);
    return rc == JCT_EINVAL ? 2 : 1;
  }
  if (!a.json || strcmp(a.json, "-")) print_table(&a, &r);
  status = a.json ? write_json(&a, &r) : 0;
  if (!r.valid) {
    fprintf(stderr, "jctlab run: invalid run: %s\n", r.invalid_why);
    status = 3;
  }
  jct_schedule_free(s);
  return status;
}
