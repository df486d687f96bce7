/* The go-back-N loss model (include/jctlab/model.h):
 *   - W, the packets in flight when a loss is noticed, is issue 12's ~50
 *     at 400 Gbit/s with a 4 us round trip and 4 KiB MTU, and under one
 *     packet plus the detection at 100 Mbit/s and 1 us;
 *   - the predicted degradation rises with p, and with the QP timeout
 *     (20 against 14) once the timer cases count;
 *   - which faults it covers, and that other cases get no prediction;
 *   - a small lossy replay at a low rate measures a degradation whose
 *     excess over 1 is within a stated factor of the model's. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jctlab/error.h"
#include "jctlab/model.h"
#include "jctlab/schedule.h"
#include "suites.h"
#include "testkit.h"

static jct_loss_model_in_t at(uint64_t rate_bps, uint64_t delay_ns, uint8_t timeout, double p) {
  jct_loss_model_in_t in;
  memset(&in, 0, sizeof in);
  in.rate_bps = rate_bps;
  in.prop_delay_ns = delay_ns;
  in.timeout = timeout;
  in.p = p;
  in.seed = 7;
  return in;
}

static jct_schedule_t *ring(uint32_t n, uint64_t bytes) {
  jct_schedule_t *s;
  char err[200];
  ck_assert_msg(jct_schedule_synth(&s, "ring", n, bytes, 1, err, sizeof err) == 0, "%s", err);
  return s;
}

static jct_loss_model_t model(const jct_schedule_t *s, jct_loss_model_in_t in) {
  jct_loss_model_t m;
  char err[200];
  ck_assert_msg(jct_loss_model(s, NULL, &in, &m, err, sizeof err) == 0, "%s", err);
  return m;
}

START_TEST(window_at_400gbit) {
  jct_loss_model_in_t in = at(400000000000ull, 1000, 20, 1e-4); /* 4 us RTT */
  jct_loss_model_t m;
  jct_loss_model_params(&in, &m);
  /* (4096 + 82) bytes * 8 / 400 Gbit/s */
  ck_assert_double_eq_tol(m.packet_time_ns, 4178 * 8 / 400.0, 1e-9);
  ck_assert_double_eq_tol(m.rtt_ns, 4000, 1e-9);
  ck_assert_double_eq_tol(m.bdp_pkts, 4000 / m.packet_time_ns, 1e-9);
  ck_assert_msg(m.w_pkts > 45 && m.w_pkts < 55, "W %.2f, issue 12 says about 50", m.w_pkts);
  ck_assert_double_eq_tol(m.w_pkts, m.bdp_pkts + m.detect_pkts, 1e-9);
  ck_assert_double_eq_tol(m.timer_ns, 4096.0 * (1 << 20), 1e-3); /* 4.3 s */
}
END_TEST

START_TEST(window_at_100mbit) {
  jct_loss_model_in_t in = at(100000000ull, 1000, 14, 1e-3);
  jct_loss_model_t m;
  jct_loss_model_params(&in, &m);
  ck_assert_msg(m.bdp_pkts < 0.05, "BDP %.3f packets", m.bdp_pkts);
  ck_assert_msg(m.w_pkts < 1 + m.detect_pkts, "W %.3f, detection %.3f", m.w_pkts, m.detect_pkts);
  ck_assert_msg(m.detect_pkts >= 3 && m.detect_pkts < 3.1, "detection %.3f", m.detect_pkts);
  /* A slow host's NAK latencies add their packet times. */
  in.nak_delay_ns = (uint64_t)(2 * m.packet_time_ns);
  jct_loss_model_t slow;
  jct_loss_model_params(&in, &slow);
  ck_assert_double_eq_tol(slow.w_pkts, m.w_pkts + 2, 0.01);
}
END_TEST

START_TEST(monotone_in_p) {
  jct_schedule_t *s = ring(8, 8u << 20);
  double last = 1, last_to = 0;
  const double ps[] = {0, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    jct_loss_model_t m = model(s, at(100000000ull, 1000, 14, ps[i]));
    if (ps[i] == 0) {
      ck_assert_double_eq_tol(m.degradation, 1, 1e-12);
      ck_assert_double_eq_tol(m.timeouts, 0, 1e-12);
    } else {
      ck_assert_msg(m.degradation >= last, "p %g: %.4f below %.4f", ps[i], m.degradation, last);
      ck_assert_msg(m.timeouts >= last_to, "p %g: timeouts %.2f below %.2f", ps[i], m.timeouts,
                    last_to);
    }
    /* frames lost: p times the same frames (8 ranks x 14 steps of 256 packets, their CTSs
     * and ACKs) */
    double frames = 2 * 7 * 8 * (256 + 1 + 4 + 1);
    ck_assert_double_eq_tol(m.losses, ps[i] * frames, 1e-9 * frames);
    ck_assert_double_eq_tol(m.data_pkts, 2 * 7 * 8 * (256 + 1), 1e-9);
    last = m.degradation;
    last_to = m.timeouts;
  }
  ck_assert_msg(last > 1.1, "1%% loss: %.3f", last);
  jct_schedule_free(s);
}
END_TEST

/* At 400 Gbit/s, a 256 MiB ring and 0.1% loss: timeouts happen, so
 * timeout 20 (4.3 s) costs far more than 14 (67 ms), and a loss noticed
 * by a NAK costs W packet times either way. */
START_TEST(timeout_20_against_14) {
  jct_schedule_t *s = ring(8, 256u << 20);
  jct_loss_model_t m20 = model(s, at(400000000000ull, 1000, 20, 1e-3));
  jct_loss_model_t m14 = model(s, at(400000000000ull, 1000, 14, 1e-3));
  ck_assert_double_eq_tol(m20.nak_cost_ns, m14.nak_cost_ns, 1e-9);
  ck_assert_msg(m14.timeouts > 1, "timeouts %.2f", m14.timeouts);
  ck_assert_msg(m20.degradation > 10 * m14.degradation, "t20 %.2f, t14 %.2f", m20.degradation,
                m14.degradation);
  ck_assert_msg(m20.excess_ns > 4.0e9, "t20 excess %.3g ns", m20.excess_ns);
  /* With a loss rate too low for any timer case, the two agree. */
  jct_loss_model_t l20 = model(s, at(400000000000ull, 1000, 20, 1e-7));
  jct_loss_model_t l14 = model(s, at(400000000000ull, 1000, 14, 1e-7));
  ck_assert_double_eq_tol(l20.degradation, l14.degradation, 1e-6);
  jct_schedule_free(s);
}
END_TEST

START_TEST(covers_only_bernoulli_drop) {
  jct_schedule_t *s = ring(4, 1u << 20);
  const char *yes[] = {"drop p=1e-3", "drop p=1% seed=5", "drop dir=out p=0.01"};
  const char *no[] = {"drop p=1e-3 burst=3", "drop p=1e-3 where=\"udp\"", "drop p=1e-3 port=1",
                      "drop model=gemodel p=1%", "delay 10us", "drop every=100",
                      "drop p=1e-3 at=1ms", "drop p=1e-3 dir=in"};
  jct_run_opts_t o;
  memset(&o, 0, sizeof o);
  o.schedule = s;
  o.rate_bps = 100000000;
  o.timeout = 14;
  o.ninject = 1;
  jct_loss_model_in_t in;
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    o.inject = &yes[i];
    ck_assert_msg(jct_loss_model_covers(&o, &in), "%s", yes[i]);
  }
  ck_assert_double_eq_tol(in.p, 0.01, 1e-12);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
    o.inject = &no[i];
    ck_assert_msg(!jct_loss_model_covers(&o, &in), "%s", no[i]);
  }
  o.inject = &yes[0];
  o.transport = JCT_TRANSPORT_VERBS;
  ck_assert(!jct_loss_model_covers(&o, &in));
  o.transport = JCT_TRANSPORT_UROCE;
  o.nic_queue_pkts = 64;
  ck_assert(!jct_loss_model_covers(&o, &in));
  o.nic_queue_pkts = 0;
  o.ninject = 2;
  const char *two[] = {"drop p=1e-3", "drop p=1e-3"};
  o.inject = two;
  ck_assert(!jct_loss_model_covers(&o, &in));
  jct_schedule_free(s);
}
END_TEST

START_TEST(bad_input) {
  jct_schedule_t *s = ring(4, 1u << 20);
  jct_loss_model_t m;
  char err[200];
  jct_loss_model_in_t in = at(0, 1000, 14, 1e-3);
  ck_assert_int_eq(jct_loss_model(s, NULL, &in, &m, err, sizeof err), JCT_EINVAL);
  in = at(100000000, 1000, 14, 1.0);
  ck_assert_int_eq(jct_loss_model(s, NULL, &in, &m, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "p=1"), "%s", err);
  jct_schedule_free(s);
}
END_TEST

/* The measured excess degradation (degradation - 1) over the model's: 8
 * ranks, 4 MiB, 50 Mbit/s, timeout 14, p = 1%, 3+3 repetitions: measured
 * 0.67 to 0.94 of the model's in 4 runs (seeds 1-3 and the default; at
 * 100 Mbit/s 0.67 to 0.84), timeouts 0.69 to 0.97 of its count; the test
 * allows a factor 2 either way. (At p = 0.1% the timer is rare and the
 * measured excess is 2.5 to 13 times the model's: uroce re-sends ~10
 * packets per NAK here, not W = 3, README "The go-back-N model".) */
#define MEASURED_FACTOR 2.0

START_TEST(replay_within_factor) {
  const char *args[] = {"replay", "--synth", "ring", "--ranks", "8", "--bytes", "4MiB",
                        "--rate", "50mbit", "--no-pfc", "--timeout", "14", "--reps", "3",
                        "--inject", "drop p=1e-2", NULL};
  int status;
  char *err;
  json_t *doc = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0, "exit %d: %s", status, err);
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  double measured = jnum(c, "degradation.median"), predicted = jnum(c, "model.degradation");
  double to_measured = jnum(c, "transport.timeouts") / 3, to_model = jnum(c, "model.timeouts");
  double ratio = (measured - 1) / (predicted - 1);
  fprintf(stderr, "model: measured %.3f, model %.3f (excess ratio %.2f); timeouts %.1f / %.1f\n",
          measured, predicted, ratio, to_measured, to_model);
  ck_assert_msg(predicted > 1.05, "model %.3f", predicted);
  ck_assert_msg(ratio > 1 / MEASURED_FACTOR && ratio < MEASURED_FACTOR,
                "measured %.3f, model %.3f: excess ratio %.2f", measured, predicted, ratio);
  ck_assert_msg(to_measured > to_model / MEASURED_FACTOR && to_measured < to_model * MEASURED_FACTOR,
                "timeouts per repetition: measured %.1f, model %.1f", to_measured, to_model);
  ck_assert(jnum(c, "model.W_pkts") > 3 && jnum(c, "model.W_pkts") < 4);
  json_decref(doc);
  free(err);
}
END_TEST

Suite *model_suite(void) {
  Suite *s = suite_create("model");
  TCase *core = tcase_create("core");
  tcase_add_test(core, window_at_400gbit);
  tcase_add_test(core, window_at_100mbit);
  tcase_add_test(core, monotone_in_p);
  tcase_add_test(core, timeout_20_against_14);
  tcase_add_test(core, covers_only_bernoulli_drop);
  tcase_add_test(core, bad_input);
  suite_add_tcase(s, core);
  TCase *replay = tcase_create("replay");
  tcase_set_timeout(replay, 300);
  tcase_add_test(replay, replay_within_factor);
  suite_add_tcase(s, replay);
  return s;
}
