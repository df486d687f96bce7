/* The replay's statistics without a fabric (include/jctlab/replay.h):
 * medians, nearest-rank p99, the bootstrap interval of the degradation,
 * the critical path walked back through the dependencies, and the per-QP
 * figures gathered from the repetitions' timings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/replay.h"
#include "harness/orch/qp_stats.h"
#include "harness/orch/replay_int.h"
#include "suites.h"

START_TEST(medians_and_p99) {
  uint64_t b[5] = {100, 104, 98, 101, 99}, f[5] = {150, 170, 149, 160, 155};
  jct_replay_side_t sb = {0}, sf = {0};
  double d, lo, hi;
  jct_replay_stats(b, f, 5, 1, &sb, &sf, &d, &lo, &hi);
  ck_assert_uint_eq(sb.median_ns, 100);
  ck_assert_uint_eq(sf.median_ns, 155);
  ck_assert_uint_eq(sb.min_ns, 98);
  ck_assert_uint_eq(sf.max_ns, 170);
  ck_assert_uint_eq(sf.p99_ns, 170); /* nearest rank of 5 is the largest */
  ck_assert_uint_eq(sb.median_rep, 0);
  ck_assert_uint_eq(sf.median_rep, 4);
  ck_assert_double_eq_tol(d, 1.55, 1e-12);
  /* The interval holds the point estimate and lies within the extreme ratios. */
  ck_assert(lo <= d && d <= hi);
  ck_assert(lo >= 149.0 / 104 - 1e-12 && hi <= 170.0 / 98 + 1e-12);
  ck_assert(lo < hi);
  /* Even counts: the median is the mean of the middle two. */
  uint64_t e[4] = {10, 40, 20, 30};
  jct_replay_stats(e, e, 4, 1, &sb, &sf, &d, &lo, &hi);
  ck_assert_uint_eq(sb.median_ns, 25);
  ck_assert_double_eq_tol(d, 1.0, 1e-12);
}
END_TEST

START_TEST(p99_of_many) {
  uint64_t v[200];
  for (int i = 0; i < 200; i++)
    v[i] = (uint64_t)(200 - i); /* 200 .. 1 */
  jct_replay_side_t sb = {0}, sf = {0};
  double d, lo, hi;
  jct_replay_stats(v, v, 200, 3, &sb, &sf, &d, &lo, &hi);
  ck_assert_uint_eq(sb.p99_ns, 198); /* rank ceil(0.99 * 200) = 198 */
  ck_assert_uint_eq(sb.median_ns, 100); /* (100 + 101) / 2, truncated */
}
END_TEST

START_TEST(bootstrap_repeats_and_narrows) {
  uint64_t b[7] = {1000, 1010, 990, 1005, 995, 1002, 998};
  uint64_t f[7] = {2000, 2100, 1900, 2050, 1950, 2020, 1980};
  jct_replay_side_t sb, sf;
  double d1, lo1, hi1, d2, lo2, hi2;
  jct_replay_stats(b, f, 7, 42, &sb, &sf, &d1, &lo1, &hi1);
  jct_replay_stats(b, f, 7, 42, &sb, &sf, &d2, &lo2, &hi2);
  ck_assert(lo1 == lo2 && hi1 == hi2); /* the same seed, the same interval */
  /* Identical repetitions: no spread, the interval is the point. */
  uint64_t same_b[5] = {500, 500, 500, 500, 500}, same_f[5] = {600, 600, 600, 600, 600};
  jct_replay_stats(same_b, same_f, 5, 42, &sb, &sf, &d2, &lo2, &hi2);
  ck_assert_double_eq_tol(lo2, 1.2, 1e-12);
  ck_assert_double_eq_tol(hi2, 1.2, 1e-12);
  /* One repetition: no interval to speak of, it is the point too. */
  jct_replay_stats(b, f, 1, 42, &sb, &sf, &d2, &lo2, &hi2);
  ck_assert_double_eq_tol(lo2, 2.0, 1e-12);
  ck_assert_double_eq_tol(hi2, 2.0, 1e-12);
}
END_TEST

/* A chain 0 -> 1 -> 2 (op i goes from rank i to rank i+1 and depends on
 * op i-1), plus an op 3 on the side; in the faulted run op 1's transfer
 * took 500 ns longer. */
START_TEST(critical_path) {
  jct_conn_t conns[4] = {{0, 1, 0}, {1, 2, 0}, {2, 3, 0}, {3, 0, 0}};
  uint32_t d0[] = {0}, d1[] = {1};
  jct_op_t ops[4] = {{0, 10, NULL, 0, 0, 0},
                     {1, 10, d0, 1, 0, 1},
                     {2, 10, d1, 1, 0, 2},
                     {3, 10, NULL, 0, 0, 0}};
  jct_schedule_t s = {.nranks = 4, .bytes = 40, .conns = conns, .nconns = 4, .ops = ops, .nops = 4};
  jct_op_timing_t base[4] = {{0, 0, 100}, {100, 100, 200}, {200, 200, 300}, {0, 0, 150}};
  jct_op_timing_t fault[4] = {{0, 0, 100}, {100, 100, 700}, {700, 700, 800}, {0, 0, 160}};
  jct_replay_result_t r = {0};
  ck_assert_int_eq(jct__replay_path(&s, base, fault, &r), 0);
  ck_assert_uint_eq(r.npath, 3);
  ck_assert_uint_eq(r.path[0].op, 0);
  ck_assert_uint_eq(r.path[1].op, 1);
  ck_assert_uint_eq(r.path[2].op, 2);
  ck_assert_uint_eq(r.path[0].late_ns, 0);
  ck_assert_uint_eq(r.path[1].late_ns, 500);
  ck_assert_uint_eq(r.path[2].late_ns, 500);
  ck_assert_int_eq(r.path[1].added_ns, 500);
  ck_assert_int_eq(r.path[2].added_ns, 0);
  ck_assert_int_eq(r.culprit, 1);
  free(r.path);

  /* When the side op finishes last, the path is that op alone. */
  fault[3].done_ns = 900;
  ck_assert_int_eq(jct__replay_path(&s, base, fault, &r), 0);
  ck_assert_uint_eq(r.npath, 1);
  ck_assert_uint_eq(r.path[0].op, 3);
  ck_assert_uint_eq(r.path[0].late_ns, 750);
  free(r.path);

  /* Two messages on one connection, no deps (the shipped trace's shape):
   * the second started at once but could complete only after the first,
   * which a loss held up: the path is both, the first the culprit. */
  jct_op_t q[2] = {{0, 10, NULL, 0, 0, 0}, {0, 10, NULL, 0, 0, 0}};
  jct_schedule_t s2 = {.nranks = 2, .bytes = 20, .conns = conns, .nconns = 1, .ops = q, .nops = 2};
  jct_op_timing_t b2[2] = {{0, 0, 100}, {0, 0, 200}}, f2[2] = {{0, 0, 900}, {0, 0, 1000}};
  ck_assert_int_eq(jct__replay_path(&s2, b2, f2, &r), 0);
  ck_assert_uint_eq(r.npath, 2);
  ck_assert_uint_eq(r.path[0].op, 0);
  ck_assert_uint_eq(r.path[1].op, 1);
  ck_assert_int_eq(r.culprit, 0);
  free(r.path);
}
END_TEST

/* Per-QP figures from repetitions' timings (harness/orch/qp_stats.h):
 * ops interleaved over three connections, one of them idle. */
START_TEST(per_qp_figures) {
  jct_conn_t conns[3] = {{0, 1, 0}, {1, 0, 0}, {0, 1, 1}};
  jct_op_t ops[4] = {{0, 1000, NULL, 0, 0, 0},
                     {1, 500, NULL, 0, 0, 0},
                     {0, 3000, NULL, 0, 0, 1},
                     {0, 1000, NULL, 0, 0, 2}};
  jct_schedule_t s = {
      .nranks = 2, .bytes = 5500, .conns = conns, .nconns = 3, .ops = ops, .nops = 4};
  /* Connection 0's messages take 100, 300, 200 ns, then 400, 500, 600;
   * it is busy from its first post to its last completion 500 ns, then
   * 1000 ns. Connection 1's one message: 50 ns, then 70. */
  jct_op_timing_t t1[4] = {{0, 0, 100}, {0, 10, 60}, {0, 100, 400}, {0, 300, 500}};
  jct_op_timing_t t2[4] = {{0, 0, 400}, {0, 30, 100}, {0, 400, 900}, {0, 400, 1000}};
  jct_op_timing_t broken[4] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  jct_conn_counts_t retx1[3] = {{5, 3, 700}, {0, 0, 0}, {0, 0, 0}},
                    retx2[3] = {{2, 1, 100}, {1, 0, 0}, {0, 0, 0}};
  jct_rep_t r1 = {.ok = true, .timing = t1, .conn = retx1};
  jct_rep_t r2 = {.ok = true, .timing = t2, .conn = retx2};
  jct_rep_t bad = {.ok = false, .timing = broken, .conn = retx1};

  jct__qp_acc_t *a;
  ck_assert_int_eq(jct__qp_acc_new(&a, &s, 3, JCT_QP_MAX_SAMPLES, true), 0);
  jct__qp_acc_add(a, &r1);
  jct__qp_acc_add(a, &bad); /* a failed repetition adds nothing */
  jct__qp_acc_add(a, &r2);
  jct_qp_figures_t *q;
  ck_assert_int_eq(jct__qp_acc_figures(a, &q), 0);
  jct__qp_acc_free(a);
  ck_assert_uint_eq(q[0].bytes, 5000);
  ck_assert_uint_eq(q[0].messages, 3);
  ck_assert_uint_eq(q[0].reps, 2);
  ck_assert_uint_eq(q[0].completion_reps, 2);
  /* perftest's average: 2 x 5000 bytes over 500 + 1000 ns. */
  ck_assert_double_eq_tol(q[0].bw_bps, 8e9 * 10000 / 1500, 1e-3);
  /* 100 200 300 400 500 600: nearest rank 3 and 6. */
  ck_assert_uint_eq(q[0].completion_p50_ns, 300);
  ck_assert_uint_eq(q[0].completion_p99_ns, 600);
  ck_assert_uint_eq(q[0].completion_max_ns, 600);
  ck_assert(q[0].retx_counted);
  ck_assert_uint_eq(q[0].retx_packets, 7);
  ck_assert_uint_eq(q[0].rate_cuts, 4);
  ck_assert_uint_eq(q[0].below_line_rate_ns, 800);
  ck_assert_uint_eq(q[1].bytes, 500);
  ck_assert_uint_eq(q[1].completion_p50_ns, 50);
  ck_assert_uint_eq(q[1].completion_max_ns, 70);
  ck_assert_double_eq_tol(q[1].bw_bps, 8e9 * 1000 / 120, 1e-3);
  ck_assert_uint_eq(q[1].retx_packets, 1);
  ck_assert_uint_eq(q[2].messages, 0); /* idle: no figure */
  ck_assert_uint_eq(q[2].bytes, 0);
  ck_assert(isnan(q[2].bw_bps));
  free(q);

  /* Room for one repetition's times only: the percentiles cover the
   * first, the bandwidth and retransmissions both; no per-QP counts. */
  ck_assert_int_eq(jct__qp_acc_new(&a, &s, 2, 5, false), 0);
  jct__qp_acc_add(a, &r1);
  jct__qp_acc_add(a, &r2);
  ck_assert_int_eq(jct__qp_acc_figures(a, &q), 0);
  jct__qp_acc_free(a);
  ck_assert_uint_eq(q[0].reps, 2);
  ck_assert_uint_eq(q[0].completion_reps, 1);
  ck_assert_uint_eq(q[0].completion_p50_ns, 200);
  ck_assert_uint_eq(q[0].completion_max_ns, 300);
  ck_assert_double_eq_tol(q[0].bw_bps, 8e9 * 10000 / 1500, 1e-3);
  ck_assert(!q[0].retx_counted);
  free(q);
}
END_TEST

Suite *replay_stats_suite(void) {
  Suite *s = suite_create("replay_stats");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, medians_and_p99);
  tcase_add_test(tc, p99_of_many);
  tcase_add_test(tc, bootstrap_repeats_and_narrows);
  tcase_add_test(tc, critical_path);
  tcase_add_test(tc, per_qp_figures);
  suite_add_tcase(s, tc);
  return s;
}
