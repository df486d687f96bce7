/* `jctlab run`'s size sweep (nccl-tests' -b/-e/-f, a size list, -w):
 *   - the sizes a range or a list makes, and what is refused (min above
 *     max, a factor not above 1, more than 64 sizes, a bad list);
 *   - nccl-tests' count column;
 *   - bad command lines: exit 2 and one line naming the problem, before
 *     anything is built, for every size (a message over 2^31 bytes too);
 *   - a small sweep on uroce, as a user runs it (the built binary): one
 *     table row per size, the JSON's rows add up (algbw, busbw with the
 *     collective's factor, count), every key present;
 *   - warm-up repetitions run and are not measured (the capture holds
 *     them, the counters do not);
 *   - with --inject each size is a replay: baseline and faulted sides,
 *     degradation and its interval, drops, one fault log per size. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "harness/plan/size_sweep.h"
#include "harness/report/sweep.h"
#include "jctlab/error.h"
#include "suites.h"
#include "testkit.h"

START_TEST(range_doubles) {
  uint64_t s[JCT_SWEEP_MAX_SIZES];
  uint32_t n;
  char err[256];
  /* nccl-tests' -b 8 -e 128M -f 2: 8, 16, ..., 128 MiB. */
  ck_assert_int_eq(jct__sweep_sizes_range(8, 128u << 20, 2, s, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 25);
  for (uint32_t i = 0; i < n; i++)
    ck_assert_uint_eq(s[i], 8ull << i);
  /* A max between two steps is not reached. */
  ck_assert_int_eq(jct__sweep_sizes_range(1000, 8999, 3, s, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(s[1], 3000);
  /* One size. */
  ck_assert_int_eq(jct__sweep_sizes_range(4096, 4096, 2, s, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 1);
  /* 64 sizes is the most: 1 to 2^63, up to the top of 64 bits. */
  ck_assert_int_eq(jct__sweep_sizes_range(1, UINT64_MAX, 2, s, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 64);
  ck_assert_uint_eq(s[63], 1ull << 63);
}
END_TEST

START_TEST(range_fractional_factor) {
  uint64_t s[JCT_SWEEP_MAX_SIZES];
  uint32_t n;
  char err[256];
  /* Rounded down to whole bytes: 1000 x 1.5^k. */
  ck_assert_int_eq(jct__sweep_sizes_range(1000, 8000, 1.5, s, &n, err, sizeof err), 0);
  static const uint64_t want[] = {1000, 1500, 2250, 3375, 5062, 7593};
  ck_assert_uint_eq(n, sizeof want / sizeof *want);
  for (uint32_t i = 0; i < n; i++)
    ck_assert_uint_eq(s[i], want[i]);
  /* Steps that round to the same byte: the factor is too small there. */
  ck_assert_int_eq(jct__sweep_sizes_range(1, 3, 1.2, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "too small") && strstr(err, "(1 bytes)"), "%s", err);
}
END_TEST

START_TEST(range_refused) {
  uint64_t s[JCT_SWEEP_MAX_SIZES];
  uint32_t n;
  char err[256];
  ck_assert_int_eq(jct__sweep_sizes_range(2048, 1024, 2, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "--bytes-min 2048 is above --bytes-max 1024"), "%s", err);
  ck_assert_int_eq(jct__sweep_sizes_range(8, 1024, 1, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "--bytes-factor 1") && strstr(err, "above 1"), "%s", err);
  ck_assert_int_eq(jct__sweep_sizes_range(8, 1024, 0.5, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct__sweep_sizes_range(8, 1024, INFINITY, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct__sweep_sizes_range(0, 1024, 2, s, &n, err, sizeof err), JCT_EINVAL);
  /* 1000 x 1.5^k up to 2^60: 86 sizes. */
  ck_assert_int_eq(jct__sweep_sizes_range(1000, 1ull << 60, 1.5, s, &n, err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "more than 64 sizes"), "%s", err);
}
END_TEST

START_TEST(size_lists) {
  uint64_t s[JCT_SWEEP_MAX_SIZES];
  uint32_t n;
  char err[256];
  ck_assert_int_eq(jct__sweep_sizes_list("1MiB,4MiB,16MiB", s, &n, err, sizeof err), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(s[0], 1u << 20);
  ck_assert_uint_eq(s[2], 16u << 20);
  ck_assert_int_eq(jct__sweep_sizes_list("64K,8", s, &n, err, sizeof err), 0); /* as given */
  ck_assert_uint_eq(s[0], 65536);
  ck_assert_uint_eq(s[1], 8);
  ck_assert_int_eq(jct__sweep_sizes_list("1MiB,,4MiB", s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "empty"), "%s", err);
  ck_assert_int_eq(jct__sweep_sizes_list("1MiB,", s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct__sweep_sizes_list("1MiB,lots", s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "'lots' is not a size"), "%s", err);
  ck_assert_int_eq(jct__sweep_sizes_list("1M,1MiB", s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "1048576 bytes is in the list twice"), "%s", err);
  ck_assert_int_eq(jct__sweep_sizes_list("0,8", s, &n, err, sizeof err), JCT_EINVAL);
  char many[1024] = "";
  for (int i = 1; i <= 65; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d", i > 1 ? "," : "", i);
  ck_assert_int_eq(jct__sweep_sizes_list(many, s, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "more than 64 sizes"), "%s", err);
}
END_TEST

/* nccl-tests' count: floats, per rank where its collective counts so. */
START_TEST(counts) {
  ck_assert_uint_eq(jct__sweep_count("ring", 4, 1u << 20), 262144);
  ck_assert_uint_eq(jct__sweep_count("broadcast", 4, 1u << 20), 262144);
  ck_assert_uint_eq(jct__sweep_count("all-gather", 4, 1u << 20), 65536);
  ck_assert_uint_eq(jct__sweep_count("reduce-scatter", 4, 1u << 20), 65536);
  ck_assert_uint_eq(jct__sweep_count("all-to-all", 8, 1u << 20), 32768);
}
END_TEST

#define expect_bad expect_bad_input /* testkit.h */

#define RUN(...)                                                                                   \
  { JCT_BINARY, "run", __VA_ARGS__, NULL }

START_TEST(bad_sweeps) {
  char *inverted[] = RUN("--synth", "ring", "--ranks", "2", "-b", "1M", "-e", "64K");
  expect_bad(inverted, "--bytes-min 1048576 is above --bytes-max 65536", NULL);
  char *factor[] = RUN("--synth", "ring", "--ranks", "2", "-b", "8", "-e", "1M", "-f", "1");
  expect_bad(factor, "--bytes-factor", "above 1");
  char *many[] = RUN("--synth", "ring", "--ranks", "2", "-b", "8", "-e", "1G", "-f", "1.2");
  expect_bad(many, "more than 64 sizes", NULL);
  char *both[] = RUN("--synth", "ring", "--ranks", "2", "--bytes", "1M", "-b", "8", "-e", "1M");
  expect_bad(both, "not both", NULL);
  char *half[] = RUN("--synth", "ring", "--ranks", "2", "--bytes-min", "8");
  expect_bad(half, "--bytes-max", NULL);
  char *sched[] = RUN("--schedule", "x.json", "-b", "8", "-e", "1M");
  expect_bad(sched, "--synth", NULL);
  char *list[] = RUN("--synth", "ring", "--ranks", "2", "--bytes", "1M,,2M");
  expect_bad(list, "empty", NULL);
  char *warm[] = RUN("--synth", "ring", "--ranks", "2", "--bytes", "1M", "--warmup", "101");
  expect_bad(warm, "--warmup", "'101'");
  /* Every size is checked before anything is built: the second size's
   * messages (a ring of 2 ranks, 8 GiB: 4 GiB each) are over RoCE's 2^31. */
  char *huge[] = RUN("--synth", "ring", "--ranks", "2", "--bytes", "1M,8GiB");
  expect_bad(huge, "size 8589934592", "2^31");
  /* Too small for one byte per chunk (all-gather of 4 ranks, 2 bytes). */
  char *tiny[] = RUN("--synth", "all-gather", "--ranks", "4", "-b", "2", "-e", "64");
  expect_bad(tiny, "size 2", "less than one byte per chunk");
  /* A broadcast of 1 TiB is 2 M chunks of 512 KiB a hop. */
  char *ops[] = RUN("--synth", "broadcast", "--ranks", "4", "--bytes", "1M,1TiB");
  expect_bad(ops, "size 1099511627776", "ops");
}
END_TEST

/* Run jctlab with args, its JSON on stdout; again (up to 3 times in all)
 * while a size was invalid because the event loop fell behind on a loaded
 * machine (jctlab rightly refuses to report those). */
static json_t *sweep_json(char *const argv[], int *status, char **err) {
  json_t *doc = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (attempt) {
      json_decref(doc);
      free(*err);
    }
    result_t r = run_jctlab(argv, NULL, 60);
    *status = r.status;
    *err = r.err;
    r.err = NULL;
    doc = r.status == 0 || r.status == 3 ? parse_json(r.out, "sweep") : NULL;
    result_free(&r);
    if (*status != 3 || !strstr(*err, "lateness")) break;
  }
  return doc;
}

/* Every key of a row, null where it has no value. */
static void assert_row_keys(json_t *row) {
  static const char *const keys[] = {"bytes",    "count",    "valid",       "invalid_why",
                                     "baseline", "faulted",  "degradation", "dropped",
                                     "model",    "lateness", "loop_bound"};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
    ck_assert_msg(json_object_get(row, keys[k]) != NULL, "a row has no %s", keys[k]);
  static const char *const side[] = {"jct_ns",
                                     "median_ns",
                                     "min_ns",
                                     "max_ns",
                                     "algbw_gbps",
                                     "busbw_gbps",
                                     "packets",
                                     "data_packets",
                                     "retransmitted_packets",
                                     "retransmitted_bytes",
                                     "naks",
                                     "timeouts"};
  for (size_t k = 0; k < sizeof side / sizeof *side; k++)
    ck_assert_msg(json_object_get(json_object_get(row, "baseline"), side[k]) != NULL,
                  "baseline has no %s", side[k]);
}

/* A sweep without faults: one row per size, figures that add up. */
START_TEST(sweep_rows) {
  char *argv[] = RUN("--synth", "allgather", "--ranks", "3", "-b", "32K", "-e", "128K", "-f", "2",
                     "--reps", "2", "--rate", "50mbit", "--json", "-");
  int status;
  char *err;
  json_t *doc = sweep_json(argv, &status, &err);
  ck_assert_msg(status == 0, "exit %d: %s", status, err);
  ck_assert_int_eq(jint(doc, "jctlab_sweep"), 1);
  ck_assert_str_eq(json_string_value(jget(doc, "config.algorithm")), "all-gather");
  ck_assert_int_eq(jint(doc, "config.warmup"), 1); /* nccl-tests' default with a sweep */
  /* 50 Mbit/s: under the ceiling, undilated; a loop-bound run's retry
   * (testkit) sets a ceiling of a quarter of it, which dilates x4 */
  double ceiling_bps = jnum(doc, "config.dilation.ceiling_bps");
  if (ceiling_bps >= 50e6) {
    ck_assert(jnum(doc, "config.dilation.tdf") == 1);
    ck_assert(!jbool(doc, "config.dilation.auto"));
  } else {
    ck_assert_msg(fabs(jnum(doc, "config.dilation.tdf") - 50e6 / ceiling_bps) < 0.01,
                  "tdf %g under a ceiling of %g bit/s", jnum(doc, "config.dilation.tdf"),
                  ceiling_bps);
    ck_assert(jbool(doc, "config.dilation.auto"));
  }
  ck_assert(json_is_null(jget(doc, "interrupted")));
  ck_assert(json_is_null(jget(doc, "avg_busbw_gbps.faulted")));
  json_t *sizes = jget(doc, "sizes");
  ck_assert_uint_eq(json_array_size(sizes), 3);
  double busbw_sum = 0;
  for (size_t i = 0; i < 3; i++) {
    json_t *row = json_array_get(sizes, i);
    assert_row_keys(row);
    double bytes = (double)(32768 << i);
    ck_assert_int_eq(jint(row, "bytes"), 32768 << i);
    ck_assert_int_eq(jint(row, "count"), (32768 << i) / 4 / 3);
    ck_assert_msg(jbool(row, "valid"), "size %zu: %s", i,
                  json_string_value(jget(row, "invalid_why")));
    ck_assert(json_is_null(jget(row, "faulted")));
    ck_assert(json_is_null(jget(row, "degradation")));
    ck_assert(json_is_null(jget(row, "dropped")));
    ck_assert_uint_eq(json_array_size(jget(row, "baseline.jct_ns")), 2);
    double median = jnum(row, "baseline.median_ns");
    ck_assert(jnum(row, "baseline.min_ns") <= median && median <= jnum(row, "baseline.max_ns"));
    ck_assert_double_eq_tol(jnum(row, "baseline.algbw_gbps"), bytes / median, 1e-9);
    ck_assert_double_eq_tol(jnum(row, "baseline.busbw_gbps"), bytes / median * 2 / 3, 1e-9);
    ck_assert_int_eq(jint(row, "baseline.retransmitted_packets"), 0);
    /* Lossless: the links' bound holds. */
    ck_assert_double_ge(median, 0.95 * bytes * 2 / 3 * 8e9 / 50e6);
    busbw_sum += jnum(row, "baseline.busbw_gbps");
    printf("sweep: all-gather 3 ranks %.0f B: %.2f ms, model ratio %.2f\n", bytes, median / 1e6,
           jnum(row, "model.ratio"));
  }
  ck_assert_double_eq_tol(jnum(doc, "avg_busbw_gbps.baseline"), busbw_sum / 3, 1e-12);
  json_decref(doc);
  free(err);
}
END_TEST

/* The text table: nccl-tests' heading, then one row per size. */
START_TEST(sweep_table) {
  char *argv[] = RUN("--synth", "broadcast", "--ranks", "3", "--bytes", "96K,32K", "--reps", "1",
                     "--rate", "50mbit");
  result_t r = run_jctlab(argv, NULL, 60);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "#       size         count   type"));
  ck_assert_ptr_nonnull(strstr(r.out, "# Avg bus bandwidth, baseline: "));
  unsigned long long want[] = {98304, 32768}, got;
  size_t rows = 0;
  for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    ck_assert_uint_lt(rows, 2);
    unsigned long long count;
    char type[8];
    double us, algbw, busbw;
    ck_assert_int_eq(
        sscanf(line, "%llu %llu %7s %lf %lf %lf", &got, &count, type, &us, &algbw, &busbw), 6);
    ck_assert_uint_eq(got, want[rows]);
    ck_assert_uint_eq(count, want[rows] / 4);
    ck_assert_str_eq(type, "float");
    ck_assert_double_eq_tol(algbw, (double)got / (us * 1e3), 1e-3); /* both rounded */
    ck_assert_double_eq_tol(busbw, algbw, 1e-4);                    /* broadcast: factor 1 */
    ck_assert_ptr_nonnull(strstr(line, "N/A"));                     /* no faults */
    rows++;
  }
  ck_assert_uint_eq(rows, 2);
  result_free(&r);
}
END_TEST

/* Frames in a classic pcap file. */
static size_t pcap_records(const char *path) {
  size_t len;
  char *b = slurp(path, &len);
  ck_assert_ptr_nonnull(b);
  size_t n = 0;
  for (size_t off = 24; off + 16 <= len; n++) {
    uint32_t caplen;
    memcpy(&caplen, b + off + 8, 4);
    off += 16 + caplen;
  }
  free(b);
  return n;
}

/* Warm-up repetitions cross the switch (the capture has them) and are in
 * no figure (the counters are the measured repetition's). */
static void warmup_case(const char *warmup, double lo, double hi) {
  char pcap[256];
  craft_tmpname(pcap, sizeof pcap, ".pcap");
  char *argv[] =
      RUN("--synth", "ring", "--ranks", "2", "-b", "64K", "-e", "64K", "--reps", "1", "--warmup",
          (char *)warmup, "--rate", "50mbit", "--pcap-out", pcap, "--json", "-");
  int status;
  char *err;
  json_t *doc = sweep_json(argv, &status, &err);
  ck_assert_msg(status == 0, "exit %d: %s", status, err);
  ck_assert_int_eq(jint(doc, "config.warmup"), atoi(warmup));
  double frames = (double)pcap_records(pcap), packets = jnum(doc, "sizes.0.baseline.packets");
  ck_assert_msg(frames >= lo * packets && frames <= hi * packets,
                "--warmup %s: %.0f frames captured, %.0f packets measured", warmup, frames,
                packets);
  unlink(pcap);
  json_decref(doc);
  free(err);
}

START_TEST(warmup_not_measured) {
  warmup_case("0", 0.9, 1.1);
  warmup_case("2", 2.7, 3.3);
}
END_TEST

/* With --inject, each size is a replay. */
START_TEST(sweep_faulted) {
  char log[256], log1[300], log2[300];
  craft_tmpname(log, sizeof log, ".jsonl");
  snprintf(log1, sizeof log1, "%.*s-size32768.jsonl", (int)(strlen(log) - 6), log);
  snprintf(log2, sizeof log2, "%.*s-size131072.jsonl", (int)(strlen(log) - 6), log);
  char *argv[] =
      RUN("--synth", "broadcast", "--ranks", "3", "--bytes", "32K,128K", "--reps", "5", "--rate",
          "10mbit", "--inject", "drop p=0.03", "--fault-log", log, "--json", "-");
  int status;
  char *err;
  json_t *doc = sweep_json(argv, &status, &err);
  ck_assert_msg(status == 0, "exit %d: %s", status, err);
  ck_assert_str_eq(json_string_value(jget(doc, "config.inject.0")), "drop p=0.03");
  json_int_t dropped = 0;
  for (size_t i = 0; i < 2; i++) {
    json_t *row = json_array_get(jget(doc, "sizes"), i);
    assert_row_keys(row);
    ck_assert_msg(jbool(row, "valid"), "size %zu: %s", i,
                  json_string_value(jget(row, "invalid_why")));
    ck_assert_uint_eq(json_array_size(jget(row, "baseline.jct_ns")), 5);
    ck_assert_uint_eq(json_array_size(jget(row, "faulted.jct_ns")), 5);
    /* The baseline never met an injector. */
    ck_assert_int_eq(jint(row, "baseline.retransmitted_packets"), 0);
    double d = jnum(row, "degradation.median");
    ck_assert_double_eq_tol(d, jnum(row, "faulted.median_ns") / jnum(row, "baseline.median_ns"),
                            1e-9);
    ck_assert(jnum(row, "degradation.ci95_low") <= d && d <= jnum(row, "degradation.ci95_high"));
    ck_assert_double_eq_tol(jnum(row, "faulted.busbw_gbps"), jnum(row, "faulted.algbw_gbps"),
                            1e-12);
    dropped += jint(row, "dropped");
    printf("sweep: broadcast 3 ranks %lld B, drop p=0.03: degradation %.3f [%.3f, %.3f]\n",
           (long long)jint(row, "bytes"), d, jnum(row, "degradation.ci95_low"),
           jnum(row, "degradation.ci95_high"));
  }
  /* About 12 drops expected: 5 faulted repetitions of 2 x (8 + 32) data
   * packets, at 3%. */
  ck_assert_int_gt(dropped, 0);
  ck_assert(jnum(doc, "avg_busbw_gbps.faulted") > 0);
  /* One fault log per size, a line per drop of that size; nothing at the
   * name given (the test made it, empty). */
  const char *logs[2] = {log1, log2};
  for (size_t i = 0; i < 2; i++) {
    size_t len;
    char *text = slurp(logs[i], &len);
    ck_assert_msg(text != NULL, "no %s", logs[i]);
    ck_assert_uint_eq(count_lines(text),
                      (size_t)jint(doc, i ? "sizes.1.dropped" : "sizes.0.dropped"));
    free(text);
  }
  size_t len0;
  char *text0 = slurp(log, &len0);
  ck_assert_uint_eq(len0, 0);
  free(text0);
  unlink(log);
  unlink(log1);
  unlink(log2);
  json_decref(doc);
  free(err);
}
END_TEST

Suite *sweep_suite(void) {
  Suite *s = suite_create("sweep");
  TCase *sizes = tcase_create("sizes");
  tcase_add_test(sizes, range_doubles);
  tcase_add_test(sizes, range_fractional_factor);
  tcase_add_test(sizes, range_refused);
  tcase_add_test(sizes, size_lists);
  tcase_add_test(sizes, counts);
  suite_add_tcase(s, sizes);
  TCase *limits = tcase_create("limits");
  tcase_set_timeout(limits, 30);
  tcase_add_test(limits, bad_sweeps);
  suite_add_tcase(s, limits);
  TCase *runs = tcase_create("runs");
  tcase_set_timeout(runs, 180);
  tcase_add_test(runs, sweep_rows);
  tcase_add_test(runs, sweep_table);
  tcase_add_test(runs, warmup_not_measured);
  tcase_add_test(runs, sweep_faulted);
  suite_add_tcase(s, runs);
  return s;
}
