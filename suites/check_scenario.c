/* Scenario files and JUnit output (harness/plan/scenario.h,
 * harness/report/junit.h):
 *   - every scenario shipped in suites/scenarios/ loads, with the fields
 *     its file says (source, fabric, cases, budgets, overrides);
 *   - sweeps expand into one case per value, named "NAME key=VALUE", with
 *     the value as a number; positional lists, quoted brackets and a
 *     libpcap filter's "udp[8]" are told apart; two lists, empty values
 *     and too many cases are errors;
 *   - every class of bad input gives "FILE:LINE:COL: what is wrong" at the
 *     node at fault, with JCT_EINVAL (bad YAML files written into the
 *     runner's TMPDIR);
 *   - a scenario cut at every byte never crashes the loader;
 *   - the JUnit document parses back (a small XML reader here): one
 *     testcase per case, failure and error elements for exceeded budgets
 *     and invalid runs, counts that add up, names escaped and restored. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "harness/orch/names.h"
#include "harness/plan/scenario.h"
#include "harness/report/junit.h"
#include "harness/report/result.h"
#include "jctlab/error.h"
#include "suites.h"
#include "testkit.h"

#define SCEN_DIR JCT_SOURCE_DIR "/suites/scenarios/"

static jct__scenario_t *load_ok(const char *path) {
  jct__scenario_t *s;
  char err[512] = "";
  int rc = jct__scenario_load(&s, path, err, sizeof err);
  ck_assert_msg(rc == 0, "%s: %s", path, err);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* A scenario written to a file of its own in TMPDIR. */
static void write_tmp(char *path, size_t len, const char *text) {
  craft_tmpname(path, len, ".yaml");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
}

static jct__scenario_t *load_text(const char *text) {
  char path[512];
  write_tmp(path, sizeof path, text);
  jct__scenario_t *s = load_ok(path);
  unlink(path);
  return s;
}

/* Load text and expect JCT_EINVAL with "PATH:LINE:COL: " then want. */
static void load_bad(const char *text, int line, int col, const char *want) {
  char path[512], err[1024] = "", prefix[600];
  write_tmp(path, sizeof path, text);
  jct__scenario_t *s = (jct__scenario_t *)1;
  int rc = jct__scenario_load(&s, path, err, sizeof err);
  unlink(path);
  ck_assert_msg(rc == JCT_EINVAL, "expected an error (%s), got %d: %s", want, rc, err);
  ck_assert_ptr_null(s);
  snprintf(prefix, sizeof prefix, "%s:%d:%d: ", path, line, col);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'", err,
                prefix);
  ck_assert_msg(strstr(err, want), "'%s' does not say '%s'", err, want);
}

#define SYNTH "synth: {algorithm: ring, ranks: 4, bytes: 64KiB}\n"

/* ---- the shipped scenarios ---- */

START_TEST(shipped_loss_sweep) {
  jct__scenario_t *s = load_ok(SCEN_DIR "ring-loss-sweep.yaml");
  ck_assert_str_eq(s->name, "ring-loss-sweep");
  ck_assert_int_eq(s->source, JCT_SCEN_SYNTH);
  ck_assert_str_eq(s->synth.algorithm, "ring");
  ck_assert_uint_eq(s->synth.ranks, 8);
  ck_assert_uint_eq(s->synth.bytes, 1u << 20);
  ck_assert_uint_eq(s->synth.channels, 1);
  ck_assert_ptr_null(s->input);
  ck_assert_uint_eq(s->run.rate_bps, 50000000u);
  ck_assert_uint_eq(s->run.prop_delay_ns, 1000);
  ck_assert(!s->run.pfc);
  ck_assert_uint_eq(s->run.timeout, 14);
  ck_assert_uint_eq(s->run.retry_cnt, 7);
  ck_assert_uint_eq(s->run.reps, 5);
  ck_assert_uint_eq(s->run.seed, 1);
  ck_assert(s->scale == 1);
  ck_assert_int_eq(s->run.transport, JCT_TRANSPORT_UROCE);
  static const char *const names[] = {"loss p=0", "loss p=1e-4", "loss p=1e-3", "loss p=1e-2"};
  static const char *const specs[] = {"drop p=0", "drop p=1e-4", "drop p=1e-3", "drop p=1e-2"};
  static const double values[] = {0, 1e-4, 1e-3, 1e-2};
  ck_assert_uint_eq(s->ncases, 4);
  for (uint32_t i = 0; i < 4; i++) {
    const jct__scenario_case_t *c = &s->cases[i];
    ck_assert_str_eq(c->name, names[i]);
    ck_assert_uint_eq(c->ninject, 1);
    ck_assert_str_eq(c->inject[0], specs[i]);
    ck_assert_str_eq(c->sweep_key, "p");
    ck_assert(c->sweep_value == values[i]);
    ck_assert(c->budget.max_degradation == 1.5);
    ck_assert_uint_eq(c->budget.max_jct_ns, 0);
    ck_assert(!c->pfc && !c->trace_faults);
    ck_assert_uint_eq(c->line, 21);
  }
  jct_run_opts_t o = {0};
  jct__scenario_case_opts(s, &s->cases[2], &o);
  ck_assert_uint_eq(o.rate_bps, 50000000u);
  ck_assert_uint_eq(o.reps, 5);
  ck_assert_uint_eq(o.timeout, 14);
  ck_assert_uint_eq(o.retry_cnt, 7);
  ck_assert(!o.pfc && !o.ecn && !o.pfc_watchdog);
  ck_assert_uint_eq(o.ninject, 1);
  ck_assert_str_eq(o.inject[0], "drop p=1e-3");
  jct__scenario_free(s);
}
END_TEST

START_TEST(shipped_pause_storm) {
  jct__scenario_t *s = load_ok(SCEN_DIR "pause-storm.yaml");
  ck_assert(s->run.pfc);
  ck_assert_uint_eq(s->ncases, 2);
  ck_assert_str_eq(s->cases[0].name, "storm without watchdog");
  ck_assert_str_eq(s->cases[1].name, "storm with watchdog");
  ck_assert_int_eq(s->cases[0].pfc_watchdog, JCT_WATCHDOG_OFF);
  ck_assert_int_eq(s->cases[1].pfc_watchdog, JCT_WATCHDOG_DROP);
  for (int i = 0; i < 2; i++) {
    ck_assert(s->cases[i].pfc);
    ck_assert_uint_eq(s->cases[i].budget.max_jct_ns, 2000000000u);
    ck_assert(s->cases[i].budget.max_degradation == 0);
    ck_assert_ptr_null(s->cases[i].sweep_key);
    ck_assert(strncmp(s->cases[i].inject[0], "pause prio=3", 12) == 0);
  }
  jct_run_opts_t o = {0};
  jct__scenario_case_opts(s, &s->cases[1], &o);
  ck_assert(o.pfc && o.pfc_watchdog && !o.watchdog_forward);
  jct__scenario_case_opts(s, &s->cases[0], &o);
  ck_assert(!o.pfc_watchdog);
  jct__scenario_free(s);
}
END_TEST

START_TEST(shipped_delay_jitter) {
  jct__scenario_t *s = load_ok(SCEN_DIR "delay-jitter.yaml");
  ck_assert_uint_eq(s->ncases, 4);
  ck_assert_str_eq(s->cases[1].inject[0], "delay 50us jitter=10us dist=normal");
  for (uint32_t i = 0; i < s->ncases; i++) {
    ck_assert_ptr_null(s->cases[i].sweep_key);
    ck_assert(s->cases[i].sweep_value == 0);
    ck_assert(s->cases[i].budget.max_degradation == (i == 3 ? 1.6 : 1.2));
  }
  jct__scenario_free(s);
}
END_TEST

/* The incast pair: the same job without and with DCQCN; a case may set
 * its own cc, and auto follows ecn. Bad words are refused where written. */
START_TEST(shipped_incast_and_cc) {
  jct__scenario_t *s = load_ok(SCEN_DIR "incast-pfc.yaml");
  ck_assert_str_eq(s->synth.algorithm, "incast");
  ck_assert(s->run.pfc && s->run.ecn);
  jct_run_opts_t o = {0};
  jct__scenario_case_opts(s, &s->cases[0], &o);
  ck_assert_int_eq(jct_run_cc(&o), JCT_CC_NONE);
  jct__scenario_free(s);
  s = load_ok(SCEN_DIR "incast-dcqcn.yaml");
  jct__scenario_case_opts(s, &s->cases[0], &o);
  ck_assert_int_eq(jct_run_cc(&o), JCT_CC_DCQCN);
  ck_assert_int_eq(o.cc_profile, JCT_DCQCN_PAPER);
  ck_assert(o.cc_dilation == 0); /* auto */
  jct__scenario_free(s);

  s = load_text(SYNTH "ecn: true\ncc_dilation: 8\ncases:\n  - inject: [\"drop p=0\"]\n"
                      "  - inject: [\"drop p=0.1\"]\n    cc: none\n");
  jct__scenario_case_opts(s, &s->cases[0], &o);
  ck_assert_int_eq(jct_run_cc(&o), JCT_CC_DCQCN); /* auto: ecn is on */
  ck_assert(o.cc_dilation == 8);
  jct__scenario_case_opts(s, &s->cases[1], &o);
  ck_assert_int_eq(jct_run_cc(&o), JCT_CC_NONE);
  jct__scenario_free(s);
  load_bad(SYNTH "cc: reno\ncases: [{inject: \"drop p=0.1\"}]\n", 2, 5,
           "cc: 'reno' is not none or dcqcn");
  load_bad(SYNTH "cc_profile: cx7\ncases: [{inject: \"drop p=0.1\"}]\n", 2, 13,
           "cc_profile: 'cx7' is not connectx or paper");
  load_bad(SYNTH "cc_dilation: 0.5\ncases: [{inject: \"drop p=0.1\"}]\n", 2, 14,
           "cc_dilation: 0.5 is not auto or a factor");
}
END_TEST

START_TEST(shipped_postmortem) {
  jct__scenario_t *s = load_ok(SCEN_DIR "postmortem.yaml");
  ck_assert_int_eq(s->source, JCT_SCEN_TRACE);
  char *want = realpath(JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap", NULL);
  ck_assert_ptr_nonnull(want);
  ck_assert_str_eq(s->input, want);
  free(want);
  ck_assert_uint_eq(s->ncases, 4); /* the trace's losses, then a sweep of three */
  ck_assert(s->cases[0].trace_faults);
  ck_assert_uint_eq(s->cases[0].ninject, 0);
  ck_assert(s->cases[0].budget.max_degradation == 1.5);
  ck_assert(!s->cases[1].trace_faults);
  ck_assert_str_eq(s->cases[1].inject[0], "drop p=0.1%");
  ck_assert_str_eq(s->cases[3].inject[0], "drop p=2%");
  ck_assert_double_eq_tol(s->cases[2].sweep_value, 0.01, 1e-12);
  ck_assert(s->cases[3].budget.max_degradation == 2.0);
  jct__scenario_free(s);
}
END_TEST

/* Defaults, every key, and the names a scenario and a case get by default. */
/* lab: N means the lab's soft-RoCE VMs, whose ranks run verbs: without a
 * transport: key it is verbs (it once ran uroce silently), and transport:
 * uroce beside it is refused at the transport's value. */
START_TEST(lab_means_verbs) {
  jct__scenario_t *s = load_text(SYNTH "lab: 4\ncases: [{inject: \"drop p=0.1\"}]\n");
  ck_assert_int_eq(s->run.transport, JCT_TRANSPORT_VERBS);
  ck_assert_uint_eq(s->run.lab_ranks, 4);
  jct__scenario_free(s);
  s = load_text(SYNTH "cases: [{inject: \"drop p=0.1\"}]\n");
  ck_assert_int_eq(s->run.transport, JCT_TRANSPORT_UROCE);
  jct__scenario_free(s);
  load_bad(SYNTH "transport: uroce\nlab: 4\ncases: [{inject: \"drop p=0.1\"}]\n", 2, 12,
           "run verbs, not uroce");
}
END_TEST

/* The verbs transport's RDMA settings: parsed, their form checked with
 * the bad word and its place named, and echoed in the result's "fabric"
 * (no RDMA device needed: each agent checks them against its own). */
START_TEST(rdma_keys) {
  jct__scenario_t *s = load_text(SYNTH "lab: 4\ndevice: mlx5_1\nport: 2\ngid_index: 3\n"
                                       "traffic_class: 106\n"
                                       "counters: [np_cnp_sent, rp_cnp_handled]\n"
                                       "cases: [{inject: \"drop p=0.1\"}]\n");
  const jct_rdma_opts_t *r = &s->run.rdma;
  ck_assert_str_eq(r->device, "mlx5_1");
  ck_assert_uint_eq(r->port, 2);
  ck_assert(r->has_gid_index && r->gid_index == 3);
  ck_assert(r->has_traffic_class && r->traffic_class == 106);
  ck_assert_uint_eq(r->ncounters, 2);
  ck_assert_str_eq(r->counters[1], "rp_cnp_handled");
  /* Echoed: the result's fabric says what the agents were given. */
  jct_run_opts_t o = s->run;
  jct_schedule_t *sch;
  char err[256];
  ck_assert_int_eq(jct_schedule_synth(&sch, "ring", 4, 65536, 1, err, sizeof err), 0);
  o.schedule = sch;
  jct__result_input_t in = {.source = "synth", .kind = "synth"};
  json_t *doc = jct__result_new("run", &o, &in);
  json_t *e = json_object_get(json_object_get(doc, "fabric"), "rdma");
  ck_assert_str_eq(json_string_value(json_object_get(e, "device")), "mlx5_1");
  ck_assert_int_eq(json_integer_value(json_object_get(e, "port")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(e, "gid_index")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(e, "traffic_class")), 106);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "counters"), 0)),
                   "np_cnp_sent");
  json_decref(doc);
  jct__scenario_free(s);
  /* Unset: rdma_cm's choices (null) and the data class, DSCP 26. */
  s = load_text(SYNTH "lab: 4\ncounters: \"out_of_sequence,packet_seq_err\"\n"
                      "cases: [{inject: \"drop p=0.1\"}]\n");
  ck_assert_uint_eq(s->run.rdma.ncounters, 2);
  ck_assert_str_eq(s->run.rdma.counters[1], "packet_seq_err");
  o = s->run;
  o.schedule = sch;
  doc = jct__result_new("run", &o, &in);
  e = json_object_get(json_object_get(doc, "fabric"), "rdma");
  ck_assert(json_is_null(json_object_get(e, "device")) && json_is_null(json_object_get(e, "port")) &&
            json_is_null(json_object_get(e, "gid_index")));
  ck_assert_int_eq(json_integer_value(json_object_get(e, "traffic_class")), 104);
  json_decref(doc);
  jct__scenario_free(s);
  /* uroce has no RDMA device: null, and a setting is refused (jct_run_check). */
  s = load_text(SYNTH "device: rxe0\ncases: [{inject: \"drop p=0.1\"}]\n");
  o = s->run;
  o.schedule = sch;
  doc = jct__result_new("run", &o, &in);
  ck_assert(json_is_null(json_object_get(json_object_get(doc, "fabric"), "rdma")));
  json_decref(doc);
  ck_assert_int_eq(jct_run_check(&o, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "device: an RDMA device setting"), "%s", err);
  jct__scenario_free(s);
  jct_schedule_free(sch);
#define RBAD(line, col, want, ...)                                                                 \
  do {                                                                                             \
    snprintf(t, sizeof t, __VA_ARGS__);                                                            \
    load_bad(t, line, col, want);                                                                  \
  } while (0)
  const char *c = "lab: 4\ncases: [{inject: [\"drop p=0\"]}]\n";
  char t[512];
  RBAD(2, 7, "port: '0' is not a whole number from 1 to 254", SYNTH "port: 0\n%s", c);
  RBAD(2, 16, "traffic_class: '256' is not a whole number from 0 to 255",
      SYNTH "traffic_class: 256\n%s", c);
  RBAD(2, 12, "gid_index: '-1' is not a whole number", SYNTH "gid_index: -1\n%s", c);
  RBAD(2, 9, "device '../sys' is not an RDMA device's name", SYNTH "device: ../sys\n%s", c);
  RBAD(2, 11, "counters: 'a/b' is not a counter's name", SYNTH "counters: a/b\n%s", c);
  RBAD(2, 11, "counters: an empty list", SYNTH "counters: []\n%s", c);
  RBAD(2, 15, "counters: one name per item", SYNTH "counters: [x, \"y,z\"]\n%s", c);
  RBAD(2, 11, "counters: expected a value", SYNTH "counters: {a: 1}\n%s", c);
}
#undef RBAD
END_TEST

START_TEST(keys_and_defaults) {
  jct__scenario_t *s = load_text(SYNTH "cases: [{inject: \"drop p=0.1\"}]\n");
  ck_assert_str_ne(s->name, "");
  ck_assert(strstr(s->path, "jctlab-test-"));
  ck_assert_uint_eq(s->run.rate_bps, 100000000u);
  ck_assert(s->run.pfc && !s->run.ecn);
  ck_assert_int_eq(jct__watchdog_of(&s->run), JCT_WATCHDOG_OFF);
  ck_assert_uint_eq(s->run.reps, 5);
  ck_assert_uint_eq(s->run.timeout, 20);
  ck_assert_uint_eq(s->run.mtu, 0);
  ck_assert_uint_eq(s->run.silent_after_ns, 0); /* JCT_RUN_SILENT_AFTER_NS */
  ck_assert_str_eq(s->cases[0].name, "drop p=0.1");
  jct__scenario_free(s);

  s = load_text("name: all\ndescription: every key\n" SYNTH
                "transport: verbs\nrate: 1gbit\ncaptured_rate: 100gbit\ndelay: 5us\nmtu: 4200\n"
                "path_mtu: 1024\npfc: off\necn: yes\npfc_watchdog: forward\ntimeout: 14\n"
                "retry: 3\nreps: 2\nseed: 42\nscale: 0.25\nsilent_after: 5s\n"
                "cases:\n  - name: a\n    inject: [\"drop p=0.1\", \"delay 10us\"]\n"
                "    max_jct: 3ms\n    pfc: true\n    ecn: false\n    pfc_watchdog: false\n"
                "  - inject: [\"ecn p=0.5\"]\n");
  ck_assert_str_eq(s->name, "all");
  ck_assert_str_eq(s->description, "every key");
  ck_assert_int_eq(s->run.transport, JCT_TRANSPORT_VERBS);
  ck_assert_uint_eq(s->run.rate_bps, 1000000000u);
  ck_assert_uint_eq(s->captured_rate_bps, 100000000000u);
  ck_assert_uint_eq(s->run.prop_delay_ns, 5000);
  ck_assert_uint_eq(s->run.mtu, 4200);
  ck_assert_uint_eq(s->run.path_mtu_bytes, 1024);
  ck_assert(!s->run.pfc && s->run.ecn);
  ck_assert_int_eq(jct__watchdog_of(&s->run), JCT_WATCHDOG_FORWARD);
  ck_assert_uint_eq(s->run.timeout, 14);
  ck_assert_uint_eq(s->run.retry_cnt, 3);
  ck_assert_uint_eq(s->run.reps, 2);
  ck_assert_uint_eq(s->run.seed, 42);
  ck_assert(s->scale == 0.25);
  ck_assert_uint_eq(s->ncases, 2);
  /* The first case overrides the fabric's switches, the second inherits. */
  ck_assert(s->cases[0].pfc && !s->cases[0].ecn);
  ck_assert_int_eq(s->cases[0].pfc_watchdog, JCT_WATCHDOG_OFF);
  ck_assert_uint_eq(s->cases[0].budget.max_jct_ns, 3000000u);
  ck_assert_uint_eq(s->cases[0].ninject, 2);
  ck_assert(!s->cases[1].pfc && s->cases[1].ecn);
  ck_assert_int_eq(s->cases[1].pfc_watchdog, JCT_WATCHDOG_FORWARD);
  jct_run_opts_t o = {0};
  jct__scenario_case_opts(s, &s->cases[1], &o);
  ck_assert(o.pfc_watchdog && o.watchdog_forward && o.ecn && !o.pfc);
  ck_assert_uint_eq(o.mtu, 4200);
  ck_assert_uint_eq(o.path_mtu_bytes, 1024);
  ck_assert_uint_eq(o.prop_delay_ns, 5000);
  ck_assert_uint_eq(o.seed, 42);
  ck_assert_uint_eq(o.silent_after_ns, 5000000000u);
  ck_assert_str_eq(jct__transport_name(s->run.transport), "verbs");
  ck_assert_str_eq(jct__watchdog_name(jct__watchdog_of(&s->run)), "forward");
  ck_assert_str_eq(jct__scenario_source_name(s->source), "synth");
  ck_assert_int_eq(jct__watchdog_of(&o), JCT_WATCHDOG_FORWARD);
  jct_transport_t t = JCT_TRANSPORT_UROCE;
  ck_assert(jct__transport_parse("verbs", &t) == 0 && t == JCT_TRANSPORT_VERBS);
  ck_assert(jct__transport_parse("Verbs", &t) == JCT_EINVAL && t == JCT_TRANSPORT_VERBS);
  jct__scenario_free(s);
}
END_TEST

/* A schedule given relative to the scenario's directory comes back absolute. */
START_TEST(relative_schedule) {
  char sched[512], path[512];
  craft_tmpname(sched, sizeof sched, ".json");
  const char *base = strrchr(sched, '/') + 1;
  char text[1024];
  snprintf(text, sizeof text, "schedule: %s\ncases: [{inject: [\"drop p=0.1\"]}]\n", base);
  write_tmp(path, sizeof path, text);
  jct__scenario_t *s = load_ok(path);
  char *want = realpath(sched, NULL);
  ck_assert_str_eq(s->input, want);
  ck_assert_int_eq(s->source, JCT_SCEN_SCHEDULE);
  free(want);
  jct__scenario_free(s);
  unlink(path);
  unlink(sched);
}
END_TEST

/* ---- sweeps ---- */

START_TEST(sweep_forms) {
  /* Block style unquoted, a positional list, a percentage. */
  jct__scenario_t *s = load_text(SYNTH "cases:\n  - name: d\n    inject:\n"
                                      "      - delay [10us, 50us] jitter=1us\n"
                                      "      - drop p=0.01\n"
                                      "  - name: l\n    inject: \"drop p=[0.5%, 2%]\"\n");
  ck_assert_uint_eq(s->ncases, 4);
  ck_assert_str_eq(s->cases[0].name, "d delay=10us");
  ck_assert_str_eq(s->cases[0].inject[0], "delay 10us jitter=1us");
  ck_assert_str_eq(s->cases[0].inject[1], "drop p=0.01");
  ck_assert_str_eq(s->cases[1].inject[0], "delay 50us jitter=1us");
  ck_assert_str_eq(s->cases[1].sweep_key, "delay");
  ck_assert_str_eq(s->cases[1].sweep_text, "50us");
  ck_assert(s->cases[1].sweep_value == 50000);
  ck_assert_str_eq(s->cases[2].name, "l p=0.5%");
  ck_assert_str_eq(s->cases[3].inject[0], "drop p=2%");
  ck_assert_double_eq_tol(s->cases[3].sweep_value, 0.02, 1e-12);
  jct__scenario_free(s);

  /* Words sweep too: their place in the list is their value. */
  s = load_text(SYNTH "cases:\n  - inject: [\"delay 50us jitter=5us dist=[normal, pareto]\"]\n");
  ck_assert_uint_eq(s->ncases, 2);
  ck_assert_str_eq(s->cases[1].name, "delay 50us jitter=5us dist=pareto");
  ck_assert_str_eq(s->cases[1].sweep_key, "dist");
  ck_assert(s->cases[0].sweep_value == 0 && s->cases[1].sweep_value == 1);
  jct__scenario_free(s);

  /* Brackets inside quotes and inside a word are a filter's, not a sweep;
   * unnamed cases take their specs as names. */
  s = load_text(SYNTH "cases:\n  - inject: [\"drop p=[0.1, 0.2] where='ether[0] & 1 = 0'\"]\n"
                      "  - inject: [\"drop p=0.3 where=udp[8]=0x0a\"]\n");
  ck_assert_uint_eq(s->ncases, 3);
  ck_assert_str_eq(s->cases[0].name, "drop p=0.1 where='ether[0] & 1 = 0'");
  ck_assert_str_eq(s->cases[1].inject[0], "drop p=0.2 where='ether[0] & 1 = 0'");
  ck_assert_ptr_null(s->cases[2].sweep_key);
  ck_assert_str_eq(s->cases[2].inject[0], "drop p=0.3 where=udp[8]=0x0a");
  jct__scenario_free(s);
}
END_TEST

START_TEST(sweep_numbers) {
  ck_assert(jct__sweep_number("1e-4") == 1e-4);
  ck_assert(jct__sweep_number("0") == 0);
  ck_assert_double_eq_tol(jct__sweep_number("25%"), 0.25, 1e-12);
  ck_assert(jct__sweep_number("2ms") == 2e6);
  ck_assert(jct__sweep_number("1000/s") == 1000);
  ck_assert(jct__sweep_number("3s") == 3e9);
  ck_assert(isnan(jct__sweep_number("normal")));
  ck_assert(isnan(jct__sweep_number("")));
}
END_TEST

START_TEST(sweep_errors) {
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0, 0.1]\", \"delay [1us, 2us]\"]\n",
           4, 14, "two lists in one case");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0.1, 0.2] every=[1, 2]\"]\n", 4, 14,
           "two lists in one case");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0, , 0.1]\"]\n", 4, 14,
           "an empty value in the list");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0, 0.1\"]\n", 4, 14,
           "'[' without ']'");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0.1]x\"]\n", 4, 14,
           "must end its word");
  /* Every expanded spec is checked, and the error names the expanded case. */
  load_bad(SYNTH "cases:\n  - name: x\n    inject:\n      - drop p=[0.5, 1.5]\n", 5, 9,
           "case 'x p=1.5': ");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0.1\"]\n  - name: x\n"
                 "    inject: [\"drop p=0.2\"]\n",
           5, 5, "the name is taken by the case at line 3");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=[0.1, 0.1]\"]\n", 3, 5,
           "case 'x p=0.1': the name is taken");
  /* An unquoted list inside a flow list is YAML's business, not a sweep. */
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [drop p=[0, 1]]\n", 4, 21,
           "did not find expected ',' or ']'");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [[drop p=0]]\n", 4, 14,
           "a list inside the list");
}
END_TEST

START_TEST(sweep_cap) {
  char *text = malloc(8192);
  ck_assert_ptr_nonnull(text);
  /* p must lie in [0, 1]: the values are 0, 0.001, ..., 0.256. */
  int k = snprintf(text, 8192, SYNTH "cases:\n  - name: many\n    inject: [\"drop p=[0");
  for (int i = 1; i <= JCT_SCENARIO_MAX_CASES; i++)
    k += snprintf(text + k, 8192 - (size_t)k, ", %g", i / 1000.0);
  snprintf(text + k, 8192 - (size_t)k, "]\"]\n");
  load_bad(text, 3, 5, "more than 256 cases");
  /* One value fewer fits exactly. */
  char *last = strrchr(text, ',');
  strcpy(last, "]\"]\n");
  jct__scenario_t *s = load_text(text);
  ck_assert_uint_eq(s->ncases, JCT_SCENARIO_MAX_CASES);
  ck_assert_str_eq(s->cases[255].name, "many p=0.255");
  jct__scenario_free(s);
  free(text);
}
END_TEST

/* ---- errors ---- */

START_TEST(errors_document) {
  load_bad("", 1, 1, "empty: a scenario needs a source");
  /* 100,000 levels of nesting: refused at the 33rd (the root mapping is the
   * first), before libyaml's quadratic scan of the rest. */
  enum { DEEP = 100000 };
  char *deep = malloc(7 + 2 * DEEP + 2);
  ck_assert_ptr_nonnull(deep);
  memcpy(deep, "synth: ", 7);
  memset(deep + 7, '[', DEEP);
  memset(deep + 7 + DEEP, ']', DEEP);
  memcpy(deep + 7 + 2 * DEEP, "\n", 2);
  load_bad(deep, 1, 7 + 32, "nested deeper than 32 levels");
  free(deep);
  load_bad("- a\n- b\n", 1, 1, "expected a mapping");
  load_bad(SYNTH "rat: 1gbit\ncases: [{inject: [\"drop p=0\"]}]\n", 2, 1, "unknown key 'rat'");
  load_bad(SYNTH "rate: 1gbit\nrate: 2gbit\ncases: [{inject: [\"drop p=0\"]}]\n", 3, 1,
           "'rate' appears twice (first at line 2)");
  load_bad("rate: 1gbit\ncases: [{inject: [\"drop p=0\"]}]\n", 1, 1, "no source");
  load_bad(SYNTH "schedule: x.json\ncases: []\n", 2, 1,
           "schedule: a second source (synth: at line 1)");
  load_bad(SYNTH, 1, 1, "no cases");
  load_bad(SYNTH "cases: []\n", 2, 8, "cases: an empty list");
  load_bad(SYNTH "cases: {a: 1}\n", 2, 8, "cases: expected a list of cases, not a mapping");
  load_bad(SYNTH "cases:\n  - [1]\n", 3, 5, "case 1: expected a mapping");
  load_bad(SYNTH "cases: [\n", 3, 1, "did not find expected node content");
  load_bad(SYNTH "rate: [1gbit]\ncases: [{inject: [\"drop p=0\"]}]\n", 2, 7,
           "rate: expected a value, not a list");
  load_bad(SYNTH "cases: [{inject: [\"drop p=0\"]}]\n---\nname: two\n", 4, 1, "a second document");
}
END_TEST

START_TEST(errors_values) {
  const char *c = "cases: [{inject: [\"drop p=0\"]}]\n";
  char t[512];
#define BAD(line, col, want, ...)                                                                  \
  do {                                                                                             \
    snprintf(t, sizeof t, __VA_ARGS__);                                                            \
    load_bad(t, line, col, want);                                                                  \
  } while (0)
  BAD(2, 7, "rate: '100mbps/s' is not a rate", SYNTH "rate: 100mbps/s\n%s", c);
  BAD(2, 8, "delay: '5 parsecs' is not a time", SYNTH "delay: 5 parsecs\n%s", c);
  BAD(2, 8, "delay: 2s is not from 0 ns to 1.000 s", SYNTH "delay: 2s\n%s", c);
  BAD(2, 7, "reps: '0' is not a whole number from 1 to 1000", SYNTH "reps: 0\n%s", c);
  BAD(2, 6, "pfc: 'maybe' is not true or false", SYNTH "pfc: maybe\n%s", c);
  BAD(2, 15, "silent_after: 100ms is not from 200 ms to 3600.000 s", SYNTH "silent_after: 100ms\n%s", c);
  BAD(2, 15, "pfc_watchdog: 'sometimes' is not false, true, drop or forward",
      SYNTH "pfc_watchdog: sometimes\n%s", c);
  BAD(2, 12, "transport: 'tcp' is not uroce or verbs", SYNTH "transport: tcp\n%s", c);
  BAD(2, 8, "scale: 0 is not above 0", SYNTH "scale: 0\n%s", c);
  BAD(2, 8, "scale: 'big' is not a number", SYNTH "scale: big\n%s", c);
  BAD(2, 6, "mtu: 1500 is too small for path_mtu 4096 (needs 4160)", SYNTH "mtu: 1500\n%s", c);
  BAD(2, 11, "path_mtu: 1000 is not 256, 512", SYNTH "path_mtu: 1000\n%s", c);
  BAD(2, 11, "topology: spines=0: a leaf-spine fabric has 1 to 16 spines",
      SYNTH "topology: leaf-spine:leaves=4,spines=0,hosts-per-leaf=2\n%s", c);
  BAD(2, 12, "placement: placement 'tight': not packed, spread", SYNTH "placement: tight\n%s", c);
  BAD(1, 1, "topology: 4 ranks: the leaf-spine fabric has 2 hosts",
      SYNTH "topology: leaf-spine:leaves=2,spines=1,hosts-per-leaf=1\n%s", c);
  load_bad(SYNTH "topology: leaf-spine:leaves=2,spines=2,hosts-per-leaf=2\n"
                 "cases: [{inject: [\"drop p=0.1 port=leaf5:spine0\"]}]\n",
           3, 19, "port=leaf5:spine0: no such link (2 leaves, 2 spines");
  BAD(1, 43, "synth: bytes: '8MiBs' is not a size",
      "synth: {algorithm: ring, ranks: 4, bytes: 8MiBs}\n%s", c);
  BAD(1, 20, "synth: algorithm: 'rong' is not one of ring, tree",
      "synth: {algorithm: rong, ranks: 4, bytes: 1MiB}\n%s", c);
  BAD(1, 33, "synth: ranks: '1' is not a whole number from 2 to 64",
      "synth: {algorithm: ring, ranks: 1, bytes: 1MiB}\n%s", c);
  BAD(1, 8, "synth: needs bytes", "synth: {algorithm: ring, ranks: 4}\n%s", c);
  BAD(1, 36, "synth: unknown key 'size'", "synth: {algorithm: ring, ranks: 4, size: 1}\n%s", c);
  BAD(1, 8, "synth: expected a mapping", "synth: ring\n%s", c);
  BAD(1, 8, "synth: ", "synth: {algorithm: halving-doubling, ranks: 6, bytes: 1MiB}\n%s", c);
  BAD(1, 8, "trace: 'no-such.pcap' (", "trace: no-such.pcap\n%s", c);
  BAD(1, 8, "No such file or directory", "trace: no-such.pcap\n%s", c);
  BAD(1, 8, "not a file", "trace: .\n%s", c);
#undef BAD
}
END_TEST

START_TEST(errors_cases) {
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=1.5\"]\n", 4, 14, "case 'x': ");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=1.5\"]\n", 4, 14, "p=1.5");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0.1\", \"nuke all\"]\n", 4, 28,
           "case 'x': ");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0.1 where='udp port'\"]\n", 4, 14,
           "case 'x': ");
  load_bad(SYNTH "cases:\n  - name: x\n", 3, 5, "case 'x': nothing to inject");
  /* An unnamed case is named by its place in the list. */
  load_bad(SYNTH "cases:\n  - inject: [\"drop p=0\"]\n  - inject: [\"drop p=2\"]\n", 4, 14,
           "case 2: drop p=2: p=2 is outside [0, 1]");
  load_bad(SYNTH "cases:\n  - max_jct: 1s\n", 3, 5, "case 1: nothing to inject");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: []\n", 4, 13, "inject: an empty list");
  /* On verbs (a fabric jctlab may have no switch in: `jctlab rank`) an
   * empty list is a case that injects nothing; still not on uroce. */
  {
    char e[512];
    jct__scenario_t *sc = NULL;
    const char *y = SYNTH "transport: verbs\ncases:\n  - name: clean\n    inject: []\n  - inject: []\n";
    ck_assert_msg(jct__scenario_load_mem(&sc, y, strlen(y), "t.yaml", NULL, e, sizeof e) == 0, "%s", e);
    ck_assert_uint_eq(sc->ncases, 2);
    ck_assert_uint_eq(sc->cases[0].ninject, 0);
    ck_assert_str_eq(sc->cases[1].name, "nothing injected");
    jct__scenario_free(sc);
  }
  load_bad(SYNTH "cases:\n  - name: x\n    inject: \"\"\n", 4, 13, "inject: an empty spec");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\", \"\"]\n", 4, 26,
           "inject: an empty spec");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: {a: b}\n", 4, 13,
           "inject: expected a list of injector specs, not a mapping");
  load_bad(SYNTH "cases:\n  - name: x\n    faults: trace\n", 4, 13,
           "faults: trace needs a trace: source (this scenario has synth:)");
  load_bad(SYNTH "cases:\n  - name: x\n    faults: pcap\n", 4, 13,
           "faults: 'pcap': the only value is 'trace'");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    max_degradation: 0.9\n", 5,
           22, "max_degradation: 0.9 is below 1");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    max_degradation: lots\n", 5,
           22, "max_degradation: 'lots' is not a number");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    max_jct: 2 weeks\n", 5, 14,
           "max_jct: '2 weeks' is not a time");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    max_jct: 0s\n", 5, 14,
           "max_jct: 0s is not from 1 ns");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    max_jct: 1s\n"
                 "    max_degradation: 1.5\n",
           6, 5, "a second budget (give max_degradation or max_jct, not both)");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    budget: 1.5\n", 5, 5,
           "case: unknown key 'budget'");
  load_bad(SYNTH "cases:\n  - name: x\n    inject: [\"drop p=0\"]\n    pfc: sometimes\n", 5, 10,
           "pfc: 'sometimes' is not true or false");
  char *many = malloc(4096);
  ck_assert_ptr_nonnull(many);
  int k = snprintf(many, 4096, SYNTH "cases:\n  - name: x\n    inject:\n");
  for (int i = 0; i <= JCT_RUN_MAX_INJECTORS; i++)
    k += snprintf(many + k, 4096 - (size_t)k, "      - drop p=0\n");
  load_bad(many, 5 + JCT_RUN_MAX_INJECTORS, 9, "inject: at most 16 injectors");
  free(many);
}
END_TEST

/* Not a file, not UTF-8. */
START_TEST(errors_files) {
  jct__scenario_t *s = (jct__scenario_t *)1;
  char err[512] = "";
  ck_assert_int_eq(jct__scenario_load(&s, "/nonexistent/x.yaml", err, sizeof err), JCT_EIO);
  ck_assert_ptr_null(s);
  ck_assert_str_eq(err, "/nonexistent/x.yaml: No such file or directory");
  const char bad_utf8[] = "name: \xff\xfe\n";
  ck_assert_int_eq(
      jct__scenario_load_mem(&s, bad_utf8, sizeof bad_utf8 - 1, "mem.yaml", NULL, err, sizeof err),
      JCT_EINVAL);
  ck_assert_msg(strncmp(err, "mem.yaml: byte 6: ", 18) == 0, "%s", err);
  const char nul[] = "name: \"a\\0b\"\n" SYNTH "cases: [{inject: [\"drop p=0\"]}]\n";
  ck_assert_int_eq(
      jct__scenario_load_mem(&s, nul, sizeof nul - 1, "mem.yaml", NULL, err, sizeof err),
      JCT_EINVAL);
  ck_assert_str_eq(err, "mem.yaml:1:7: name: the value holds a NUL byte");
}
END_TEST

/* Every prefix of a real scenario either loads or is refused: never a
 * crash, a leak (under ASan) or an error without a message. */
START_TEST(truncations) {
  size_t len;
  char *text = slurp(SCEN_DIR "pause-storm.yaml", &len);
  ck_assert_ptr_nonnull(text);
  uint32_t ok = 0;
  for (size_t n = 0; n <= len; n++) {
    jct__scenario_t *s;
    char err[512] = "";
    int rc = jct__scenario_load_mem(&s, text, n, "cut.yaml", SCEN_DIR, err, sizeof err);
    ck_assert_msg(rc == 0 || rc == JCT_EINVAL, "%zu bytes: %d", n, rc);
    if (rc) {
      ck_assert_ptr_null(s);
      ck_assert_msg(strncmp(err, "cut.yaml:", 9) == 0, "%zu bytes: '%s'", n, err);
    } else {
      ok++;
      jct__scenario_free(s);
    }
  }
  ck_assert_uint_gt(ok, 0);
  free(text);
}
END_TEST

/* ---- JUnit ---- */

/* A small XML reader, enough to check the document is well formed and to
 * read it back: elements with attributes (entities resolved) and text. */
typedef struct {
  char name[32];
  char attr[12][2][512];
  int nattr;
  char text[1024];
  int depth;
} xel_t;

static size_t unescape(const char *s, size_t n, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    ck_assert_msg(s[i] != '<', "a raw '<' in text or attribute: %.*s", (int)n, s);
    char buf[8];
    size_t blen = 1;
    buf[0] = s[i];
    size_t adv = 1;
    if (s[i] == '&') {
      const char *semi = memchr(s + i, ';', n - i);
      ck_assert_msg(semi, "an unterminated entity: %.*s", (int)(n - i), s + i);
      size_t el = (size_t)(semi - (s + i)) + 1;
      static const char *const ent[][2] = {
          {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
      bool found = false;
      for (size_t k = 0; k < 5; k++)
        if (el == strlen(ent[k][0]) && !strncmp(s + i, ent[k][0], el)) {
          buf[0] = ent[k][1][0];
          found = true;
        }
      if (!found) {
        ck_assert_msg(s[i + 1] == '#', "an unknown entity: %.*s", (int)el, s + i);
        long cp = strtol(s + i + 2, NULL, 10);
        ck_assert_msg(cp == 9 || cp == 10 || cp == 13, "a character reference %ld", cp);
        buf[0] = (char)cp;
      }
      adv = el;
    }
    ck_assert_uint_lt(o + blen, outlen);
    memcpy(out + o, buf, blen);
    o += blen;
    i += adv;
  }
  out[o] = 0;
  return o;
}

/* Parse doc into els (at most max); returns how many. Fails the test when
 * the document is not well formed. */
static int xml_read(const char *doc, xel_t *els, int max) {
  const char *p = doc;
  ck_assert(strncmp(p, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 39) == 0);
  p += 39;
  int n = 0, depth = 0, stack[16];
  while (*p) {
    if (*p != '<') { /* text */
      const char *e = strchr(p, '<');
      if (!e) e = p + strlen(p);
      bool blank = true;
      for (const char *q = p; q < e; q++)
        blank &= (*q == ' ' || *q == '\n');
      if (!blank) {
        ck_assert_msg(depth > 0, "text outside the root");
        xel_t *cur = &els[stack[depth - 1]];
        unescape(p, (size_t)(e - p), cur->text, sizeof cur->text);
      }
      p = e;
      continue;
    }
    if (p[1] == '/') { /* end tag */
      const char *e = strchr(p, '>');
      ck_assert_ptr_nonnull(e);
      ck_assert_int_gt(depth, 0);
      xel_t *open = &els[stack[--depth]];
      ck_assert_msg(strlen(open->name) == (size_t)(e - p - 2) &&
                        !strncmp(open->name, p + 2, (size_t)(e - p - 2)),
                    "</%.*s> closes <%s>", (int)(e - p - 2), p + 2, open->name);
      p = e + 1;
      continue;
    }
    ck_assert_int_lt(n, max);
    xel_t *el = &els[n];
    memset(el, 0, sizeof *el);
    el->depth = depth;
    p++;
    size_t nl = strcspn(p, " />");
    ck_assert_uint_lt(nl, sizeof el->name);
    memcpy(el->name, p, nl);
    p += nl;
    for (;;) {
      while (*p == ' ')
        p++;
      if (*p == '>' || (p[0] == '/' && p[1] == '>')) break;
      const char *eq = strchr(p, '=');
      ck_assert_msg(eq && eq[1] == '"', "an attribute without a quoted value in <%s>", el->name);
      const char *close = strchr(eq + 2, '"');
      ck_assert_ptr_nonnull(close);
      ck_assert_int_lt(el->nattr, 12);
      snprintf(el->attr[el->nattr][0], 512, "%.*s", (int)(eq - p), p);
      unescape(eq + 2, (size_t)(close - eq - 2), el->attr[el->nattr][1], 512);
      el->nattr++;
      p = close + 1;
      ck_assert_msg(*p == ' ' || *p == '>' || *p == '/', "no space after an attribute in <%s>",
                    el->name);
    }
    bool empty = *p == '/';
    p += empty ? 2 : 1;
    if (!empty) {
      ck_assert_int_lt(depth, 16);
      stack[depth++] = n;
    }
    n++;
  }
  ck_assert_int_eq(depth, 0);
  return n;
}

static const char *xattr(const xel_t *e, const char *name) {
  for (int i = 0; i < e->nattr; i++)
    if (!strcmp(e->attr[i][0], name)) return e->attr[i][1];
  return NULL;
}

/* The value of property name under the testcase at els[tc]. */
static const char *xprop(const xel_t *els, int n, int tc, const char *name) {
  for (int i = tc + 1; i < n && els[i].depth > els[tc].depth; i++)
    if (!strcmp(els[i].name, "property") && !strcmp(xattr(&els[i], "name"), name))
      return xattr(&els[i], "value");
  return NULL;
}

static int count(const xel_t *els, int n, const char *name) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += !strcmp(els[i].name, name);
  return k;
}

START_TEST(junit_roundtrip) {
  static const char *const specs[] = {"drop p=0.01 where=\"udp dst port 4791\""};
  jct__junit_case_t cases[] = {
      {.name = "loss p=1e-4",
       .verdict = JCT_VERDICT_PASS,
       .budget = {.max_degradation = 1.15},
       .baseline_median_ns = 100000000,
       .faulted_median_ns = 104000000,
       .degradation = 1.04,
       .ci95_low = 1.01,
       .ci95_high = 1.07,
       .wall_s = 1.5,
       .sweep_key = "p",
       .sweep_value = 1e-4,
       .inject = specs,
       .ninject = 1},
      {.name = "<storm> & \"friends\" 'x'",
       .verdict = JCT_VERDICT_FAIL,
       .budget = {.max_jct_ns = 2000000000},
       .baseline_median_ns = 100000000,
       .faulted_median_ns = 2500000000,
       .degradation = 25,
       .ci95_low = 24,
       .ci95_high = 26,
       .wall_s = 6.25},
      {.name = "bad\x01"
               "byte \xff and caf\xc3\xa9",
       .verdict = JCT_VERDICT_INVALID,
       .message = "a repetition did not finish <in 30 s>",
       .wall_s = 30},
      {.name = "measured\nonly", .verdict = JCT_VERDICT_NONE, .degradation = 1.5, .wall_s = 0.5},
  };
  char path[512];
  craft_tmpname(path, sizeof path, ".xml");
  char err[512] = "";
  ck_assert_int_eq(jct__junit_write_file(path, "my <suite>", cases, 4, 1700000000, err, sizeof err),
                   0);
  char *doc = slurp(path, NULL);
  unlink(path);
  ck_assert_ptr_nonnull(doc);
  static xel_t els[64];
  int n = xml_read(doc, els, 64);
  ck_assert_str_eq(els[0].name, "testsuites");
  ck_assert_str_eq(xattr(&els[0], "tests"), "4");
  ck_assert_str_eq(xattr(&els[0], "failures"), "1");
  ck_assert_str_eq(xattr(&els[0], "errors"), "1");
  ck_assert_str_eq(xattr(&els[0], "time"), "38.250");
  ck_assert_str_eq(els[1].name, "testsuite");
  ck_assert_str_eq(xattr(&els[1], "name"), "my <suite>");
  ck_assert_str_eq(xattr(&els[1], "tests"), "4");
  ck_assert_str_eq(xattr(&els[1], "timestamp"), "2023-11-14T22:13:20Z");
  ck_assert_int_eq(count(els, n, "testcase"), 4);
  ck_assert_int_eq(count(els, n, "failure"), 1);
  ck_assert_int_eq(count(els, n, "error"), 1);
  ck_assert_int_eq(count(els, n, "skipped"), 0);
  int tc[4], k = 0, fail = -1, error = -1;
  for (int i = 0; i < n; i++) {
    if (!strcmp(els[i].name, "testcase")) tc[k++] = i;
    if (!strcmp(els[i].name, "failure")) fail = i;
    if (!strcmp(els[i].name, "error")) error = i;
  }
  /* Names come back as they went in; what XML cannot hold becomes U+FFFD. */
  ck_assert_str_eq(xattr(&els[tc[0]], "name"), "loss p=1e-4");
  ck_assert_str_eq(xattr(&els[tc[1]], "name"), "<storm> & \"friends\" 'x'");
  ck_assert_str_eq(xattr(&els[tc[2]], "name"), "bad\xef\xbf\xbd"
                                               "byte \xef\xbf\xbd and caf\xc3\xa9");
  ck_assert_str_eq(xattr(&els[tc[3]], "name"), "measured\nonly");
  ck_assert_str_eq(xattr(&els[tc[0]], "classname"), "my <suite>");
  ck_assert_str_eq(xattr(&els[tc[1]], "time"), "6.250");
  /* The failure sits in the second testcase, the error in the third. */
  ck_assert(fail > tc[1] && fail < tc[2]);
  ck_assert(error > tc[2] && error < tc[3]);
  ck_assert_str_eq(xattr(&els[fail], "type"), "budget_exceeded");
  ck_assert_msg(strstr(xattr(&els[fail], "message"), "exceeds the budget 2.000 s"), "%s",
                xattr(&els[fail], "message"));
  ck_assert_str_eq(xattr(&els[error], "message"),
                   "invalid run: a repetition did not finish <in 30 s>");
  ck_assert_str_eq(els[error].text, "invalid run: a repetition did not finish <in 30 s>");
  /* Properties. */
  ck_assert_str_eq(xprop(els, n, tc[0], "verdict"), "pass");
  ck_assert_str_eq(xprop(els, n, tc[0], "degradation"), "1.04");
  ck_assert_str_eq(xprop(els, n, tc[0], "baseline_median_jct_ns"), "100000000");
  ck_assert_str_eq(xprop(els, n, tc[0], "max_degradation"), "1.15");
  ck_assert_str_eq(xprop(els, n, tc[0], "sweep_key"), "p");
  ck_assert(strtod(xprop(els, n, tc[0], "sweep_value"), NULL) == 1e-4);
  ck_assert_str_eq(xprop(els, n, tc[0], "inject.0"), specs[0]);
  ck_assert_str_eq(xprop(els, n, tc[1], "verdict"), "fail");
  ck_assert_str_eq(xprop(els, n, tc[1], "max_jct_ns"), "2000000000");
  ck_assert_ptr_null(xprop(els, n, tc[1], "sweep_key"));
  ck_assert_str_eq(xprop(els, n, tc[2], "verdict"), "invalid");
  ck_assert_ptr_null(xprop(els, n, tc[2], "degradation"));
  ck_assert_str_eq(xprop(els, n, tc[3], "verdict"), "none");
  int out = -1;
  for (int i = tc[0]; i < tc[1]; i++)
    if (!strcmp(els[i].name, "system-out")) out = i;
  ck_assert_int_gt(out, 0);
  ck_assert_msg(strstr(els[out].text, "within the budget 1.15"), "%s", els[out].text);
  free(doc);
}
END_TEST

START_TEST(junit_summary_and_errors) {
  jct__junit_case_t c = {.name = "x",
                        .verdict = JCT_VERDICT_PASS,
                        .budget = {.max_degradation = 1.15},
                        .baseline_median_ns = 1000000,
                        .faulted_median_ns = 1100000,
                        .degradation = 1.1,
                        .ci95_low = 1.05,
                        .ci95_high = 1.12};
  char b[512];
  jct__junit_case_summary(&c, b, sizeof b);
  ck_assert_str_eq(b, "degradation 1.100 (95% CI 1.050 to 1.120), median JCT 1.10 ms faulted, "
                      "1.00 ms baseline: within the budget 1.15");
  c.verdict = JCT_VERDICT_NONE;
  c.budget.max_degradation = 0;
  jct__junit_case_summary(&c, b, sizeof b);
  ck_assert(strstr(b, ": no budget"));
  char err[512] = "";
  ck_assert_int_eq(jct__junit_write_file("/nonexistent/dir/j.xml", "s", &c, 1, 0, err, sizeof err),
                   JCT_EIO);
  ck_assert_str_eq(err, "/nonexistent/dir/j.xml: No such file or directory");
  /* A full disk is a write error, not a silent half file. */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    setvbuf(full, NULL, _IONBF, 0);
    ck_assert_int_eq(jct__junit_write(full, "s", &c, 1, 0), JCT_EIO);
    fclose(full);
  }
  /* No cases: a valid, empty suite. */
  char path[512];
  craft_tmpname(path, sizeof path, ".xml");
  ck_assert_int_eq(jct__junit_write_file(path, "empty", NULL, 0, 0, err, sizeof err), 0);
  char *doc = slurp(path, NULL);
  unlink(path);
  static xel_t els[8];
  int n = xml_read(doc, els, 8);
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(xattr(&els[1], "tests"), "0");
  ck_assert_ptr_null(xattr(&els[1], "timestamp"));
  free(doc);
}
END_TEST

Suite *scenario_suite(void) {
  Suite *s = suite_create("scenario");
  TCase *core = tcase_create("core");
  tcase_add_test(core, shipped_loss_sweep);
  tcase_add_test(core, shipped_pause_storm);
  tcase_add_test(core, shipped_delay_jitter);
  tcase_add_test(core, shipped_postmortem);
  tcase_add_test(core, shipped_incast_and_cc);
  tcase_add_test(core, keys_and_defaults);
  tcase_add_test(core, lab_means_verbs);
  tcase_add_test(core, rdma_keys);
  tcase_add_test(core, relative_schedule);
  suite_add_tcase(s, core);
  TCase *sweep = tcase_create("sweep");
  tcase_add_test(sweep, sweep_forms);
  tcase_add_test(sweep, sweep_numbers);
  tcase_add_test(sweep, sweep_errors);
  tcase_add_test(sweep, sweep_cap);
  suite_add_tcase(s, sweep);
  TCase *errors = tcase_create("errors");
  tcase_add_test(errors, errors_document);
  tcase_add_test(errors, errors_values);
  tcase_add_test(errors, errors_cases);
  tcase_add_test(errors, errors_files);
  tcase_add_test(errors, truncations);
  tcase_set_timeout(errors, 60);
  suite_add_tcase(s, errors);
  TCase *junit = tcase_create("junit");
  tcase_add_test(junit, junit_roundtrip);
  tcase_add_test(junit, junit_summary_and_errors);
  suite_add_tcase(s, junit);
  return s;
}
