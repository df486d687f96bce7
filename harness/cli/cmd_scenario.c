/* `jctlab run SCENARIO.yaml`: every fault case of a scenario file
 * (scenario.h) replayed against its own baseline, judged against its
 * budget, and reported (terminal, --json, --junit, --report).
 *
 * Exit status: 0 every case within budget, 1 a budget exceeded, 2 bad
 * input (the file, a spec, an option), 3 an invalid run (never reported as
 * a result; wins over 1), 4 a case of the capture's own losses that did
 * not reproduce the capture (fidelity.h; wins over 1), 1 also when jctlab
 * failed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/plan/cases.h"
#include "commands.h"
#include "harness/base/interrupt.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"
#include "harness/report/output.h"
#include "harness/plan/replay_input.h"
#include "harness/plan/run_args.h"
#include "harness/plan/scenario.h"
#include "harness/base/units.h"

static const char usage_text[] =
    "usage: jctlab run SCENARIO.yaml [--json FILE] [--junit FILE] [--report DIR]\n"
    "                                [--reps K] [--seed N] [--tdf F] [--fault-log FILE]\n"
    "                                [--pcap-out FILE [-s N] [-C SIZE [-W N]]] [--per-qp]\n"
    "\n"
    "Run a scenario file: its job (a trace, a schedule or a generated collective) on\n"
    "the emulated fabric, each fault case as K baseline and K faulted repetitions,\n"
    "interleaved, judged against the case's budget (max_degradation, max_jct).\n"
    "suites/scenarios/README.md documents the format; suites/scenarios/ has examples.\n"
    "\n"
    "  --json FILE    the result document ('-': standard output, instead of the table)\n"
    "  --junit FILE   one JUnit testcase per fault case\n"
    "  --report DIR   report.html and report.md with plots\n"
    "  --per-qp       the per-QP table for any number of connections (default: up to 16)\n"
    "  --reps K       repetitions per side, instead of the file's\n"
    "  --transport T, --device D, --device-port N, --gid-index N, --traffic-class N,\n"
    "  --counters LIST   instead of the file's (jctlab run's words)\n"
    "  --seed N       the seed, instead of the file's\n"
    "  --tdf F        time dilation F (jctlab run's --tdf), instead of the file's tdf or the\n"
    "                 one jctlab would choose, for every case\n"
    "  --silent-after TIME  jctlab rank: a task unheard of this long makes the run invalid,\n"
    "                 instead of the file's silent_after (default 1.5s)\n"
    "  --fault-log F  every injector action as a JSON line (per case: F-caseK.ext)\n"
    "  --pcap-out F   what crossed the switch, as a capture (per case: F-caseK.ext)\n"
    "  --pcap-port L  the capture holds one link: a rank's (3) or leaf1:spine0\n"
    "  -s N           keep the first N bytes of each frame in it, as tcpdump -s\n"
    "  -C SIZE        rotate it as tcpdump -C: a new file past SIZE (millions of bytes, or\n"
    "                 with its unit: 500KB, 10MiB), named F-caseK.ext, F-caseK.ext1, ...\n"
    "  -W N           with -C: at most N files per case, the oldest written over (tcpdump -W)\n"
    "\n"
    "exit status: 0 every case within budget, 1 a budget exceeded, 2 bad input,\n"
    "3 an invalid run (the harness lost frames, a repetition did not finish, or the\n"
    "event loop set the pace), 4 a case of the trace's own losses did not reproduce the\n"
    "capture within 20%% (job time, retransmitted packets: its fidelity section).\n";

#define bad(...) jct__cmd_bad(h->prog, __VA_ARGS__)

bool jct__is_scenario_arg(const char *arg) {
  size_t n = strlen(arg);
  return (n > 5 && strcmp(arg + n - 5, ".yaml") == 0) ||
         (n > 4 && strcmp(arg + n - 4, ".yml") == 0);
}

typedef struct {
  jct__case_args_t o; /* o.input: the scenario file */
  uint64_t reps, seed;
  double tdf;               /* --tdf: over the file's tdf (0: not given) */
  uint64_t silent_after_ns; /* --silent-after: over the file's silent_after */
  bool have_reps, have_seed;
  const char *fault_log, *pcap_out, *pcap_port;
  jct_run_opts_t cap; /* -s, -C, -W (and pcap_out, for their checks) */
  jct_rdma_opts_t rdma; /* --device, --gid-index ...: over the file's */
  jct_transport_t transport;
  bool have_transport;
  const jct__scenario_hooks_t *h;
} args_t;

static void usage(void) {
  fputs(usage_text, stdout);
}

/* What a scenario's command line may override (--reps, --seed, --tdf,
 * --silent-after) or add
 * (the fault log and the capture, as run's). */
static int own(void *self, const char *w, const char *v) {
  args_t *a = self;
  const jct__scenario_hooks_t *h = a->h;
  int got = jct__capture_opt_parse(&a->cap, w, v, h->prog); /* -s, -C, -W */
  if (!got) got = jct__rdma_opt_parse(&a->rdma, h->prog, w, v);
  if (got) return got;
  if (!strcmp(w, "--transport")) {
    if (jct__transport_parse(v, &a->transport))
      return bad("--transport: '%s' is not uroce or verbs", v);
    a->have_transport = true;
  } else if (!strcmp(w, "--reps")) {
    if (jct__parse_count(v, JCT_RUN_MAX_REPS, &a->reps) || !a->reps)
      return bad("--reps: '%s' is not 1 to %u", v, JCT_RUN_MAX_REPS);
    a->have_reps = true;
  } else if (!strcmp(w, "--seed")) {
    if (jct__parse_count(v, UINT64_MAX, &a->seed)) return bad("--seed: '%s' is not a number", v);
    a->have_seed = true;
  } else if (!strcmp(w, "--tdf")) {
    /* As run's: a loop-bound case's advice is a higher --tdf. */
    if (jct__parse_number(v, &a->tdf) || !(a->tdf >= 1 && a->tdf <= JCT_CLOCK_MAX_TDF))
      return bad("--tdf: '%s' is not a factor from 1 to 1048576", v);
  } else if (!strcmp(w, "--silent-after")) {
    if (jct__parse_time_ns(v, &a->silent_after_ns) || a->silent_after_ns < JCT_RUN_SILENT_AFTER_MIN_NS)
      return bad("--silent-after: '%s' is not a time of 200ms or more (1.5s, 5s)", v);
  } else if (!strcmp(w, "--pcap-port")) {
    if (a->pcap_port) return bad("--pcap-port given twice ('%s' and '%s')", a->pcap_port, v);
    a->pcap_port = a->cap.pcap_port = v;
  } else if (!strcmp(w, "--fault-log") || !strcmp(w, "--pcap-out")) {
    const char **dst = w[2] == 'f' ? &a->fault_log : &a->pcap_out;
    if (*dst) return bad("%s given twice ('%s' and '%s')", w, *dst, v);
    if (w[2] == 'f' ? jct__cmd_output_ok(h->prog, w, v) : jct__cmd_writable(h->prog, w, v))
      return 2;
    *dst = v;
  } else {
    return 0;
  }
  return 1;
}

/* The scenario's job, through the same loader as `jctlab replay`: in the
 * lab (lab: N, not under `jctlab rank`'s world) a trace's transmit stalls
 * become stall specs, as the replay's. */
static int load_input(const jct__scenario_t *sc, const jct__scenario_hooks_t *h,
                      jct__replay_input_t *in, char *err, size_t errlen) {
  jct__run_args_t ra;
  jct__run_args_init(&ra, sc->run.rate_bps);
  ra.run.path_mtu_bytes = sc->run.path_mtu_bytes;
  ra.run.transport = sc->run.transport; /* a trace's losses are targeted per transport */
  ra.run.lab_ranks = h->world ? 0 : sc->run.lab_ranks;
  ra.run.agents = sc->run.agents;
  ra.qps_per_conn = sc->qps_per_conn;
  if (sc->source == JCT_SCEN_SYNTH) {
    ra.synth = sc->synth.algorithm;
    ra.ranks = sc->synth.ranks;
    ra.bytes = sc->synth.bytes;
    ra.channels = sc->synth.channels ? sc->synth.channels : 1;
  }
  return jct__replay_input_load(in, &ra, sc->input, sc->scale > 0 ? sc->scale : 1, err, errlen);
}

/* The case's specs: the trace's own losses first when asked, then its own,
 * then in the lab the trace's transmit stalls (jct__replay_input_specs). */
static const char **case_specs(const jct__scenario_case_t *c, const jct__replay_input_t *in,
                               jct_run_opts_t *o) {
  return jct__replay_input_specs(in, c->trace_faults, (const char *const *)c->inject, c->ninject,
                                 &o->ninject, o);
}

/* The command line's RDMA settings over the file's: each one given wins;
 * --counters replaces the file's list. */
static void merge_rdma(jct_rdma_opts_t *file, const jct_rdma_opts_t *cl) {
  if (cl->device[0]) memcpy(file->device, cl->device, sizeof file->device);
  if (cl->port) file->port = cl->port;
  if (cl->has_gid_index) file->has_gid_index = true, file->gid_index = cl->gid_index;
  if (cl->has_traffic_class) file->has_traffic_class = true, file->traffic_class = cl->traffic_class;
  if (cl->ncounters) {
    file->ncounters = cl->ncounters;
    memcpy(file->counters, cl->counters, sizeof file->counters);
  }
}

int jct__cmd_run_scenario(int argc, char **argv) {
  const jct__scenario_hooks_t h = {.prog = "run"};
  return jct__scenario_cmd(argc, argv, &h);
}

int jct__scenario_cmd(int argc, char **argv, const jct__scenario_hooks_t *h) {
  args_t a = {.h = h};
  const char *prog = h->prog;
  const jct__case_cmd_t cmd = {.prog = prog,
                               .what = "scenario",
                               .usage = usage,
                               .unknown_hint = " for a scenario",
                               .own = own,
                               .self = &a};
  int status = jct__case_args_read(&a.o, &cmd, argc, argv);
  if (status >= 0) return status;
  const char *path = a.o.input;
  if (!path) return bad("no scenario file");
  a.cap.pcap_out = a.pcap_out;
  if (jct__capture_opts_check(&a.cap, prog)) return 2;
  char err[768];
  jct__scenario_t *sc = NULL;
  int rc = jct__scenario_load(&sc, path, err, sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab %s: %s\n", prog, err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  if (a.have_transport) sc->run.transport = a.transport;
  merge_rdma(&sc->run.rdma, &a.rdma);
  if (sc->run.transport == JCT_TRANSPORT_VERBS && !sc->run.lab_ranks && !h->world) {
    fprintf(stderr, "jctlab run: %s: transport verbs needs 'lab: N' (soft-RoCE VMs)\n", path);
    jct__scenario_free(sc);
    return 2;
  }
  if (a.have_reps) sc->run.reps = (uint32_t)a.reps;
  if (a.have_seed) sc->run.seed = a.seed;
  if (a.tdf > 0) sc->run.tdf = a.tdf; /* before the capture's profile: the user's, as --tdf */
  jct__replay_input_t in;
  if ((rc = load_input(sc, h, &in, err, sizeof err))) {
    fprintf(stderr, "jctlab %s: %s: %s\n", prog, path, err);
    jct__scenario_free(sc);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  if ((rc = jct__replay_input_fabric(&in, sc->user_set, &sc->run, err, sizeof err))) {
    fprintf(stderr, "jctlab %s: %s: %s\n", prog, path, err);
    jct__replay_input_free(&in);
    jct__scenario_free(sc);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  jct__case_t *cases = calloc(sc->ncases, sizeof *cases);
  const char ***specs = calloc(sc->ncases, sizeof *specs);
  json_t *doc = NULL;
  status = 1;
  if (!cases || !specs) goto out;
  for (uint32_t i = 0; i < sc->ncases; i++) {
    const jct__scenario_case_t *sc_case = &sc->cases[i];
    jct__case_t *c = &cases[i];
    jct__scenario_case_opts(sc, sc_case, &c->opts);
    c->opts.schedule = in.schedule;
    if (!sc_case->trace_faults || sc_case->ninject) { /* the captured go-backs: its losses' only */
      c->opts.go_backs = NULL;
      c->opts.ngo_backs = 0;
    }
    c->opts.fault_log = a.fault_log;
    c->opts.pcap_out = a.pcap_out;
    c->opts.pcap_port = a.pcap_port;
    c->opts.pcap_snaplen_bytes = a.cap.pcap_snaplen_bytes;
    c->opts.pcap_file_bytes = a.cap.pcap_file_bytes;
    c->opts.pcap_files = a.cap.pcap_files;
    c->opts.world = h->world;
    if (a.silent_after_ns) c->opts.silent_after_ns = a.silent_after_ns;
    if (sc_case->trace_faults && !in.nfaults)
      fprintf(stderr, "jctlab %s: case '%s': the trace shows no losses to replay\n", prog,
              sc_case->name);
    if (!(specs[i] = case_specs(sc_case, &in, &c->opts))) goto out;
    c->opts.inject = specs[i];
    c->meta = (jct__case_meta_t){.name = sc_case->name,
                                 .inject = specs[i],
                                 .ninject = c->opts.ninject,
                                 .sweep_key = sc_case->sweep_key,
                                 .sweep_value = sc_case->sweep_value,
                                 .budget = sc_case->budget,
                                 .fidelity = in.have_capture && sc_case->trace_faults &&
                                             !sc_case->ninject};
    /* Its fidelity's figures on the switch's wire, as `jctlab replay`'s:
     * loss recovery and go-back depth, and on verbs the NAKs and timeouts. */
    c->opts.watch_losses = c->meta.fidelity;
  }
  if (jct__capture_names_ok(&a.cap, sc->ncases, prog)) { /* one ring of files per case */
    status = 2;
    goto out;
  }
  if (h->ready) {
    jct_run_opts_t *all = calloc(sc->ncases, sizeof *all);
    if (!all) goto out;
    for (uint32_t i = 0; i < sc->ncases; i++)
      all[i] = cases[i].opts;
    status = h->ready(h->ctx, path, sc->run.lab_ranks, all, sc->ncases);
    free(all);
    if (status >= 0) goto out;
    status = 1;
  }
  jct_run_opts_t first = cases[0].opts; /* the document's fabric line */
  jct__result_input_t ri = {.source = sc->input ? sc->input : in.source,
                            .kind = in.kind,
                            .pattern = in.pattern[0] ? in.pattern : NULL,
                            .scale = sc->scale > 0 ? sc->scale : 1,
                            .captured_rate_bps = sc->captured_rate_bps,
                            .capture = in.have_capture ? &in.capture : NULL,
                            .replay_profile = in.replay_profile};
  if (!(doc = jct__result_new(prog, &first, &ri))) goto out;
  json_object_set_new(
      doc, "scenario",
      json_pack("{s:s,s:s,s:s?}", "path", path, "name", sc->name, "description", sc->description));
  if ((rc = jct_ns_isolate(err, sizeof err))) {
    fprintf(stderr, "jctlab %s: %s\n", prog, err);
    goto out;
  }
  jct__interrupt_install(); /* a first SIGINT ends the run cleanly */
  jct__case_tally_t tally = {0};
  if ((rc = jct__run_cases(doc, &ri, cases, sc->ncases, &tally, err, sizeof err))) {
    fprintf(stderr, "jctlab %s: %s: %s\n", prog, path, err);
    status = rc == JCT_EINVAL ? 2 : 1;
    goto out;
  }
  jct__cases_mark_interrupted(doc);
  if (h->on_doc) h->on_doc(h->ctx, doc);
  status = jct__output_result(doc, a.o.json, a.o.junit, a.o.report, prog, a.o.per_qp);
  if (status == 0) status = jct__cases_status(&tally);
  status = jct__cases_interrupted(prog, status);
  fprintf(stderr,
          "jctlab %s: %s: cases within budget %u, over budget %u, invalid %u, without a "
          "budget %u; captures not reproduced %u\n",
          prog, path, tally.pass, tally.fail, tally.invalid, tally.none, tally.unreproduced);
out:
  json_decref(doc);
  if (specs)
    for (uint32_t i = 0; i < sc->ncases; i++)
      free(specs[i]);
  free(specs);
  free(cases);
  jct__replay_input_free(&in);
  jct__scenario_free(sc);
  return status;
}
