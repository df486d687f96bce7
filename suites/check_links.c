/* A leaf-spine fabric's links in the reports other than `jctlab run`'s
 * (check_clos.c has run's): replays and scenario cases count each side's
 * links through the same code as run, and their figures add up.
 *   - a case (a scenario's; replay's --synth is one such case, through
 *     the same session code, and peaks runs one): an 8-rank ring spread
 *     over 4 leaves x 2 spines with loss on one uplink. On each side, what
 *     went up to a spine came down from it
 *     (per spine and per flow), every data frame of a link is in one of
 *     its flows, each connection between leaves carried at least its
 *     schedule's payload on the uplinks (and, lossless, at most 5% of
 *     headers more), and the lossy uplink's drops are exactly the
 *     injector's. The imbalance is max / mean of the uplinks' bytes.
 *   - peaks: each side's peak queue is its own repetitions' (the session
 *     starts the peaks again before each): a rate limit on one uplink
 *     queues its frames in the faulted repetitions only, and with B F B F
 *     the second baseline repetition does not inherit the faulted peak.
 *   - scenario: that case's JSON has both sides' tables, and its terminal
 *     report and report.md show them (one run for both: the scenario's
 *     lossy case was a replay of its own, the same ring, rate and links).
 *   - qps: --qps-per-connection in size sweeps (each size a run, or with
 *     --inject a replay) and in a scenario's sweep of cases: every size and
 *     every case measured traffic on N QPs per connection (qps_used, the
 *     per-QP figures), one QP each without it; 0, abc and a size too small
 *     to split are bad input.
 *   - capture: --pcap-out with --pcap-port leaf0:spine1, dilated x4: jctlab
 *     inspect counts exactly the frames and bytes the link's counters say
 *     it carried, and the capture spans emulated time (at least the bytes'
 *     time at the uplink's rate, at most the job's), not wall time (4 times
 *     that). A --pcap-port naming no link, or without --pcap-out, is bad
 *     input and leaves no file.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "suites.h"
#include "testkit.h"

#define TOPO "leaf-spine:leaves=4,spines=2,hosts-per-leaf=2"

/* jctlab with args and --json (testkit.h, retried while loop-bound): its
 * document, which must have come with exit 0. */
static json_t *doc_of(const char *const args[]) {
  int status;
  char *err = NULL;
  /* Its runs give --tdf 4 (no figure changes): a loop-bound one is
   * retried x16, then x64. */
  json_t *doc = jctlab_json_retry_dilated(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "jctlab %s exited %d: %s", args[0], status, err);
  free(err);
  return doc;
}

/* The link named in a "links" array, or NULL. */
static json_t *link_in(json_t *links, const char *name) {
  for (size_t i = 0; i < json_array_size(links); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(links, i), "link")), name))
      return json_array_get(links, i);
  return NULL;
}

/* Bytes of the flows src->dst (any source port) on a link. */
static json_int_t pair_bytes(json_t *link, json_int_t src, json_int_t dst) {
  json_int_t b = 0;
  json_t *flows = json_object_get(link, "flows");
  for (size_t i = 0; i < json_array_size(flows); i++) {
    json_t *f = json_array_get(flows, i);
    if (jint(f, "src_rank") == src && jint(f, "dst_rank") == dst) b += jint(f, "bytes");
  }
  return b;
}

/* One side's links (4 leaves x 2 spines): flows account for every byte,
 * each spine gives out what it took in, pair by pair, and each connection
 * under different leaves carried its payload (reps repetitions of
 * qps[].bytes) up to some spine, with at most 5% more (headers, ACKs are
 * the other way) and extra bytes (sent again). */
static void check_side(json_t *fl, json_t *qps, const char *side, uint32_t reps, double extra) {
  json_t *links = jget(fl, "links");
  ck_assert_uint_eq(json_array_size(links), 16);
  double max = 0, sum = 0;
  for (size_t i = 0; i < 16; i++) {
    json_t *l = json_array_get(links, i);
    json_int_t fb = 0;
    for (size_t j = 0; j < json_array_size(json_object_get(l, "flows")); j++)
      fb += jint(json_array_get(json_object_get(l, "flows"), j), "bytes");
    ck_assert_int_eq(jint(l, "other_flow_frames"), 0);
    ck_assert_msg(fb == jint(l, "bytes"), "%s %s: flows %lld bytes, link %lld", side,
                  json_string_value(json_object_get(l, "link")), (long long)fb,
                  (long long)jint(l, "bytes"));
    if (jbool(l, "uplink")) {
      sum += (double)jint(l, "bytes");
      if (jint(l, "bytes") > max) max = (double)jint(l, "bytes");
    }
  }
  ck_assert_double_eq_tol(jnum(fl, "ecmp_imbalance"), max * 8 / sum, 1e-9);
  for (uint32_t s = 0; s < 2; s++) {
    json_int_t up = 0, down = 0;
    for (uint32_t l = 0; l < 4; l++) {
      char u[32], d[32];
      snprintf(u, sizeof u, "leaf%u:spine%u", l, s);
      snprintf(d, sizeof d, "spine%u:leaf%u", s, l);
      up += jint(link_in(links, u), "bytes");
      down += jint(link_in(links, d), "bytes");
    }
    ck_assert_msg(up == down, "%s: spine %u took in %lld bytes and gave out %lld", side, s,
                  (long long)up, (long long)down);
  }
  for (size_t c = 0; c < json_array_size(qps); c++) {
    json_t *q = json_array_get(qps, c);
    json_int_t src = jint(q, "src"), dst = jint(q, "dst");
    uint32_t ls = (uint32_t)src % 4, ld = (uint32_t)dst % 4; /* spread: rank i under leaf i % 4 */
    json_int_t up = 0, down = 0;
    for (uint32_t s = 0; s < 2; s++) {
      char u[32], d[32];
      snprintf(u, sizeof u, "leaf%u:spine%u", ls, s);
      snprintf(d, sizeof d, "spine%u:leaf%u", s, ld);
      up += pair_bytes(link_in(links, u), src, dst);
      down += pair_bytes(link_in(links, d), src, dst);
    }
    double payload = (double)jint(q, "bytes") * reps;
    ck_assert_msg(up >= payload && up <= payload * 1.05 + extra,
                  "%s: connection %zu (%lld->%lld) carried %lld bytes up, payload %.0f", side, c,
                  (long long)src, (long long)dst, (long long)up, payload);
    ck_assert_msg(down == up, "%s: connection %zu: %lld bytes up, %lld down", side, c,
                  (long long)up, (long long)down);
  }
}

/* A replay of an 8-rank ring spread over TOPO, ECMP seed 5 (1->2 and
 * 5->6 share leaf1:spine1), with one injector. */
static json_t *replay_spread(const char *bytes, const char *reps, const char *inject) {
  const char *args[] = {"replay", "--synth",     "ring",   "--ranks",     "8",  "--bytes",
                        bytes,    "--rate",      "5mbit",  "--reps",      reps, "--topology",
                        TOPO,     "--placement", "spread", "--ecmp-seed", "5",  "--tdf",
                        "4",      "--inject",    inject,   NULL};
  return doc_of(args);
}

/* A lossy case's links, either side (a case of replay's or of a scenario's:
 * the same document): on an 8-rank ring over TOPO, spread, with one
 * injector dropping p=0.05 on leaf1:spine1 (out), 1 repetition a side. */
static void links_add_up(json_t *c) {
  json_t *qps = jget(c, "qps");
  ck_assert_uint_eq(json_array_size(qps), 8);
  /* qps[].bytes: the schedule's per repetition, either side */
  check_side(jget(c, "fabric_links.baseline"), qps, "baseline", 1, 0);
  /* faulted: what the loss made the QPs send again (headers and all), on top */
  double retx = (double)jint(c, "transport.retransmitted_bytes");
  ck_assert_msg(retx > 0, "0.05 loss on an uplink made no retransmission");
  check_side(jget(c, "fabric_links.faulted"), qps, "faulted", 1, retx * 1.05);
  json_t *lossy = link_in(jget(c, "fabric_links.faulted.links"), "leaf1:spine1");
  json_int_t dropped = jint(c, "drops.injectors.0.dropped");
  ck_assert_int_gt(dropped, 0);
  ck_assert_int_eq(jint(lossy, "drops"), dropped);
  ck_assert_int_eq(jint(link_in(jget(c, "fabric_links.baseline.links"), "leaf1:spine1"), "drops"),
                   0);
}

START_TEST(replay_peaks_per_side) {
  json_t *doc = replay_spread("64KiB", "2", "rate 2500kbit port=leaf1:spine1 dir=out");
  json_t *c = json_array_get(jget(doc, "cases"), 0);
  json_int_t fp =
      jint(link_in(jget(c, "fabric_links.faulted.links"), "leaf1:spine1"), "peak_queue_bytes");
  json_int_t bp =
      jint(link_in(jget(c, "fabric_links.baseline.links"), "leaf1:spine1"), "peak_queue_bytes");
  ck_assert_msg(bp > 0 && fp > 2 * bp, "leaf1:spine1 peak queue: baseline %lld, faulted %lld",
                (long long)bp, (long long)fp);
  json_decref(doc);
}
END_TEST

/* A scenario file in a new temporary file (path). */
static void write_scenario(char *path, size_t len, const char *text) {
  craft_tmpname(path, len, ".yaml");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(scenario_case_has_links) {
  char path[256], dir[300];
  write_scenario(path, sizeof path,
                 "name: links\n"
                 "synth: {algorithm: ring, ranks: 8, bytes: 128KiB}\n"
                 "rate: 5mbit\n"
                 "tdf: 4\n"
                 "topology: " TOPO "\n"
                 "placement: spread\n"
                 "ecmp_seed: 5\n"
                 "reps: 1\n"
                 "cases:\n"
                 "  - name: uplink-loss\n"
                 "    inject: [\"drop p=0.05 port=leaf1:spine1 dir=out\"]\n");
  snprintf(dir, sizeof dir, "%s.report", path); /* a folder jctlab makes */
  /* One run gives all three: the JSON (--json FILE), the report folder and
   * the terminal's tables on stdout (run_jctlab: again dilated when the
   * loop falls behind). */
  char js[256];
  craft_tmpname(js, sizeof js, ".json");
  char *argv[] = {JCT_BINARY, "run", path, "--report", dir, "--json", js, NULL};
  result_t r = run_jctlab(argv, NULL, 120);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  json_error_t je;
  json_t *doc = json_load_file(js, 0, &je);
  ck_assert_msg(doc != NULL, "%s: %s", js, je.text);
  unlink(js);
  json_t *c = json_array_get(jget(doc, "cases"), 0);
  links_add_up(c);
  for (int k = 0; k < 2; k++) {
    json_t *fl = jget(c, k ? "fabric_links.faulted" : "fabric_links.baseline");
    ck_assert_uint_eq(json_array_size(jget(fl, "links")), 16);
    ck_assert(json_is_array(jget(fl, "collisions")));
    json_int_t up = 0;
    for (size_t i = 0; i < 16; i++) {
      json_t *l = json_array_get(jget(fl, "links"), i);
      if (jbool(l, "uplink")) up += jint(l, "bytes");
    }
    /* spread: all 8 connections cross, 2 x 7 messages of 16 KiB each */
    ck_assert_int_ge(up, 8 * 14 * 16384);
  }
  /* report.md: the faulted side's table, a row per link */
  char md[320];
  snprintf(md, sizeof md, "%s/report.md", dir);
  size_t n;
  char *text = slurp(md, &n);
  ck_assert_ptr_nonnull(text);
  ck_assert_ptr_nonnull(strstr(text, "Links between switches"));
  ck_assert_ptr_nonnull(strstr(text, "| spine1:leaf3 |"));
  free(text);
  /* the terminal's table, of the same run */
  ck_assert_ptr_nonnull(strstr(r.out, "links, faulted repetitions:"));
  ck_assert_ptr_nonnull(strstr(r.out, "links, baseline repetitions:"));
  ck_assert_ptr_nonnull(strstr(r.out, "ECMP       uplink load max/mean"));
  result_free(&r);
  json_decref(doc);
  unlink(path);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A 4-rank ring size sweep at 5 Mbit/s, dilated x4 (no figure changes;
 * the loop keeps up on a busy machine), with --inject when inject. */
static json_t *sweep(const char *qps, const char *inject) {
  const char *args[24] = {
      "run",    "--synth", "ring",   "--ranks", "4",     "--bytes", "32KiB,64KiB",
      "--rate", "5mbit",   "--reps", "1",       "--tdf", "4",       "--qps-per-connection",
      qps};
  size_t n = 15;
  if (inject) args[n++] = "--inject", args[n++] = inject;
  args[n] = NULL;
  return doc_of(args);
}

/* --qps-per-connection 4: every size's run (and with --inject its
 * replay) measured traffic on 16 QPs, each of which sent. */
START_TEST(size_sweep_uses_qps) {
  const char *injects[] = {NULL, "drop p=0.001"}; /* a run per size, a replay per size */
  for (int k = 0; k < 2; k++) {
    json_t *four = sweep("4", injects[k]);
    ck_assert_int_eq(jint(four, "config.qps_per_connection"), 4);
    json_t *rows4 = jget(four, "sizes");
    ck_assert_uint_eq(json_array_size(rows4), 2);
    for (size_t i = 0; i < 2; i++) {
      json_t *r4 = json_array_get(rows4, i);
      ck_assert_msg(jint(r4, "qps_used") == 16, "size %lld, 4 QPs: %lld used",
                    (long long)jint(r4, "bytes"), (long long)jint(r4, "qps_used"));
      /* every QP sent: at least a packet each (and its messages' worth) */
      ck_assert_int_ge(jint(r4, "baseline.data_packets"), 16);
    }
    json_decref(four);
  }
}
END_TEST

/* The same sweeps without the option: one QP per connection, 4 in all.
 * Tagged sanitizer-skip: the sweeps' code (a run per size, a replay per
 * size) is the case above's, which the sanitizer pass runs, less the split
 * (and the sweep suite's sweep_rows and sweep_faulted run it there too). */
START_TEST(size_sweep_one_qp_each) {
  const char *injects[] = {NULL, "drop p=0.001"};
  for (int k = 0; k < 2; k++) {
    json_t *one = sweep("1", injects[k]);
    json_t *rows1 = jget(one, "sizes");
    for (size_t i = 0; i < 2; i++) {
      json_t *r1 = json_array_get(rows1, i);
      ck_assert_msg(jint(r1, "qps_used") == 4, "size %lld, 1 QP: %lld used",
                    (long long)jint(r1, "bytes"), (long long)jint(r1, "qps_used"));
    }
    json_decref(one);
  }
}
END_TEST

START_TEST(scenario_sweep_uses_qps) {
  char path[256];
  write_scenario(path, sizeof path,
                 "name: qps\n"
                 "synth: {algorithm: ring, ranks: 4, bytes: 32KiB}\n"
                 "rate: 5mbit\n"
                 "tdf: 4\n"
                 "qps_per_connection: 4\n"
                 "reps: 1\n"
                 "cases:\n"
                 "  - name: loss\n"
                 "    inject: [\"drop p=[0, 0.001]\"]\n");
  const char *args[] = {"run", path, NULL};
  json_t *doc = doc_of(args);
  json_t *cases = jget(doc, "cases");
  ck_assert_uint_eq(json_array_size(cases), 2);
  for (size_t c = 0; c < 2; c++) {
    json_t *qps = jget(json_array_get(cases, c), "qps");
    ck_assert_uint_eq(json_array_size(qps), 16);
    json_int_t bytes = 0;
    for (size_t i = 0; i < 16; i++) {
      json_t *q = json_array_get(qps, i);
      ck_assert_int_eq(jint(q, "conn"), (json_int_t)i);
      ck_assert_msg(jnum(q, "baseline.bw_bps") > 0 && jnum(q, "faulted.bw_bps") > 0,
                    "case %zu: QP %zu carried nothing", c, i);
      bytes += jint(q, "bytes");
    }
    ck_assert_int_eq(bytes, 4 * 6 * 8192); /* 4 connections, 2(N-1) messages of S/N */
  }
  json_decref(doc);
  unlink(path);
}
END_TEST

START_TEST(qps_bad_input) {
  const char *bad[] = {"0", "abc", NULL};
  for (int i = 0; bad[i]; i++) {
    char *argv[] = {JCT_BINARY,
                    "run",
                    "--synth",
                    "ring",
                    "--ranks",
                    "4",
                    "-b",
                    "1K",
                    "-e",
                    "4K",
                    "--qps-per-connection",
                    (char *)bad[i],
                    NULL};
    char word[16];
    snprintf(word, sizeof word, "'%s'", bad[i]);
    expect_bad_input(argv, "--qps-per-connection", word);
  }
  /* 12 bytes over a 4-rank ring: 3-byte messages, not 4 QPs' worth */
  char *tiny[] = {JCT_BINARY, "run",     "--synth",
                  "ring",     "--ranks", "4",
                  "--bytes",  "12,4KiB", "--qps-per-connection",
                  "4",        NULL};
  expect_bad_input(tiny, "size 12", "cannot be split across 4 QPs");
  char path[256];
  write_scenario(path, sizeof path,
                 "name: qps\nsynth: {algorithm: ring, ranks: 4, bytes: 32KiB}\n"
                 "qps_per_connection: 0\ncases:\n  - name: none\n    inject: []\n");
  char *scen[] = {JCT_BINARY, "run", path, NULL};
  expect_bad_input(scen, "qps_per_connection", NULL);
  unlink(path);
}
END_TEST

START_TEST(capture_between_switches) {
  char pcap[256], ijs[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  craft_tmpname(ijs, sizeof ijs, ".json");
  const char *args[] = {
      "run",         "--synth",      "ring",   "--ranks",     "8",     "--bytes",    "128KiB",
      "--rate",      "5mbit",        "--reps", "1",           "--tdf", "4",          "--topology",
      TOPO,          "--placement",  "spread", "--ecmp-seed", "5",     "--pcap-out", pcap,
      "--pcap-port", "leaf0:spine1", NULL};
  json_t *doc = doc_of(args);
  json_t *link = link_in(jget(doc, "fabric_links.links"), "leaf0:spine1");
  ck_assert_int_gt(jint(link, "frames"), 100); /* seed 5: two ring steps share it */
  char *argv[] = {JCT_BINARY, "inspect", pcap, "--json", ijs, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_msg(r.status == 0, "inspect exited %d: %s", r.status, r.err);
  result_free(&r);
  json_error_t je;
  json_t *ins = json_load_file(ijs, 0, &je);
  ck_assert_ptr_nonnull(ins);
  ck_assert_int_eq(jint(ins, "totals.roce_packets"), jint(link, "frames"));
  ck_assert_int_eq(jint(ins, "totals.frames"), jint(link, "frames")); /* no pause, no other */
  ck_assert_int_eq(jint(ins, "totals.wire_bytes"), jint(link, "bytes"));
  double span = (double)jint(ins, "capture.duration_ns");
  double least = (double)jint(link, "bytes") * 8 / 5e6 * 1e9 * 0.99; /* saturated uplink */
  double jct = (double)jint(doc, "jct.median_ns");
  ck_assert_msg(span >= least && span <= jct, "capture spans %.0f ns: bytes take %.0f, JCT %.0f",
                span, least, jct);
  json_decref(ins);
  json_decref(doc);
  unlink(pcap);
  unlink(ijs);
}
END_TEST

START_TEST(capture_port_bad_input) {
  char pcap[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  unlink(pcap);
  char *nolink[] = {JCT_BINARY, "run",         "--synth",      "ring",   "--ranks",
                    "8",        "--bytes",     "64KiB",        "--rate", "5mbit",
                    "--reps",   "1",           "--topology",   TOPO,     "--pcap-out",
                    pcap,       "--pcap-port", "leaf9:spine1", NULL};
  expect_bad_input(nolink, "--pcap-port leaf9:spine1", "no such link");
  ck_assert_msg(access(pcap, F_OK) != 0, "%s was left behind", pcap);
  char *star[] = {JCT_BINARY,   "run",   "--synth",     "ring",         "--ranks", "4",
                  "--bytes",    "64KiB", "--rate",      "5mbit",        "--reps",  "1",
                  "--pcap-out", pcap,    "--pcap-port", "leaf0:spine0", NULL};
  expect_bad_input(star, "--pcap-port leaf0:spine0", "the star has no links between switches");
  ck_assert_msg(access(pcap, F_OK) != 0, "%s was left behind", pcap);
  char *rank[] = {JCT_BINARY,   "run",   "--synth",     "ring",  "--ranks", "4",
                  "--bytes",    "64KiB", "--rate",      "5mbit", "--reps",  "1",
                  "--pcap-out", pcap,    "--pcap-port", "4",     NULL};
  expect_bad_input(rank, "--pcap-port 4", "a rank 0 to 3");
  char *alone[] = {JCT_BINARY, "run",   "--synth",     "ring", "--ranks", "4",
                   "--bytes",  "64KiB", "--pcap-port", "1",    NULL};
  expect_bad_input(alone, "--pcap-port 1", "needs --pcap-out");
}
END_TEST

Suite *links_suite(void) {
  Suite *s = suite_create("links");
  TCase *reports = tcase_create("reports");
  tcase_set_timeout(reports, 300);
  tcase_add_test(reports, replay_peaks_per_side);
  tcase_add_test(reports, scenario_case_has_links);
  suite_add_tcase(s, reports);
  TCase *qps = tcase_create("qps");
  tcase_set_timeout(qps, 300);
  tcase_add_test(qps, size_sweep_uses_qps);
  tcase_add_test(qps, scenario_sweep_uses_qps);
  tcase_add_test(qps, qps_bad_input);
  suite_add_tcase(s, qps);
  /* The build pass only (scripts/test): the sweeps without the option,
   * whose code size_sweep_uses_qps runs under the sanitizers. */
  TCase *one = tcase_create("qps_default");
  tcase_set_timeout(one, 300);
  tcase_set_tags(one, "sanitizer-skip");
  tcase_add_test(one, size_sweep_one_qp_each);
  suite_add_tcase(s, one);
  TCase *cap = tcase_create("capture");
  tcase_set_timeout(cap, 300);
  tcase_add_test(cap, capture_between_switches);
  tcase_add_test(cap, capture_port_bad_input);
  suite_add_tcase(s, cap);
  return s;
}
