/* `jctlab replay`: a captured job (a trace, or a schedule) replayed on the
 * emulated fabric K times without faults and K times with them,
 * interleaved, and what the faults cost (include/jctlab/replay.h).
 *
 *   jctlab replay [TRACE|SCHEDULE] [--inject SPEC ...] [--reps K] [--rate R]
 *                 [--scale F] [--seed N] [--json FILE] [--junit FILE]
 *                 [--report DIR] [--pcap-out FILE] [--max-degradation X] [--per-qp]
 *
 * With a trace and no --inject, the faults are the trace's own: every
 * first transmission the capture shows lost becomes a targeted drop of the
 * same message and byte offset (postmortem.c), so `jctlab replay
 * incident.pcap` says what the incident cost.
 *
 * Exit status: 0 within budget (or no budget), 1 budget exceeded or jctlab
 * failed, 2 bad input, 3 invalid run.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "harness/base/interrupt.h"
#include "jctlab/error.h"
#include "jctlab/replay.h"
#include "jctlab/topo.h"
#include "harness/plan/cases.h"
#include "harness/report/output.h"
#include "harness/plan/replay_input.h"
#include "harness/report/result.h"
#include "harness/plan/run_args.h"
#include "harness/base/units.h"

static const char usage_text[] =
    "usage: jctlab replay [TRACE|SCHEDULE] [options]\n"
    "       jctlab replay --synth ALGO --ranks N --bytes SIZE [options]\n"
    "\n"
    "Replay a job on jctlab's emulated fabric K times without faults (baseline) and K\n"
    "times with them (faulted), interleaved B F B F ..., and report what the faults\n"
    "cost: JCT (median, p99, min, max) of both, degradation = faulted / baseline with a\n"
    "95%% bootstrap interval, algbw and busbw, retransmissions, NAKs, timeouts, pause\n"
    "time, drops by injector and by fabric reason, the critical path, and per QP its\n"
    "bandwidth, message completion times and retransmissions (as perftest per test).\n"
    "\n"
    "TRACE is a RoCEv2 capture: its schedule is inferred (see jctlab schedule), and with\n"
    "no --inject its own losses are replayed as targeted drops (a postmortem; a lossless\n"
    "capture replays as it was). The fabric is the captured one (its profile: rate,\n"
    "turnaround, path MTU, NIC queue, timeout) where no option says otherwise, and the\n"
    "report sets the replay beside the capture (fidelity). SCHEDULE is a schedule's JSON\n"
    "(jctlab synth, jctlab schedule), with its profile if it has one. Default: the shipped\n"
    "trace.\n"
    "\n"
    "options:\n"
    "  --synth ALGO --ranks N --bytes SIZE   a generated collective instead (jctlab synth)\n"
    "  --channels C       channels of a generated collective (default 1)\n"
    "  --scale F          multiply every message's size by F (a smaller job, a what-if);\n"
    "                     the report says so and, with --captured-rate, projects the JCTs\n"
    "                     back. Not how to reach real rates: a capture's rate, however\n"
    "                     fast, is replayed by time dilation (--tdf, automatic)\n"
    "  --captured-rate R  the rate the trace was captured at, instead of the measured one:\n"
    "                     the replay's link rate (and so its dilation) when --rate is not given\n"
    "  --max-degradation X  budget: exit 1 when faulted/baseline median exceeds X\n"
    "  --max-jct TIME     budget: exit 1 when the faulted median JCT exceeds TIME\n"
    "  --fidelity-tolerance X  a capture's replay reproduces it when its job time and\n"
    "                     retransmitted packets are within X of the capture's (default\n"
    "                     0.2, i.e. 20%%); otherwise exit 4\n"
    "  --json FILE        the result document ('-': standard output, instead of the table)\n"
    "  --junit FILE       one JUnit testcase for the replay\n"
    "  --report DIR       report.html and report.md with plots (gnuplot)\n"
    "  --per-qp           a row per connection (QP pair) for any number of them: bytes,\n"
    "                     messages, bandwidth, completion p50/p99/max, retransmissions\n"
    "                     (default: shown when there are at most 16)\n"
    "%s"
    "\n"
    "Defaults here: --rate 100mbit (the fastest this machine emulates exactly is about\n"
    "300 Mbit/s per link), --reps 5.\n"
    "\n"
    "exit status: 0 within budget (or none given), 1 budget exceeded (or jctlab failed),\n"
    "2 bad input, 3 invalid run (the harness lost frames, a repetition did not finish, or\n"
    "the event loop rather than the link set the pace: never reported as a result),\n"
    "4 the replay did not reproduce the capture within the tolerance (its baseline is not\n"
    "a counterfactual; the fidelity section names the figures that diverged).\n";

#define bad(...) jct__cmd_bad("replay", __VA_ARGS__)

typedef struct {
  jct__run_args_t r;
  jct__case_args_t o;
  double scale;
  uint64_t captured_rate_bps;
  jct__budget_t budget;
  double fidelity_tolerance; /* 0: the default */
} args_t;

static void usage(void) {
  printf(usage_text, jct__run_args_help);
}

/* The options of replay's own, with their value. */
static int own(void *self, const char *w, const char *v) {
  args_t *a = self;
  if (!strcmp(w, "--scale")) {
    if (jct__parse_number(v, &a->scale) || !(a->scale > 0) || a->scale > 1e6)
      return bad("--scale: '%s' is not a factor > 0", v);
  } else if (!strcmp(w, "--captured-rate")) {
    if (jct__parse_rate_bps(v, &a->captured_rate_bps))
      return bad("--captured-rate: '%s' is not a rate", v);
  } else if (!strcmp(w, "--max-degradation")) {
    if (jct__parse_number(v, &a->budget.max_degradation) || !(a->budget.max_degradation >= 1))
      return bad("--max-degradation: '%s' is not a ratio >= 1", v);
  } else if (!strcmp(w, "--fidelity-tolerance")) {
    size_t n = strlen(v);
    char num[64];
    bool pct = n && v[n - 1] == '%';
    snprintf(num, sizeof num, "%.*s", (int)(pct ? n - 1 : n), v);
    if (n >= sizeof num || jct__parse_number(num, &a->fidelity_tolerance) ||
        !(a->fidelity_tolerance > 0))
      return bad("--fidelity-tolerance: '%s' is not a fraction > 0 (0.2, 20%%)", v);
    if (pct) a->fidelity_tolerance /= 100;
  } else if (!strcmp(w, "--max-jct")) {
    if (jct__parse_time_ns(v, &a->budget.max_jct_ns) || !a->budget.max_jct_ns)
      return bad("--max-jct: '%s' is not a time (2s, 500ms)", v);
  } else {
    return 0;
  }
  return 1;
}

static int parse(int argc, char **argv, args_t *a) {
  const jct__case_cmd_t cmd = {.prog = "replay",
                               .what = "input",
                               .usage = usage,
                               .unknown_hint = "",
                               .fabric = &a->r,
                               .own = own,
                               .self = a};
  int status = jct__case_args_read(&a->o, &cmd, argc, argv);
  if (status >= 0) return status;
  if (a->r.synth && (a->o.input || a->r.schedule))
    return bad("give a trace, a schedule or --synth, not two");
  if (a->r.synth && (!a->r.ranks || !a->r.bytes)) return bad("--synth needs --ranks and --bytes");
  if (a->r.schedule && a->o.input) return bad("give a trace or a schedule, not both");
  if (a->budget.max_degradation > 0 && a->budget.max_jct_ns)
    return bad("a second budget: give --max-degradation or --max-jct, not both");
  if (jct__capture_opts_check(&a->r.run, "replay")) return 2;
  return -1;
}

int jct__cmd_replay(int argc, char **argv) {
  args_t a = {.scale = 1};
  jct__run_args_init(&a.r, 100000000u);
  int status = parse(argc, argv, &a);
  if (status >= 0) return status;
  jct__run_args_finish(&a.r);

  char err[512];
  jct__replay_input_t in;
  int rc = jct__replay_input_load(&in, &a.r, a.o.input ? a.o.input : a.r.schedule, a.scale, err,
                                  sizeof err);
  if (rc) {
    fprintf(stderr, "jctlab replay: %s\n", err);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  jct_run_opts_t *o = &a.r.run;
  o->schedule = in.schedule;
  in.captured_rate_bps = a.captured_rate_bps;
  if ((rc = jct__replay_input_fabric(&in, a.r.user_set, o, err, sizeof err))) {
    fprintf(stderr, "jctlab replay: %s: %s\n", in.source, err);
    jct__replay_input_free(&in);
    return rc == JCT_ENOMEM ? 1 : 2;
  }
  /* A postmortem: the trace's own losses. A lossless capture replays as it
   * was: the baseline, and its fidelity. */
  bool postmortem = !o->ninject && in.nfaults;
  bool lossless = !o->ninject && !in.nfaults && in.have_capture;
  if (!o->ninject && !postmortem && !lossless) {
    jct__replay_input_free(&in);
    return bad("nothing to inject: give --inject SPEC (the input has no losses of its own)");
  }
  if (o->ninject) { /* the captured go-backs are the capture's, not the user's faults' */
    o->go_backs = NULL;
    o->ngo_backs = 0;
  } /* a lossless capture keeps its timer go-backs: its hosts', nothing lost */
  /* The injectors: the user's or the trace's losses, then (in the lab) the
   * trace's hosts' transmit stalls, held in every case and repetition. */
  uint32_t nlosses = postmortem ? in.nfaults : o->ninject, nspecs;
  const char **specs = jct__replay_input_specs(&in, postmortem, postmortem ? NULL : o->inject,
                                               postmortem ? 0 : o->ninject, &nspecs, o);
  if (!specs || nspecs > JCT_RUN_MAX_INJECTORS) {
    free(specs);
    jct__replay_input_free(&in);
    if (!specs) {
      fprintf(stderr, "jctlab replay: out of memory\n");
      return 1;
    }
    return bad("%u injectors with the trace's %u transmit stall and %u timer go-back specs: at "
               "most %u",
               nlosses, in.nstall_specs, in.nhost_specs - in.nstall_specs, JCT_RUN_MAX_INJECTORS);
  }
  /* What every case holds of the capture's hosts (the lab's stall and timeout specs). */
  bool late_acks = in.nhost_specs > in.nstall_specs;
  const char *held = in.nstall_specs && late_acks ? "its hosts' transmit stalls and late ACKs held"
                     : in.nstall_specs            ? "its hosts' transmit stalls held"
                     : late_acks                  ? "its hosts' late ACKs held"
                                                  : "";
  o->inject = specs;
  o->ninject = nspecs;
  /* One case, or one per value of a sweep ('drop p=[0, 1e-4, 1e-3]'). */
  char key[64];
  jct__sweep_point_t *pts = NULL;
  uint32_t npts = 0;
  json_t *doc = NULL;
  jct__case_t *cases = NULL;
  char(*names)[300] = NULL;
  if ((rc = jct__sweep_expand(o->inject, o->ninject, &pts, &npts, key, sizeof key, err,
                              sizeof err))) {
    fprintf(stderr, "jctlab replay: %s\n", err);
    status = rc == JCT_ENOMEM ? 1 : 2;
    goto out;
  }
  cases = calloc(npts, sizeof *cases);
  names = calloc(npts, sizeof *names);
  jct__result_input_t ri = {.source = in.source,
                            .kind = in.kind,
                            .pattern = in.pattern[0] ? in.pattern : NULL,
                            .scale = a.scale,
                            .captured_rate_bps = a.captured_rate_bps,
                            .replay_profile = in.replay_profile};
  doc = jct__result_new("replay", o, &ri);
  if (!cases || !names || !doc) {
    fprintf(stderr, "jctlab replay: out of memory\n");
    status = 1;
    goto out;
  }
  if (postmortem || lossless) { /* the capture is what the replay must reproduce */
    ri.capture = &in.capture;
    ri.fidelity_tolerance = a.fidelity_tolerance;
  }
  for (uint32_t i = 0; i < npts; i++) {
    jct__case_t *c = &cases[i];
    c->opts = *o;
    c->opts.inject = (const char *const *)pts[i].specs;
    c->opts.watch_losses = postmortem || lossless; /* the fidelity's loss recovery */
    if (pts[i].value_text)
      snprintf(names[i], sizeof names[i], "%s=%s", key, pts[i].value_text);
    else if (postmortem)
      snprintf(names[i], sizeof names[i],
               "the trace's own losses (%llu packets, %llu of them re-sent copies)%s%s",
               (unsigned long long)in.lost_packets, (unsigned long long)in.lost_retransmissions,
               held[0] ? ", " : "", held);
    else if (lossless)
      snprintf(names[i], sizeof names[i], "the capture as it was (lossless, %s)",
               held[0] ? held : "no injector");
    else
      snprintf(names[i], sizeof names[i], "%s%s", pts[i].specs[0], o->ninject > 1 ? " + ..." : "");
    c->meta = (jct__case_meta_t){.name = names[i],
                                 .inject = c->opts.inject,
                                 .ninject = o->ninject,
                                 .sweep_key = pts[i].value_text ? key : NULL,
                                 .sweep_value = pts[i].value,
                                 .budget = a.budget,
                                 .fidelity = postmortem || lossless,
                                 .lossless = lossless};
  }
  if (jct__capture_names_ok(o, npts, "replay")) { /* one ring of files per case */
    status = 2;
    goto out;
  }
  /* --agents: the hosts are reached over this host's own network. */
  if (!o->agents && (rc = jct_ns_isolate(err, sizeof err))) {
    fprintf(stderr, "jctlab replay: %s\n", err);
    status = 1;
    goto out;
  }
  jct__interrupt_install(); /* a first SIGINT ends the run cleanly */
  jct__case_tally_t tally = {0};
  if ((rc = jct__run_cases(doc, &ri, cases, npts, &tally, err, sizeof err))) {
    fprintf(stderr, "jctlab replay: %s\n", err);
    status = rc == JCT_EINVAL ? 2 : 1;
    goto out;
  }
  jct__cases_mark_interrupted(doc);
  status = jct__output_result(doc, a.o.json, a.o.junit, a.o.report, "replay", a.o.per_qp);
  if (status == 0) status = jct__cases_status(&tally);
  status = jct__cases_interrupted("replay", status);
out:
  json_decref(doc);
  free(cases);
  free(names);
  jct__sweep_free(pts, npts, o->ninject);
  free(specs);
  jct__replay_input_free(&in);
  return status;
}
