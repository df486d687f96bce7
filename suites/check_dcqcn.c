/* DCQCN (include/jctlab/dcqcn.h): the reaction and notification points'
 * state machines on a fake clock, each figure worked out here from the
 * paper's rules rather than read back from the code; then two uroce QPs:
 * a CE-marked request makes the responder send a CNP that jct_decode()
 * (and so `jctlab inspect`) knows as one, and the requester cuts its rate
 * and paces its packets at it; then a 7 -> 1 incast through the built
 * jctlab with --series: the receiver's port is the bottleneck, every
 * sender starts at the line rate and DCQCN cuts each of them (without it
 * every rate stays the line rate), the senders' rates stay fair (Jain's
 * index over their mean rates in the second half >= 0.9) and the switch
 * sends fewer PFC XOFFs than without DCQCN. Last, the paper's fluid model
 * (dcqcn_fluid.h), which bench/dcqcn-paper sets beside the emulation: it
 * must do what the paper says of it (the sum of rates converges to C, the
 * queue settles between Kmin and Kmax, the flows to C/N, a larger Pmax
 * holds a shorter queue) and recover at R_AI per timer period when nothing
 * is marked. */
#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/wire.h"
#include "jctlab/dcqcn.h"
#include "jctlab/dcqcn_fluid.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/uroce.h"
#include "suites.h"
#include "testkit.h"

#define US 1000ull
#define LINE 100000000ull /* 100 Mbit/s */

/* The paper's profile, without its byte counter (10 MB would not expire in
 * these tests anyway): timer events only. */
static jct_dcqcn_params_t paper_timer_only(void) {
  jct_dcqcn_params_t p;
  jct_dcqcn_params(&p, JCT_DCQCN_PAPER);
  p.rpg_byte_reset_bytes = 0;
  return p;
}

/* One CNP: Rc = Rc (1 - alpha/2) with the initial alpha, Rt = the old Rc;
 * the limiter is on from that moment. */
START_TEST(cnp_cuts_by_alpha_half) {
  jct_dcqcn_params_t p = paper_timer_only();
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  ck_assert(!rp.active);
  ck_assert_uint_eq(rp.rc_bps, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 1000);
  ck_assert_uint_eq(rp.rc_bps, LINE / 2); /* alpha 1: a half */
  ck_assert_uint_eq(rp.rt_bps, LINE);
  ck_assert(rp.active);
  ck_assert_uint_eq(rp.rate_cuts, 1);

  /* ConnectX: initial alpha 1023/1024, so a little more than half stays. */
  jct_dcqcn_params(&p, JCT_DCQCN_CONNECTX);
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  ck_assert_uint_eq(rp.rc_bps, (uint64_t)(LINE * (1 - 1023.0 / 2048)));
  /* A second CNP inside rate_reduce_monitor_period (4 us) counts, moves
   * alpha, but does not cut again. */
  jct_dcqcn_rp_on_cnp(&rp, 3 * US);
  ck_assert_uint_eq(rp.cnps, 2);
  ck_assert_uint_eq(rp.rate_cuts, 1);
  ck_assert_uint_eq(rp.rc_bps, (uint64_t)(LINE * (1 - 1023.0 / 2048)));
}
END_TEST

/* rpg_min_dec_fac bounds a cut: with it at 75%, alpha 1 cuts to 75%, not
 * 50%; and rpg_min_rate is a floor. */
START_TEST(cut_bounds) {
  jct_dcqcn_params_t p = paper_timer_only();
  p.rpg_min_dec_fac_pct = 75;
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  ck_assert_uint_eq(rp.rc_bps, LINE / 4 * 3);
  p = paper_timer_only();
  p.rpg_min_rate_bps = 60000000;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  ck_assert_uint_eq(rp.rc_bps, 60000000);
}
END_TEST

/* Without CNPs alpha decays by (1 - g) per alpha period; the next cut uses
 * the decayed alpha, and the CNP then raises it: (1 - g) alpha + g. The
 * rate-increase timer is set far away so that only alpha moves. */
START_TEST(alpha_decays) {
  jct_dcqcn_params_t p = paper_timer_only();
  p.rpg_time_reset_ns = 1000000000; /* 1 s */
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0); /* alpha 1, Rc 50 Mbit/s */
  uint64_t rc = rp.rc_bps;
  /* 10 alpha periods of 55 us expire by 550 us + 1 ns. */
  jct_dcqcn_rp_on_cnp(&rp, 550 * US + 1);
  double a = pow(1 - 1.0 / 256, 10);
  ck_assert_uint_eq(rp.rc_bps, (uint64_t)((double)rc * (1 - a / 2)));
  ck_assert_double_eq_tol(rp.alpha, (1 - 1.0 / 256) * a + 1.0 / 256, 1e-12);
  ck_assert_uint_eq(rp.rt_bps, rc); /* the paper clamps the target on every cut */
  ck_assert_uint_eq(rp.rate_cuts, 2);
}
END_TEST

/* Recovery after one cut to L/2 with Rt = L: each timer event halves the
 * deficit L - Rc (rounded down, since Rc rounds up), whether fast recovery
 * or additive increase (Rt is already at the line rate): the deficit
 * 50e6 / 2^k is below 1 first at k = 26 (2^26 > 5e7 > 2^25). So the rate
 * is back at the line rate at the 26th period of 55 us, the limiter goes
 * off, and the time below the line rate is exactly 26 periods. */
START_TEST(recovery_reaches_line_rate) {
  jct_dcqcn_params_t p = paper_timer_only();
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  jct_dcqcn_rp_advance(&rp, 55 * US);
  ck_assert_uint_eq(rp.rc_bps, LINE / 4 * 3); /* fast recovery: halfway to Rt */
  jct_dcqcn_rp_advance(&rp, 26 * 55 * US - 1);
  ck_assert(rp.active);
  ck_assert_uint_eq(LINE - rp.rc_bps, 1); /* 50e6 >> 25 */
  ck_assert_uint_eq(jct_dcqcn_rp_below_line_ns(&rp, 26 * 55 * US - 1), 26 * 55 * US - 1);
  jct_dcqcn_rp_advance(&rp, 26 * 55 * US);
  ck_assert(!rp.active);
  ck_assert_uint_eq(rp.rc_bps, LINE);
  ck_assert_uint_eq(rp.inc_next_ns, UINT64_MAX);
  ck_assert_uint_eq(jct_dcqcn_rp_below_line_ns(&rp, 10 * 1000 * US), 26 * 55 * US);
}
END_TEST

/* The stages: F = 5 fast recovery events leave Rt alone; the 6th is
 * additive increase (Rt + R_AI); from the 7th (T > F, the byte counter off
 * so BC = T) hyper increase (Rt + R_HAI). A 10 Gbit/s line so that Rt has
 * room; the second cut, after a timer increase, sets Rt to Rc. */
START_TEST(increase_stages) {
  const uint64_t line = 10000000000ull;
  jct_dcqcn_params_t p = paper_timer_only();
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, line);
  jct_dcqcn_rp_on_cnp(&rp, 0);        /* Rc 5e9, Rt 1e10 */
  jct_dcqcn_rp_advance(&rp, 55 * US); /* one fast recovery: Rc 7.5e9 */
  ck_assert_uint_eq(rp.rc_bps, 7500000000ull);
  jct_dcqcn_rp_on_cnp(&rp, 60 * US); /* Rt = 7.5e9; Rc cut; the timer restarts at 60 us */
  uint64_t rt = 7500000000ull;
  ck_assert_uint_eq(rp.rt_bps, rt);
  for (int k = 1; k <= 5; k++) {
    jct_dcqcn_rp_advance(&rp, 60 * US + (uint64_t)k * 55 * US);
    ck_assert_uint_eq(rp.rt_bps, rt);
  }
  jct_dcqcn_rp_advance(&rp, 60 * US + 6 * 55 * US);
  ck_assert_uint_eq(rp.rt_bps, rt + 40000000);
  jct_dcqcn_rp_advance(&rp, 60 * US + 7 * 55 * US);
  ck_assert_uint_eq(rp.rt_bps, rt + 40000000 + 400000000);
}
END_TEST

/* A reset goes back to the line rate and to a first CNP's initial alpha,
 * closing the time below the line rate and keeping the counters. */
START_TEST(reset_keeps_counters) {
  jct_dcqcn_params_t p = paper_timer_only();
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  jct_dcqcn_rp_on_cnp(&rp, 10 * US);
  ck_assert_uint_eq(rp.rc_bps, LINE / 4);
  jct_dcqcn_rp_reset(&rp, 20 * US);
  ck_assert(!rp.active);
  ck_assert_uint_eq(rp.rc_bps, LINE);
  ck_assert_uint_eq(rp.rate_cuts, 2);
  ck_assert_uint_eq(rp.cnps, 2);
  ck_assert_uint_eq(jct_dcqcn_rp_below_line_ns(&rp, 1000 * US), 20 * US);
  jct_dcqcn_rp_on_cnp(&rp, 30 * US); /* a first CNP again: initial alpha 1 */
  ck_assert_uint_eq(rp.rc_bps, LINE / 2);
  ck_assert_uint_eq(jct_dcqcn_rp_below_line_ns(&rp, 40 * US), 30 * US);
}
END_TEST

/* ConnectX's byte counter: 32767 bytes sent after a cut is one increase
 * event (fast recovery: rpg_threshold 1, no stage counted yet), at once,
 * before the 300 us timer. */
START_TEST(byte_counter) {
  jct_dcqcn_params_t p;
  jct_dcqcn_params(&p, JCT_DCQCN_CONNECTX);
  jct_dcqcn_rp_t rp;
  jct_dcqcn_rp_init(&rp, &p, LINE);
  jct_dcqcn_rp_on_cnp(&rp, 0);
  uint64_t rc = rp.rc_bps;
  jct_dcqcn_rp_on_sent(&rp, 32766, 10 * US);
  ck_assert_uint_eq(rp.rc_bps, rc);
  jct_dcqcn_rp_on_sent(&rp, 1, 11 * US);
  ck_assert_uint_eq(rp.rc_bps, (LINE + rc + 1) / 2);
  ck_assert_uint_eq(rp.bc_stage, 1);
  ck_assert_uint_eq(rp.t_stage, 0);
}
END_TEST

/* The notification point: at most one CNP per min_time_between_cnps. */
START_TEST(np_rate_limit) {
  jct_dcqcn_params_t p;
  jct_dcqcn_params(&p, JCT_DCQCN_CONNECTX); /* 4 us */
  jct_dcqcn_np_t np;
  jct_dcqcn_np_init(&np, &p);
  ck_assert(jct_dcqcn_np_on_ce(&np, 100));
  ck_assert(!jct_dcqcn_np_on_ce(&np, 100 + 3999));
  ck_assert(jct_dcqcn_np_on_ce(&np, 100 + 4000));
  ck_assert(!jct_dcqcn_np_on_ce(&np, 100 + 4001));
  ck_assert_uint_eq(np.ce_pkts, 4);
  ck_assert_uint_eq(np.cnps, 2);
}
END_TEST

START_TEST(profiles_and_checks) {
  jct_dcqcn_profile_t pr;
  ck_assert_int_eq(jct_dcqcn_profile_parse("paper", &pr), 0);
  ck_assert_int_eq(pr, JCT_DCQCN_PAPER);
  ck_assert_int_eq(jct_dcqcn_profile_parse("connectx", &pr), 0);
  ck_assert_int_eq(pr, JCT_DCQCN_CONNECTX);
  ck_assert_int_eq(jct_dcqcn_profile_parse("ConnectX-7", &pr), JCT_EINVAL);
  jct_dcqcn_params_t p;
  jct_dcqcn_params(&p, JCT_DCQCN_CONNECTX);
  ck_assert_uint_eq(p.rpg_time_reset_ns, 300 * US);
  ck_assert_uint_eq(p.rpg_byte_reset_bytes, 32767);
  ck_assert_uint_eq(p.rpg_ai_rate_bps, 5000000);
  ck_assert_uint_eq(p.rpg_hai_rate_bps, 50000000);
  char err[128];
  ck_assert_int_eq(jct_dcqcn_params_check(&p, err, sizeof err), 0);
  p.g = 0;
  ck_assert_int_eq(jct_dcqcn_params_check(&p, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "g 0"));
}
END_TEST

/* ---- two QPs ---- */

static void addr4(jct_addr_t *a, const char *s) {
  memset(a, 0, sizeof *a);
  a->family = 4;
  inet_pton(AF_INET, s, a->bytes);
}

static jct_uroce_qp_t *make_qp(bool a, const jct_dcqcn_params_t *p) {
  jct_uroce_cfg_t c;
  jct_uroce_cfg_init(&c);
  c.local_qpn = a ? 0x100 : 0x101;
  c.remote_qpn = a ? 0x101 : 0x100;
  c.sq_psn = a ? 10 : 20;
  c.rq_psn = a ? 20 : 10;
  addr4(&c.local, a ? "198.18.0.1" : "198.18.0.2");
  addr4(&c.remote, a ? "198.18.0.2" : "198.18.0.1");
  c.udp_sport = 4791;
  c.dcqcn = p;
  c.line_rate_bps = LINE;
  jct_uroce_qp_t *qp;
  char err[128];
  ck_assert_msg(jct_uroce_qp_create(&c, &qp, err, sizeof err) == 0, "%s", err);
  return qp;
}

/* The UDP payload in an Ethernet/IPv4/UDP frame with the given ECN bits,
 * decoded. */
static void decode(const uint8_t *pkt, size_t len, uint8_t ecn, jct_packet_t *d) {
  static uint8_t f[14 + 20 + 8 + JCT_UROCE_MAX_PACKET_BYTES];
  memset(f, 0, 14 + 20 + 8);
  f[0] = 0x02, f[6] = 0x02;
  jct__put16(f + 12, 0x0800);
  uint8_t *ip = f + 14;
  ip[0] = 0x45;
  ip[1] = (uint8_t)(26 << 2 | ecn);
  jct__put16(ip + 2, (uint16_t)(28 + len));
  jct__put16(ip + 6, 0x4000);
  ip[8] = 64, ip[9] = 17;
  inet_pton(AF_INET, "198.18.0.2", ip + 12);
  inet_pton(AF_INET, "198.18.0.1", ip + 16);
  jct__put16(ip + 20, 4791);
  jct__put16(ip + 22, 4791);
  jct__put16(ip + 24, (uint16_t)(8 + len));
  memcpy(ip + 28, pkt, len);
  size_t n = 14 + 28 + len;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, f, n, n, d), JCT_PKT_ROCE);
}

START_TEST(qp_pair_cnp_and_pacing) {
  jct_dcqcn_params_t p;
  jct_dcqcn_params(&p, JCT_DCQCN_CONNECTX);
  jct_uroce_qp_t *a = make_qp(true, &p), *b = make_qp(false, &p);
  static uint8_t buf[JCT_UROCE_MAX_PACKET_BYTES];
  char err[128];
  jct_uroce_wr_t wr = {.wr_id = 1, .bytes = 16 * 4096, .has_imm = true, .imm = 7};
  ck_assert_int_eq(jct_uroce_post_write(a, &wr, err, sizeof err), 0);
  uint64_t now = 1000000;
  /* At the line rate: no limiter, packets back to back at one instant. */
  size_t n = jct_uroce_next_packet(a, now, buf, sizeof buf);
  ck_assert_uint_gt(n, 4096);
  ck_assert_int_eq(jct_uroce_rx_ecn(b, buf, n, 4791, 3, now), JCT_UROCE_RX_ACCEPTED);
  n = jct_uroce_next_packet(a, now, buf, sizeof buf);
  ck_assert_uint_gt(n, 4096);
  uint64_t w = n + JCT_UROCE_WIRE_OVERHEAD_BYTES; /* the last request's frame */
  /* Not CE (ECT(0)): no CNP for this one. */
  ck_assert_int_eq(jct_uroce_rx_ecn(b, buf, n, 4791, 2, now), JCT_UROCE_RX_ACCEPTED);
  ck_assert_uint_eq(jct_uroce_stats(b)->rx_ce_pkts, 1);

  /* The responder's first packet out is the CNP: BTH + 16 + ICRC, opcode
   * 0x81, BECN, addressed to the requester's QP, a valid ICRC. */
  n = jct_uroce_next_packet(b, now, buf, sizeof buf);
  ck_assert_uint_eq(n, JCT_BTH_BYTES + JCT_CNP_PAYLOAD_BYTES + JCT_ICRC_BYTES);
  jct_packet_t d;
  decode(buf, n, 0, &d);
  ck_assert_uint_eq(d.op->kind, JCT_OPK_CNP);
  ck_assert(d.roce.bth.becn);
  ck_assert_uint_eq(d.roce.bth.dest_qp, 0x100);
  ck_assert(d.icrc_checked && d.icrc_ok);
  ck_assert_uint_eq(jct_uroce_stats(b)->tx_cnps, 1);

  /* The requester cuts its rate and paces: the next packet goes the last
   * one's wire time at Rc after it. That gap (about 665 us at 50 Mbit/s)
   * is longer than the rate-increase timer (300 us), so the deadline is
   * the timer's: fast recovery raises Rc to (Rt + Rc) / 2 and the slot
   * comes nearer (re-timed at the new Rc, as HPCC's limiter does), the
   * packet going at the new slot, before the old one. */
  ck_assert_int_eq(jct_uroce_rx(a, buf, n, 4791, now), JCT_UROCE_RX_ACCEPTED);
  ck_assert_uint_eq(jct_uroce_stats(a)->rx_cnps, 1);
  ck_assert_uint_eq(jct_uroce_stats(a)->rate_cuts, 1);
  uint64_t rc = jct_uroce_rate_bps(a);
  ck_assert_uint_eq(rc, (uint64_t)(LINE * (1 - 1023.0 / 2048)));
  uint64_t gap = (uint64_t)((double)w * 8e9 / (double)rc), T = p.rpg_time_reset_ns;
  ck_assert_uint_gt(gap, T);
  ck_assert_uint_eq(jct_uroce_next_packet(a, now, buf, sizeof buf), 0);
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(a), now + T);
  ck_assert_uint_eq(jct_uroce_next_packet(a, now + T, buf, sizeof buf), 0);
  uint64_t rc2 = jct_uroce_rate_bps(a);
  ck_assert_uint_eq(rc2, (LINE + rc + 1) / 2);
  uint64_t gap2 = (uint64_t)((double)w * 8e9 / (double)rc2);
  ck_assert(gap2 > T && gap2 < gap);
  ck_assert_uint_eq(jct_uroce_next_deadline_ns(a), now + gap2);
  ck_assert_uint_eq(jct_uroce_next_packet(a, now + gap2 - 1, buf, sizeof buf), 0);
  ck_assert_uint_gt(jct_uroce_next_packet(a, now + gap2, buf, sizeof buf), 4096);
  /* The time below the line rate so far. */
  ck_assert_uint_eq(jct_uroce_stats(a)->below_line_rate_ns, gap2);
  jct_uroce_qp_destroy(a);
  jct_uroce_qp_destroy(b);
}
END_TEST

/* Without congestion control a CE mark owes nothing and a CNP is counted
 * and ignored. */
START_TEST(qp_pair_without_cc) {
  jct_uroce_qp_t *a = make_qp(true, NULL), *b = make_qp(false, NULL);
  static uint8_t buf[JCT_UROCE_MAX_PACKET_BYTES];
  char err[128];
  jct_uroce_wr_t wr = {.wr_id = 1, .bytes = 4096, .has_imm = true, .imm = 7};
  ck_assert_int_eq(jct_uroce_post_write(a, &wr, err, sizeof err), 0);
  size_t n = jct_uroce_next_packet(a, 0, buf, sizeof buf);
  ck_assert_int_eq(jct_uroce_rx_ecn(b, buf, n, 4791, 3, 0), JCT_UROCE_RX_ACCEPTED);
  ck_assert_uint_eq(jct_uroce_stats(b)->rx_ce_pkts, 1);
  n = jct_uroce_next_packet(b, 0, buf, sizeof buf);
  jct_packet_t d;
  decode(buf, n, 0, &d);
  ck_assert_uint_eq(d.op->kind, JCT_OPK_ACK);
  ck_assert_uint_eq(jct_uroce_stats(b)->tx_cnps, 0);
  jct_uroce_qp_destroy(a);
  jct_uroce_qp_destroy(b);
}
END_TEST

#define INCAST_LINE 10000000ll /* 10 Mbit/s */

static json_t *incast(const char *cc) {
  /* time dilated x4 (2.5 Mbit/s here): a loaded machine keeps up; one
   * too loaded for that is retried x16, then x64 (no figure here depends
   * on the factor) */
  const char *args[] = {
      "run",          "--synth", "incast", "--ranks", "8",        "--bytes", "512KiB",
      "--rate",       "10mbit",  "--tdf",  "4",       "--ecn",    "--cc",    cc,
      "--cc-profile", "paper",   "--reps", "1",       "--series", "5ms",     NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry_dilated(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "jctlab run --cc %s exited %d: %s", cc, status, err);
  free(err);
  return doc;
}

/* Checks the series' shape; returns Jain's index over the senders' mean
 * rates in its second half, and each sender's lowest rate in *min_bps. */
static double incast_series(json_t *doc, json_int_t min_bps[7]) {
  json_t *s = jget(doc, "series"), *t = jget(s, "t_ns"), *q = jget(s, "bottleneck_queue_bytes");
  size_t n = json_array_size(t);
  ck_assert_uint_ge(n, 10);
  for (size_t i = 1; i < n; i++)
    ck_assert_int_ge(json_integer_value(json_array_get(t, i)) -
                         json_integer_value(json_array_get(t, i - 1)),
                     jint(s, "interval_ns"));
  ck_assert_int_eq(jint(s, "bottleneck_rank"), 0); /* the receiver's port */
  json_int_t peak = 0;
  for (size_t i = 0; i < n; i++)
    if (json_integer_value(json_array_get(q, i)) > peak)
      peak = json_integer_value(json_array_get(q, i));
  ck_assert_int_gt(peak, 64 << 10); /* above Kmin: marked */
  json_t *rates = jget(s, "rates");
  ck_assert_uint_eq(json_array_size(rates), 7);
  double sum = 0, sq = 0;
  for (size_t c = 0; c < 7; c++) {
    json_t *bps = json_object_get(json_array_get(rates, c), "bps");
    ck_assert_int_eq(jint(json_array_get(rates, c), "dst"), 0);
    ck_assert_int_eq(json_integer_value(json_array_get(bps, 0)), INCAST_LINE);
    min_bps[c] = INCAST_LINE;
    double mean = 0;
    for (size_t i = 0; i < n; i++) {
      json_int_t v = json_integer_value(json_array_get(bps, i));
      ck_assert_int_le(v, INCAST_LINE);
      if (v < min_bps[c]) min_bps[c] = v;
      if (i >= n / 2) mean += (double)v / (double)(n - n / 2);
    }
    sum += mean, sq += mean * mean;
  }
  return sum * sum / (7 * sq);
}

/* --ecn-thresholds reach the switch: a 3 -> 1 incast without congestion
 * control (marks only), marked at the defaults (Kmin 64 KiB) and with
 * Kmin 1 KB, Kmax 4 KB, Pmax 1: the low thresholds mark more of the same
 * frames, and the JSON says which thresholds ran. */
static json_int_t marks_with(const char *ecn_arg, const char *thresholds, json_int_t want_kmin) {
  const char *args[] = {"run",    "--synth", "incast", "--ranks", "4",    "--bytes",
                        "256KiB", "--rate",  "20mbit", "--cc",    "none", "--reps",
                        "1",      ecn_arg,   thresholds, NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "%s %s: exit %d: %s", ecn_arg, thresholds ? thresholds : "",
                status, err);
  free(err);
  ck_assert_int_eq(jint(doc, "config.ecn_thresholds.kmin_bytes"), want_kmin);
  json_int_t m = jint(doc, "fabric.ecn_marked");
  json_decref(doc);
  return m;
}

START_TEST(ecn_thresholds_reach_the_switch) {
  json_int_t dflt = marks_with("--ecn", NULL, 64 << 10);
  json_int_t low = marks_with("--ecn-thresholds", "1KB,4KB,1", 1000);
  printf("dcqcn: 3 -> 1 incast, ECN marks: %lld at Kmin 64 KiB, %lld at Kmin 1 KB\n",
         (long long)dflt, (long long)low);
  ck_assert_int_gt(dflt, 0);
  ck_assert_int_gt(low, dflt);
  static const char *const bad[] = {"5KB,1KB,0.1", "5KB,6KB,0", "5KB,6KB,1.5", "5KB,6KB", "x"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char *a[] = {JCT_BINARY, "run", "--synth", "incast", "--ranks", "2", "--bytes", "1KiB",
                 "--ecn-thresholds", (char *)bad[k], NULL};
    char word[32];
    snprintf(word, sizeof word, "'%s'", bad[k]);
    expect_bad_input(a, "--ecn-thresholds", word);
  }
}
END_TEST

START_TEST(incast_series_with_and_without) {
  json_int_t min_bps[7];
  json_t *none = incast("none");
  ck_assert_double_eq_tol(incast_series(none, min_bps), 1.0, 1e-12);
  for (int c = 0; c < 7; c++)
    ck_assert_int_eq(min_bps[c], INCAST_LINE); /* nothing cuts */
  json_t *dcqcn = incast("dcqcn");
  double jain = incast_series(dcqcn, min_bps);
  ck_assert_msg(jain >= 0.9, "Jain's index %.3f", jain);
  for (int c = 0; c < 7; c++)
    ck_assert_msg(min_bps[c] < INCAST_LINE / 2, "sender %d never below %lld bit/s", c,
                  (long long)min_bps[c]);
  /* the receiver's port's XOFFs toward the senders (the switch's PFC) */
  json_int_t p0 = jint(none, "fabric.pfc_xoff_sent"), p1 = jint(dcqcn, "fabric.pfc_xoff_sent");
  ck_assert_msg(p0 > 0 && p1 < p0, "PFC XOFF sent %lld with DCQCN, %lld without", (long long)p1,
                (long long)p0);
  json_decref(none);
  json_decref(dcqcn);
}
END_TEST

/* ---- the fluid model ---- */

/* The paper's incast with flow i starting at i ms (so the flows meet the
 * queue in different states and fairness is not given by symmetry),
 * solved at 100 ns steps, 30 ms. */
static void fluid_run(uint32_t flows, double pmax, jct_fluid_trace_t *tr) {
  jct_fluid_cfg_t c;
  jct_fluid_cfg_default(&c, flows);
  c.pmax = pmax;
  c.step_ns = 100;
  c.duration_ns = 30000 * US;
  c.sample_ns = 50 * US;
  c.stagger_ns = 1000 * US;
  char err[256] = "";
  ck_assert_msg(jct_fluid_solve(&c, tr, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(tr->samples, 601);
}

/* Over the trace's last 10 ms: the queue's median (samples sorted here)
 * and each flow's mean rate. */
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double fluid_tail(const jct_fluid_trace_t *tr, double *mean_bps) {
  size_t from = 0, n = tr->samples;
  while (from < n && tr->t_ns[from] < tr->t_ns[n - 1] - 10000 * US)
    from++;
  double q[1024];
  size_t k = 0;
  for (uint32_t f = 0; f < tr->flows; f++)
    mean_bps[f] = 0;
  for (size_t i = from; i < n && k < 1024; i++, k++) {
    q[k] = tr->queue_bytes[i];
    for (uint32_t f = 0; f < tr->flows; f++)
      mean_bps[f] += tr->rc_bps[i * tr->flows + f];
  }
  for (uint32_t f = 0; f < tr->flows; f++)
    mean_bps[f] /= (double)k;
  qsort(q, k, sizeof *q, cmp_d);
  return k % 2 ? q[k / 2] : (q[k / 2 - 1] + q[k / 2]) / 2;
}

START_TEST(fluid_converges_to_fair_share) {
  const double C = 40e9, KMIN = 5000, KMAX = 200000;
  double qmed[3];
  const uint32_t ns[3] = {2, 4, 8};
  for (int j = 0; j < 3; j++) {
    uint32_t n = ns[j];
    jct_fluid_trace_t tr;
    fluid_run(n, 0.01, &tr);
    double mean[8], sum = 0;
    qmed[j] = fluid_tail(&tr, mean);
    for (uint32_t f = 0; f < n; f++) {
      sum += mean[f];
      ck_assert_msg(fabs(mean[f] / (C / n) - 1) < 0.08, "N=%u flow %u: %.4g bit/s against C/N %.4g",
                    n, f, mean[f], C / n);
    }
    ck_assert_msg(fabs(sum / C - 1) < 0.02, "N=%u: the rates sum to %.4g, C %.4g", n, sum, C);
    ck_assert_msg(qmed[j] > KMIN && qmed[j] <= KMAX, "N=%u: queue median %.0f outside (Kmin, Kmax]",
                  n, qmed[j]);
    /* Every sample: rates within (0, C], the queue never negative, and the
     * incast's first burst built a queue past Kmax (the model has no PFC). */
    double qmax = 0;
    for (size_t i = 0; i < tr.samples; i++) {
      ck_assert(tr.queue_bytes[i] >= 0);
      if (tr.queue_bytes[i] > qmax) qmax = tr.queue_bytes[i];
      for (uint32_t f = 0; f < n; f++)
        ck_assert(tr.rc_bps[i * n + f] >= 0 && tr.rc_bps[i * n + f] <= C);
    }
    ck_assert_msg(qmax > KMAX, "N=%u: the queue peaked at %.0f", n, qmax);
    jct_fluid_summary_t s;
    ck_assert_int_eq(jct_fluid_summarize(&tr, 40000000000ull, &s), 0);
    ck_assert_msg(s.converged && s.jain > 0.95, "N=%u: converged %d, Jain %.4f", n, s.converged,
                  s.jain);
    jct_fluid_trace_free(&tr);
  }
  /* More flows, a longer queue: each flow's share of the marks falls as
   * 1/N, so p, and the queue, rise with N (the paper's fixed point). */
  ck_assert_msg(qmed[0] < qmed[1] && qmed[1] < qmed[2], "queue medians %.0f, %.0f, %.0f", qmed[0],
                qmed[1], qmed[2]);
}
END_TEST

START_TEST(fluid_pmax_shortens_the_queue) {
  jct_fluid_trace_t lo, hi;
  double mean[4];
  fluid_run(4, 0.01, &lo);
  fluid_run(4, 0.10, &hi);
  double qlo = fluid_tail(&lo, mean), qhi = fluid_tail(&hi, mean);
  ck_assert_msg(qhi > 5000 && qhi < 0.5 * qlo, "Pmax 1%%: queue %.0f; 10%%: %.0f", qlo, qhi);
  jct_fluid_trace_free(&lo);
  jct_fluid_trace_free(&hi);
}
END_TEST

/* 7 flows at once: the first burst marks every packet and cuts the rates
 * deep; then the queue is empty (p = 0) and every RT rises at R_AI per
 * timer period T (the timer's increase events, e = d = 1/(T RC')), RC
 * following: 40 Mbit/s per 55 us. One flow alone never marks anything. */
START_TEST(fluid_recovers_at_r_ai_per_period) {
  jct_fluid_cfg_t c;
  jct_fluid_cfg_default(&c, 7);
  c.step_ns = 100;
  c.duration_ns = 6000 * US;
  char err[256] = "";
  jct_fluid_trace_t tr;
  ck_assert_msg(jct_fluid_solve(&c, &tr, err, sizeof err) == 0, "%s", err);
  size_t i2 = 2000 * US / c.sample_ns, i6 = 6000 * US / c.sample_ns;
  ck_assert(tr.queue_bytes[i2] == 0 && tr.queue_bytes[i6] == 0);
  double slope = (tr.rc_bps[i6 * 7] - tr.rc_bps[i2 * 7]) / 4e-3; /* bit/s per s */
  double want = (double)c.cc.rpg_ai_rate_bps / ((double)c.cc.rpg_time_reset_ns * 1e-9);
  ck_assert_msg(fabs(slope / want - 1) < 0.03, "recovery %.4g bit/s/s, R_AI/T %.4g", slope, want);
  ck_assert_msg(tr.rc_bps[i2 * 7] < 0.05 * 40e9, "cut to %.4g only", tr.rc_bps[i2 * 7]);
  jct_fluid_trace_free(&tr);

  jct_fluid_cfg_default(&c, 1);
  c.step_ns = 100;
  c.duration_ns = 2000 * US;
  ck_assert_int_eq(jct_fluid_solve(&c, &tr, err, sizeof err), 0);
  for (size_t i = 0; i < tr.samples; i++)
    ck_assert(tr.queue_bytes[i] == 0 && tr.rc_bps[i] == 40e9);
  jct_fluid_trace_free(&tr);
}
END_TEST

/* The marked packet's own wait in the queue (queue_delay: a switch that
 * marks on enqueue, as jctlab's) put into the loop's delay: at the paper's
 * marking the model no longer settles near Kmax but cycles, the queue
 * filling toward Kmax and draining to empty (bench/dcqcn-paper: what the
 * emulation does). */
START_TEST(fluid_queue_delay_cycles) {
  double qmin[2], qmax[2], qmed[2], mean[7];
  for (int v = 0; v < 2; v++) {
    jct_fluid_cfg_t c;
    jct_fluid_cfg_default(&c, 7);
    c.tau_star_ns = 5691;
    c.step_ns = 100;
    c.duration_ns = 20000 * US;
    c.queue_delay = v == 1;
    char err[256] = "";
    jct_fluid_trace_t tr;
    ck_assert_msg(jct_fluid_solve(&c, &tr, err, sizeof err) == 0, "%s", err);
    qmed[v] = fluid_tail(&tr, mean);
    qmin[v] = 1e18, qmax[v] = 0;
    for (size_t i = tr.samples - 200; i < tr.samples; i++) { /* the last 10 ms */
      if (tr.queue_bytes[i] < qmin[v]) qmin[v] = tr.queue_bytes[i];
      if (tr.queue_bytes[i] > qmax[v]) qmax[v] = tr.queue_bytes[i];
    }
    jct_fluid_trace_free(&tr);
  }
  ck_assert_msg(qmin[0] > 5000 && qmed[0] > 100000, "tau* alone: queue %.0f..%.0f, median %.0f",
                qmin[0], qmax[0], qmed[0]);
  ck_assert_msg(qmin[1] < 1000 && qmax[1] > 150000 && qmed[1] < 0.25 * qmed[0],
                "with q/C: queue %.0f..%.0f, median %.0f", qmin[1], qmax[1], qmed[1]);
}
END_TEST

/* The open loop: one flow whose every packet is marked with probability
 * p. uroce's reaction and notification points (dcqcn.h), fed 4154-byte
 * frames at Rc, each marked by a seeded draw, its CNPs reaching the RP
 * 5.69 us later, against the fluid model at the same fixed p: mean rates
 * over 30..150 ms. The model replaces the RP's discrete events by their
 * expected rates; the state machines ran 14-23% faster here (p 0.003 to
 * 0.03), so the band is [0.9, 1.4]; a broken cut or recovery leaves it. */
static double rp_open_loop_bps(double p, uint64_t seed) {
  jct_dcqcn_params_t pp;
  jct_dcqcn_params(&pp, JCT_DCQCN_PAPER);
  jct_dcqcn_rp_t rp;
  jct_dcqcn_np_t np;
  jct_dcqcn_rp_init(&rp, &pp, 40000000000ull);
  jct_dcqcn_np_init(&np, &pp);
  uint64_t rng[4], t = 0, pend[8], from = 30000 * US, end = 150000 * US;
  jct__rng_seed(rng, seed);
  int npend = 0;
  double area = 0;
  while (t < end) {
    while (npend && pend[0] <= t) {
      jct_dcqcn_rp_on_cnp(&rp, pend[0]);
      memmove(pend, pend + 1, (size_t)--npend * sizeof *pend);
    }
    jct_dcqcn_rp_on_sent(&rp, 4154, t);
    if (jct__rng_unit(rng) < p && jct_dcqcn_np_on_ce(&np, t) && npend < 8) pend[npend++] = t + 5691;
    uint64_t gap = (uint64_t)(4154 * 8e9 / (double)rp.rc_bps);
    if (t >= from) area += (double)rp.rc_bps * (double)gap;
    t += gap;
  }
  return area / (double)(t - from);
}

START_TEST(fluid_open_loop_against_uroce_rp) {
  const double ps[3] = {0.003, 0.01, 0.03};
  double last = 1e18;
  for (int k = 0; k < 3; k++) {
    jct_fluid_cfg_t c;
    jct_fluid_cfg_default(&c, 1);
    c.fixed_p = ps[k];
    c.tau_star_ns = 5691;
    c.step_ns = 100;
    c.duration_ns = 150000 * US;
    char err[256] = "";
    jct_fluid_trace_t tr;
    ck_assert_msg(jct_fluid_solve(&c, &tr, err, sizeof err) == 0, "%s", err);
    double model = 0;
    size_t m = 0;
    for (size_t i = 0; i < tr.samples; i++)
      if (tr.t_ns[i] >= 30000 * US) model += tr.rc_bps[i], m++;
    model /= (double)m;
    jct_fluid_trace_free(&tr);
    double rp = rp_open_loop_bps(ps[k], 7 + (uint64_t)k);
    ck_assert_msg(rp / model > 0.9 && rp / model < 1.4, "p %g: uroce's RP %.4g bit/s, model %.4g",
                  ps[k], rp, model);
    ck_assert_msg(model < last, "p %g: the model's rate %.4g does not fall with p", ps[k], model);
    last = model;
  }
}
END_TEST

START_TEST(fluid_cfg_checks) {
  jct_fluid_cfg_t c;
  jct_fluid_trace_t tr;
  char err[256];
  jct_fluid_cfg_default(&c, 7);
  c.tau_star_ns = c.step_ns;
  ck_assert_int_eq(jct_fluid_solve(&c, &tr, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "tau_star"), "%s", err);
  ck_assert_ptr_null(tr.t_ns);
  jct_fluid_cfg_default(&c, 0);
  ck_assert_int_eq(jct_fluid_cfg_check(&c, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "flows"), "%s", err);
  jct_fluid_cfg_default(&c, 7);
  c.kmin_bytes = 300000;
  ck_assert_int_eq(jct_fluid_cfg_check(&c, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "kmin"), "%s", err);
  jct_fluid_cfg_default(&c, 7);
  c.cc.g = 0;
  ck_assert_int_eq(jct_fluid_cfg_check(&c, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, " g "), "%s", err);
}
END_TEST

Suite *dcqcn_suite(void) {
  Suite *s = suite_create("dcqcn");
  TCase *rp = tcase_create("rp");
  tcase_add_test(rp, cnp_cuts_by_alpha_half);
  tcase_add_test(rp, cut_bounds);
  tcase_add_test(rp, alpha_decays);
  tcase_add_test(rp, recovery_reaches_line_rate);
  tcase_add_test(rp, increase_stages);
  tcase_add_test(rp, byte_counter);
  tcase_add_test(rp, reset_keeps_counters);
  tcase_add_test(rp, profiles_and_checks);
  suite_add_tcase(s, rp);
  TCase *np = tcase_create("np");
  tcase_add_test(np, np_rate_limit);
  suite_add_tcase(s, np);
  TCase *qp = tcase_create("qp");
  tcase_add_test(qp, qp_pair_cnp_and_pacing);
  tcase_add_test(qp, qp_pair_without_cc);
  suite_add_tcase(s, qp);
  /* The build pass only (scripts/test): its time is namespaces and paced
   * links (28 s of the suite's 34 under the sanitizers); run's
   * dcqcn_incast runs the same incast, ECN marks and DCQCN under them. */
  TCase *in = tcase_create("incast");
  /* An incast takes 12 s dilated x4; retried loop-bound x16 and x64 (48
   * and 192 s), two of them would pass 300 s. */
  tcase_set_timeout(in, 600);
  tcase_set_tags(in, "sanitizer-skip");
  tcase_add_test(in, incast_series_with_and_without);
  tcase_add_test(in, ecn_thresholds_reach_the_switch);
  suite_add_tcase(s, in);
  TCase *fl = tcase_create("fluid");
  tcase_set_timeout(fl, 30);
  tcase_add_test(fl, fluid_converges_to_fair_share);
  tcase_add_test(fl, fluid_pmax_shortens_the_queue);
  tcase_add_test(fl, fluid_recovers_at_r_ai_per_period);
  tcase_add_test(fl, fluid_queue_delay_cycles);
  tcase_add_test(fl, fluid_open_loop_against_uroce_rp);
  tcase_add_test(fl, fluid_cfg_checks);
  suite_add_tcase(s, fl);
  return s;
}
