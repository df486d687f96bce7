/* The injector kinds other than drop (injectors/delay.c, reorder.c,
 * pause.c, ecn.c, corrupt.c, flap.c, duplicate.c, rate.c) on a fake clock:
 * delay distributions against closed forms and numerical integrals of
 * netem's inverse CDFs, correlation, the reorder sequence, a pause storm's
 * frames decoded, ECN marking rates inside binomial intervals with valid
 * checksums, corruption that fails the ICRC and nothing else, flap
 * windows, duplication rates and repeats, rate spacing computed from netem's
 * packet time, duplicate and rate in a chain on the switch model, and bad
 * specs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craft.h"
#include "harness/fabric/chain.h"
#include "jctlab/decode.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/switch.h"
#include "suites.h"

#define US 1000ull
#define MS 1000000ull
#define SEC 1000000000ull

static jct_injector_t *mk(const char *spec) {
  jct_injector_t *inj = NULL;
  char err[512] = "";
  int rc = jct_injector_new(&inj, spec, 42, 0, err, sizeof err);
  ck_assert_msg(rc == 0, "%s -> %d %s", spec, rc, err);
  return inj;
}

static jct_verdict_t offer(jct_injector_t *inj, uint8_t *buf, size_t len, size_t cap, uint64_t now,
                           uint64_t *hold) {
  jct_frame_t f = {.data = buf, .len = len, .cap = cap, .port = 0, .out = true};
  jct_verdict_t v = jct_injector_process(inj, &f, now);
  if (hold) *hold = f.hold_until_ns;
  return v;
}

/* ---- delay --------------------------------------------------------------- */

#define NSAMP 100000

/* NSAMP delays (hold - now) in ns, one frame every 10 us. */
static void sample_delays(const char *spec, double *d) {
  jct_injector_t *inj = mk(spec);
  jct_injector_start(inj, 0);
  uint8_t buf[64] = {0};
  for (size_t i = 0; i < NSAMP; i++) {
    uint64_t now = 1 + i * 10 * US, hold = 0;
    jct_verdict_t v = offer(inj, buf, sizeof buf, sizeof buf, now, &hold);
    assert_quiet(v == JCT_HOLD, "%s: frame %zu: verdict %d, not a hold", spec, i, (int)v);
    assert_quiet(hold >= now, "%s: frame %zu held until %llu, before now %llu", spec, i,
                 (unsigned long long)hold, (unsigned long long)now);
    d[i] = (double)(hold - now);
  }
  ck_assert_uint_eq(inj->stats.held, NSAMP);
  jct_injector_free(inj);
}

static void mean_sd(const double *d, size_t n, double *mean, double *sd) {
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++)
    s += d[i];
  *mean = s / (double)n;
  for (size_t i = 0; i < n; i++)
    s2 += (d[i] - *mean) * (d[i] - *mean);
  *sd = sqrt(s2 / (double)(n - 1));
}

static double lag1(const double *d, size_t n) {
  double m, sd;
  mean_sd(d, n, &m, &sd);
  double c = 0;
  for (size_t i = 1; i < n; i++)
    c += (d[i] - m) * (d[i - 1] - m);
  return c / (double)(n - 1) / (sd * sd);
}

/* Phi^-1 by bisection on erfc: independent of the kind's Newton method. */
static double phi_inv(double u) {
  double lo = -12, hi = 12;
  for (int i = 0; i < 80; i++) {
    double mid = (lo + hi) / 2;
    if (0.5 * erfc(-mid / sqrt(2.0)) < u)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

static double clipq(double x) {
  return x < -4 ? -4 : x > 32767.0 / 8192 ? 32767.0 / 8192 : x;
}

/* Mean and sd of netem's table distributions (units of sigma) by the
 * midpoint rule over u, from the iproute2 table generators' formulas. */
static void quadrature(int which, double *mean, double *sd) {
  const int n = 200000;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; i++) {
    double u = (i + 0.5) / n;
    double nv = clipq(phi_inv(u));
    double pv = fmin((4.0 / 3) * (pow(1 - u, -1.0 / 3) - 1.5), 32767.0 / 8192);
    double y = which == 0 ? nv : which == 1 ? pv : clipq((nv + 3 * pv) / 4);
    s += y;
    s2 += y * y;
  }
  *mean = s / n;
  *sd = sqrt(s2 / n - *mean * *mean);
}

START_TEST(delay_constant) {
  jct_injector_t *inj = mk("delay 50us");
  jct_injector_start(inj, 0);
  uint8_t buf[64] = {0};
  for (uint64_t t = 0; t < 1000; t++) {
    uint64_t hold = 0;
    ck_assert_int_eq(offer(inj, buf, sizeof buf, sizeof buf, t * 7 * US, &hold), JCT_HOLD);
    ck_assert_uint_eq(hold, t * 7 * US + 50 * US);
  }
  ck_assert_uint_eq(inj->stats.hold_ns_total, 1000 * 50 * US);
  jct_injector_free(inj);
}
END_TEST

START_TEST(delay_uniform) {
  static double d[NSAMP];
  sample_delays("delay 1ms jitter=100us seed=1", d);
  double m, sd, lo = INFINITY, hi = 0;
  mean_sd(d, NSAMP, &m, &sd);
  for (size_t i = 0; i < NSAMP; i++) {
    lo = fmin(lo, d[i]);
    hi = fmax(hi, d[i]);
  }
  double want_sd = 100e3 / sqrt(3.0); /* 2 sigma wide */
  ck_assert_msg(fabs(m - 1e6) < 5 * want_sd / sqrt(NSAMP), "mean %f", m);
  ck_assert_msg(fabs(sd / want_sd - 1) < 0.02, "sd %f want %f", sd, want_sd);
  ck_assert_double_ge(lo, 900e3);
  ck_assert_double_lt(hi, 1100e3);
  ck_assert_msg(fabs(lag1(d, NSAMP)) < 0.015, "uncorrelated lag1 %f", lag1(d, NSAMP));
}
END_TEST

START_TEST(delay_dists) {
  static double d[NSAMP];
  static const char *const spec[] = {
      "delay 1ms jitter=100us dist=normal seed=2",
      "delay 1ms jitter=100us dist=pareto seed=3",
      "delay 1ms jitter=100us dist=paretonormal seed=4",
  };
  for (int k = 0; k < 3; k++) {
    double qm, qsd, m, sd;
    quadrature(k, &qm, &qsd);
    if (k == 0) { /* clipping at 4 sigma barely shows */
      ck_assert_double_lt(fabs(qm), 1e-6);
      ck_assert_double_lt(fabs(qsd - 1), 1e-3);
    }
    if (k == 1) { /* closed form of the cut pareto: c = 4.5 */
      double c = 4.5, em = 1.5 - 0.5 / (c * c), em2 = 3 - 2 / c;
      ck_assert_double_lt(fabs(qm - (4.0 / 3) * (em - 1.5)), 1e-4);
      ck_assert_double_lt(fabs(qsd - (4.0 / 3) * sqrt(em2 - em * em)), 1e-3);
    }
    sample_delays(spec[k], d);
    mean_sd(d, NSAMP, &m, &sd);
    double want_m = 1e6 + 100e3 * qm, want_sd = 100e3 * qsd;
    ck_assert_msg(fabs(m - want_m) < 5 * want_sd / sqrt(NSAMP), "%s: mean %f want %f", spec[k], m,
                  want_m);
    ck_assert_msg(fabs(sd / want_sd - 1) < 0.03, "%s: sd %f want %f", spec[k], sd, want_sd);
  }
}
END_TEST

START_TEST(delay_correlation) {
  static double d[NSAMP];
  sample_delays("delay 1ms jitter=100us corr=25% seed=5", d);
  double r = lag1(d, NSAMP), m, sd;
  ck_assert_msg(fabs(r - 0.25) < 0.02, "lag1 %f", r);
  mean_sd(d, NSAMP, &m, &sd);
  /* an AR(1) mix of uniforms: sd shrinks by sqrt((1-c)/(1+c)) */
  double want_sd = 100e3 / sqrt(3.0) * sqrt(0.75 / 1.25);
  ck_assert_msg(fabs(sd / want_sd - 1) < 0.03, "sd %f want %f", sd, want_sd);
  ck_assert_msg(fabs(m - 1e6) < 2000, "mean %f", m);
  sample_delays("delay 1ms jitter=100us dist=normal corr=60% seed=5", d);
  r = lag1(d, NSAMP);
  ck_assert_msg(r > 0.5 && r < 0.65, "normal lag1 %f", r);
}
END_TEST

START_TEST(delay_repeatable) {
  jct_injector_t *inj = mk("delay 1ms jitter=300us dist=normal corr=50%");
  uint8_t buf[64] = {0};
  uint64_t a[100], b[100];
  for (unsigned run = 0; run < 2; run++) {
    jct_injector_start(inj, run * SEC);
    for (unsigned i = 0; i < 100; i++) {
      uint64_t now = run * SEC + i * US, hold;
      offer(inj, buf, sizeof buf, sizeof buf, now, &hold);
      (run ? b : a)[i] = hold - now;
    }
  }
  ck_assert_mem_eq(a, b, sizeof a);
  jct_injector_free(inj);
}
END_TEST

/* ---- reorder --------------------------------------------------------------- */

START_TEST(reorder_gap) {
  jct_injector_t *inj = mk("reorder p=1 gap=5 delay=2ms");
  jct_injector_start(inj, 0);
  uint8_t buf[64] = {0};
  for (uint64_t i = 0; i < 50; i++) {
    uint64_t hold = 0;
    jct_verdict_t v = offer(inj, buf, sizeof buf, sizeof buf, i * US, &hold);
    if (i % 5 == 4) {
      ck_assert_int_eq(v, JCT_EXPEDITE); /* sent now, ahead of the held ones */
    } else {
      ck_assert_int_eq(v, JCT_HOLD);
      ck_assert_uint_eq(hold, i * US + 2 * MS);
    }
  }
  jct_injector_free(inj);

  /* p < 1: after gap-1 delayed, each frame goes at once with probability p */
  inj = mk("reorder p=0.25 gap=3 seed=9");
  jct_injector_start(inj, 0);
  unsigned at_once = 0, runs = 0, run = 0;
  for (uint64_t i = 0; i < NSAMP; i++) {
    jct_verdict_t v = offer(inj, buf, sizeof buf, sizeof buf, i * US, NULL);
    if (v == JCT_EXPEDITE) {
      /* never before gap-1 delayed ones */
      assert_quiet(run >= 2, "frame %llu sent at once after %u delayed", (unsigned long long)i, run);
      at_once++;
      run = 0;
      runs++;
    } else {
      run++;
    }
  }
  /* delayed runs are 2 + Geometric(0.25) failures: mean 2 + 3 = 5 */
  double mean_run = (double)(NSAMP - at_once) / runs;
  ck_assert_msg(fabs(mean_run - 5) < 0.15, "mean run %f", mean_run);
  jct_injector_free(inj);
}
END_TEST

/* ---- pause ------------------------------------------------------------------ */

typedef struct {
  size_t n;
  uint64_t t[512];
  uint32_t port[512];
  uint8_t frame[64];
  size_t len;
} emitted_t;

static void collect(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                    uint64_t now_ns) {
  emitted_t *e = inj->data;
  ck_assert_uint_lt(e->n, 512);
  e->t[e->n] = now_ns;
  e->port[e->n] = port;
  ck_assert_uint_le(len, sizeof e->frame);
  memcpy(e->frame, frame, len);
  e->len = len;
  e->n++;
}

START_TEST(pause_storm) {
  jct_injector_t *inj = mk("pause prio=3 quanta=65535 rate=1000/s for=200ms port=2 at=10ms");
  static emitted_t e;
  memset(&e, 0, sizeof e);
  inj->data = &e; /* collect's */
  const uint64_t start = 5 * SEC, t0 = start + 10 * MS;
  jct_injector_start(inj, start);
  uint64_t t;
  while ((t = inj->ops->next_deadline_ns(inj)) != UINT64_MAX) {
    ck_assert_uint_ge(t, t0);
    jct_injector_tick(inj, t, collect);
  }
  ck_assert_uint_eq(e.n, 200);
  ck_assert_uint_eq(inj->stats.generated, 200);
  for (size_t k = 0; k < e.n; k++) {
    ck_assert_uint_eq(e.t[k], t0 + k * MS);
    ck_assert_uint_eq(e.port[k], 2);
  }
  ck_assert_uint_eq(e.len, 60);
  jct_packet_t pkt;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, e.frame, e.len, e.len, &pkt), JCT_PKT_PFC);
  ck_assert(!pkt.pfc.is_pause);
  ck_assert_uint_eq(pkt.pfc.class_enable, 1u << 3);
  for (int p = 0; p < 8; p++)
    ck_assert_uint_eq(pkt.pfc.quanta[p], p == 3 ? 65535 : 0);
  static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
  ck_assert_mem_eq(pkt.dst_mac, dst, 6);

  /* a late tick catches up, each frame stamped with its own due time; a
   * new run starts the storm over */
  memset(&e, 0, sizeof e);
  jct_injector_start(inj, start);
  ck_assert_uint_eq(inj->ops->next_deadline_ns(inj), t0);
  jct_injector_tick(inj, t0 + 50 * MS, collect);
  ck_assert_uint_eq(e.n, 51);
  ck_assert_uint_eq(e.t[50], t0 + 50 * MS);
  ck_assert_uint_eq(inj->ops->next_deadline_ns(inj), t0 + 51 * MS);
  /* frames pass */
  uint8_t buf[64] = {0};
  ck_assert_int_eq(offer(inj, buf, sizeof buf, sizeof buf, t0, NULL), JCT_PASS);
  jct_injector_free(inj);

  /* a rate that does not divide a second; until= cuts the storm */
  inj = mk("pause prio=0 rate=3/s for=1s port=0 src=02:00:00:00:00:09");
  memset(&e, 0, sizeof e);
  inj->data = &e;
  jct_injector_start(inj, 0);
  while ((t = inj->ops->next_deadline_ns(inj)) != UINT64_MAX)
    jct_injector_tick(inj, t, collect);
  ck_assert_uint_eq(e.n, 3);
  ck_assert_uint_eq(e.t[1], 333333333);
  ck_assert_uint_eq(e.t[2], 666666666);
  ck_assert_uint_eq(e.frame[11], 9);
  jct_injector_free(inj);
  inj = mk("pause prio=7 rate=100/s for=1s port=1 until=55ms");
  memset(&e, 0, sizeof e);
  inj->data = &e;
  jct_injector_start(inj, 0);
  while ((t = inj->ops->next_deadline_ns(inj)) != UINT64_MAX)
    jct_injector_tick(inj, t, collect);
  ck_assert_uint_eq(e.n, 6);
  jct_injector_free(inj);
}
END_TEST

/* ---- ecn -------------------------------------------------------------------- */

static uint16_t sum16(const uint8_t *h, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2)
    s += (uint32_t)h[i] << 8 | h[i + 1];
  if (n & 1) s += (uint32_t)h[n - 1] << 8;
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return (uint16_t)s;
}

/* A WRITE MIDDLE of PSN psn: the packet-keyed draws give each PSN its
 * own fate, so a rate is measured over many PSNs. */
static size_t roce_frame_psn(uint8_t *buf, size_t cap, bool v6, bool vlan, uint8_t ecn,
                             uint32_t psn) {
  craft_roce_t c = {.ipv6 = v6, .vlan = vlan, .vlan_id = 5, .pcp = 3, .dscp = 26, .ecn = ecn};
  c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_MIDDLE;
  c.h.bth.dest_qp = 0x11;
  c.h.bth.psn = psn & JCT_PSN_MASK;
  c.payload_bytes = 256;
  size_t n = craft_roce(buf, cap, &c);
  assert_quiet(n > 0, "a frame does not fit in %zu bytes", cap);
  return n;
}

static size_t roce_frame(uint8_t *buf, size_t cap, bool v6, bool vlan, uint8_t ecn) {
  return roce_frame_psn(buf, cap, v6, vlan, ecn, 1234);
}

START_TEST(ecn_marks) {
  jct_injector_t *inj = mk("ecn p=0.05 seed=7");
  jct_injector_start(inj, 0);
  uint8_t orig[512], buf[512];
  size_t len = roce_frame(orig, sizeof orig, false, false, JCT_ECN_ECT0);
  const size_t n = NSAMP;
  unsigned marked = 0;
  for (size_t i = 0; i < n; i++) {
    len = roce_frame_psn(orig, sizeof orig, false, false, JCT_ECN_ECT0, 1234 + (uint32_t)i);
    memcpy(buf, orig, len);
    jct_verdict_t v = offer(inj, buf, len, sizeof buf, i * US, NULL);
    if (v == JCT_PASS) {
      assert_quiet(!memcmp(buf, orig, len), "frame %zu passed, changed", i);
      continue;
    }
    assert_quiet(v == JCT_MODIFIED, "frame %zu: verdict %d", i, (int)v);
    marked++;
    if (marked > 50) continue;
    jct_packet_t pkt;
    ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, buf, len, len, &pkt), JCT_PKT_ROCE);
    ck_assert_uint_eq(pkt.ecn, JCT_ECN_CE);
    ck_assert_uint_eq(pkt.dscp, 26);
    ck_assert(pkt.icrc_checked && pkt.icrc_ok); /* the ICRC masks the TOS */
    ck_assert_uint_eq(sum16(buf + 14, 20), 0xffff);
  }
  double mu = (double)n * 0.05, half = 3.29 * sqrt((double)n * 0.05 * 0.95); /* 99.9% */
  ck_assert_msg(fabs(marked - mu) <= half, "marked %u of %zu", marked, n);
  ck_assert_uint_eq(inj->stats.modified, marked);

  /* not-ECT and CE: untouched, seen but never modified */
  for (uint8_t ecn = 0; ecn < 4; ecn += 3) {
    len = roce_frame(orig, sizeof orig, false, false, ecn);
    for (unsigned i = 0; i < 1000; i++) {
      memcpy(buf, orig, len);
      ck_assert_int_eq(offer(inj, buf, len, sizeof buf, i * US, NULL), JCT_PASS);
      ck_assert_mem_eq(buf, orig, len);
    }
  }
  ck_assert_uint_eq(inj->stats.seen, n + 2000);
  ck_assert_uint_eq(inj->stats.modified, marked);
  jct_injector_free(inj);

  /* p=1: every ECT(1) packet, IPv6 and tagged IPv4 alike */
  inj = mk("ecn p=1");
  jct_injector_start(inj, 0);
  for (int k = 0; k < 2; k++) {
    len = roce_frame(buf, sizeof buf, k == 0, k == 1, JCT_ECN_ECT1);
    ck_assert_int_eq(offer(inj, buf, len, sizeof buf, 0, NULL), JCT_MODIFIED);
    jct_packet_t pkt;
    ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, buf, len, len, &pkt), JCT_PKT_ROCE);
    ck_assert_uint_eq(pkt.ecn, JCT_ECN_CE);
    ck_assert_uint_eq(pkt.dscp, 26);
    ck_assert(pkt.icrc_ok);
    if (k == 1) ck_assert_uint_eq(sum16(buf + 18, 20), 0xffff);
  }
  jct_injector_free(inj);
}
END_TEST

/* ---- corrupt ---------------------------------------------------------------- */

/* Set the UDP checksum of an untagged IPv4 frame. */
static void set_udp_sum(uint8_t *f) {
  uint8_t *ip = f + 14, *udp = ip + 20;
  size_t ul = (size_t)udp[4] << 8 | udp[5];
  udp[6] = udp[7] = 0;
  uint8_t ph[12];
  memcpy(ph, ip + 12, 8);
  ph[8] = 0;
  ph[9] = 17;
  ph[10] = udp[4];
  ph[11] = udp[5];
  uint32_t s = (uint32_t)sum16(ph, 12) + sum16(udp, ul);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  uint16_t ck = (uint16_t)~s;
  if (!ck) ck = 0xffff;
  udp[6] = (uint8_t)(ck >> 8);
  udp[7] = (uint8_t)ck;
}

static bool udp_sum_ok(const uint8_t *f) {
  const uint8_t *ip = f + 14, *udp = ip + 20;
  size_t ul = (size_t)udp[4] << 8 | udp[5];
  uint8_t ph[12];
  memcpy(ph, ip + 12, 8);
  ph[8] = 0;
  ph[9] = 17;
  ph[10] = udp[4];
  ph[11] = udp[5];
  uint32_t s = (uint32_t)sum16(ph, 12) + sum16(udp, ul);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return s == 0xffff;
}

START_TEST(corrupt_fails_icrc) {
  jct_injector_t *inj = mk("corrupt p=1 seed=11");
  jct_injector_start(inj, 0);
  uint8_t orig[512], buf[512];
  for (int k = 0; k < 3; k++) {
    size_t len = roce_frame(orig, sizeof orig, k == 1, k == 2, JCT_ECN_ECT0);
    if (k == 0) set_udp_sum(orig);
    jct_packet_t before, after;
    ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, orig, len, len, &before), JCT_PKT_ROCE);
    ck_assert(before.icrc_ok);
    size_t udp = (k == 1 ? 54 : k == 2 ? 38 : 34), region = udp + 8 + 12;
    for (int i = 0; i < 2000; i++) {
      memcpy(buf, orig, len);
      ck_assert_int_eq(offer(inj, buf, len, sizeof buf, 0, NULL), JCT_MODIFIED);
      ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, buf, len, len, &after), JCT_PKT_ROCE);
      ck_assert(after.icrc_checked && !after.icrc_ok);
      ck_assert_uint_eq(after.roce.bth.opcode, before.roce.bth.opcode);
      ck_assert_uint_eq(after.roce.bth.psn, before.roce.bth.psn);
      unsigned bits = 0;
      for (size_t j = 0; j < len; j++) {
        if (j == udp + 6 || j == udp + 7) continue; /* the UDP checksum */
        if (buf[j] != orig[j]) ck_assert_uint_ge(j, region);
        bits += (unsigned)__builtin_popcount(buf[j] ^ orig[j]);
      }
      ck_assert_uint_eq(bits, 1);
      if (k == 0) ck_assert(udp_sum_ok(buf));
    }
  }
  /* an ACK (AETH, no payload): still RoCE, ICRC fails */
  craft_roce_t c = {0};
  c.h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  size_t len = craft_roce(buf, sizeof buf, &c);
  ck_assert_int_eq(offer(inj, buf, len, sizeof buf, 0, NULL), JCT_MODIFIED);
  jct_packet_t pkt;
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, buf, len, len, &pkt), JCT_PKT_ROCE);
  ck_assert(!pkt.icrc_ok);
  /* not RoCE: untouched */
  c.udp_dport = 1234;
  len = craft_roce(orig, sizeof orig, &c);
  memcpy(buf, orig, len);
  ck_assert_int_eq(offer(inj, buf, len, sizeof buf, 0, NULL), JCT_PASS);
  ck_assert_mem_eq(buf, orig, len);
  jct_injector_free(inj);

  /* the rate: within the 99.9% binomial interval */
  inj = mk("corrupt p=0.01 seed=12");
  jct_injector_start(inj, 0);
  len = roce_frame(orig, sizeof orig, false, false, 0);
  unsigned hit = 0;
  for (size_t i = 0; i < NSAMP; i++) {
    len = roce_frame_psn(orig, sizeof orig, false, false, 0, (uint32_t)i);
    memcpy(buf, orig, len);
    hit += offer(inj, buf, len, sizeof buf, 0, NULL) == JCT_MODIFIED;
  }
  double mu = NSAMP * 0.01, half = 3.29 * sqrt(NSAMP * 0.01 * 0.99);
  ck_assert_msg(fabs(hit - mu) <= half, "corrupted %u", hit);
  jct_injector_free(inj);
}
END_TEST

/* ---- flap ------------------------------------------------------------------- */

START_TEST(flap_windows) {
  jct_injector_t *inj = mk("flap down=5ms every=1s at=100ms");
  const uint64_t start = 1000, t0 = start + 100 * MS;
  jct_injector_start(inj, start);
  uint8_t buf[64] = {0};
  unsigned drops = 0;
  for (uint64_t t = start; t < start + 3300 * MS; t += 250 * US) {
    bool down = t >= t0 && (t - t0) % SEC < 5 * MS;
    jct_verdict_t v = offer(inj, buf, sizeof buf, sizeof buf, t, NULL);
    ck_assert_int_eq(v, down ? JCT_DROP : JCT_PASS);
    drops += down;
  }
  ck_assert_uint_eq(drops, 4 * 20); /* 4 periods begin by 3.3 s, 20 frames each */
  ck_assert_uint_eq(inj->stats.dropped, drops);
  /* the edges exactly */
  jct_injector_start(inj, start);
  ck_assert_int_eq(offer(inj, buf, 64, 64, t0 - 1, NULL), JCT_PASS);
  ck_assert_int_eq(offer(inj, buf, 64, 64, t0, NULL), JCT_DROP);
  ck_assert_int_eq(offer(inj, buf, 64, 64, t0 + 5 * MS - 1, NULL), JCT_DROP);
  ck_assert_int_eq(offer(inj, buf, 64, 64, t0 + 5 * MS, NULL), JCT_PASS);
  ck_assert_int_eq(offer(inj, buf, 64, 64, t0 + SEC, NULL), JCT_DROP);

  /* transitions, walked with tick */
  jct_injector_start(inj, start);
  const uint64_t want[] = {t0, t0 + 5 * MS, t0 + SEC, t0 + SEC + 5 * MS, t0 + 2 * SEC};
  for (size_t i = 0; i < 5; i++) {
    uint64_t t = inj->ops->next_deadline_ns(inj);
    ck_assert_uint_eq(t, want[i]);
    inj->ops->tick(inj, t, NULL);
  }
  jct_injector_free(inj);

  inj = mk("flap down=5ms every=10ms until=33ms");
  jct_injector_start(inj, 0);
  inj->ops->tick(inj, 31 * MS, NULL); /* down at 30..35, window ends at 33 */
  ck_assert_uint_eq(inj->ops->next_deadline_ns(inj), 33 * MS);
  inj->ops->tick(inj, 33 * MS, NULL);
  ck_assert_uint_eq(inj->ops->next_deadline_ns(inj), UINT64_MAX);
  jct_injector_free(inj);
}
END_TEST

/* ---- duplicate -------------------------------------------------------------- */

/* offer() for a duplicate's copy. */
static jct_verdict_t offer_copy(jct_injector_t *inj, uint8_t *buf, size_t len, size_t cap,
                                uint64_t now) {
  jct_frame_t f = {.data = buf, .len = len, .cap = cap, .port = 0, .out = true, .copy = true};
  return jct_injector_process(inj, &f, now);
}

/* Which of n PSNs (from psn0, in the order given by step) spec duplicates:
 * fate[i] for PSN psn0 + i. Every copy offered after its frame passes. */
static unsigned dup_fates(const char *spec, uint32_t psn0, size_t n, bool reverse, uint8_t *fate) {
  jct_injector_t *inj = mk(spec);
  jct_injector_start(inj, 0);
  uint8_t buf[512];
  unsigned dups = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = reverse ? n - 1 - k : k;
    size_t len = roce_frame_psn(buf, sizeof buf, false, false, 0, psn0 + (uint32_t)i);
    jct_verdict_t v = offer(inj, buf, len, sizeof buf, k * US, NULL);
    assert_quiet(v == JCT_PASS || v == JCT_DUPLICATE, "%s: PSN %zu: verdict %d", spec, i, (int)v);
    fate[i] = v == JCT_DUPLICATE;
    dups += fate[i];
    if (fate[i]) {
      jct_verdict_t c = offer_copy(inj, buf, len, sizeof buf, k * US);
      assert_quiet(c == JCT_PASS, "%s: the copy of PSN %zu: verdict %d", spec, i, (int)c);
    }
  }
  ck_assert_uint_eq(inj->stats.duplicated, dups);
  ck_assert_uint_eq(inj->stats.seen, n + dups); /* the copies are frames it sees */
  jct_injector_free(inj);
  return dups;
}

START_TEST(duplicate_rate) {
  static uint8_t a[NSAMP], b[NSAMP];
  const double p = 0.1;
  unsigned dups = dup_fates("duplicate p=0.1 seed=7", 1000, NSAMP, false, a);
  double mu = NSAMP * p, half = 3.29 * sqrt(NSAMP * p * (1 - p)); /* 99.9% */
  ck_assert_msg(fabs(dups - mu) <= half, "duplicated %u of %d, want %.0f +- %.0f", dups, NSAMP, mu,
                half);
  /* packet-keyed: the same PSNs in the opposite order meet the same fates */
  ck_assert_uint_eq(dup_fates("duplicate p=0.1 seed=7", 1000, NSAMP, true, b), dups);
  ck_assert_mem_eq(a, b, NSAMP);
  /* another seed, other PSNs */
  dup_fates("duplicate p=0.1 seed=8", 1000, NSAMP, false, b);
  ck_assert(memcmp(a, b, NSAMP) != 0);
  /* p=0 never, p=1 always (netem: duplicate >= draw, 0 never) */
  ck_assert_uint_eq(dup_fates("duplicate p=0", 0, 1000, false, b), 0);
  ck_assert_uint_eq(dup_fates("duplicate p=1", 0, 1000, false, b), 1000);
}
END_TEST

START_TEST(duplicate_repeatable) {
  /* a repetition restarts the draws: the same frames duplicated, with
   * correlation too (whose sequence then depends on the order) */
  const char *const specs[] = {"duplicate p=0.3 seed=5", "duplicate p=0.3 corr=60% seed=5"};
  for (size_t k = 0; k < 2; k++) {
    jct_injector_t *inj = mk(specs[k]);
    uint8_t buf[512], fate[2][2000];
    for (unsigned run = 0; run < 2; run++) {
      jct_injector_start(inj, run * SEC);
      for (unsigned i = 0; i < 2000; i++) {
        size_t len = roce_frame_psn(buf, sizeof buf, false, false, 0, 77 + i);
        fate[run][i] = offer(inj, buf, len, sizeof buf, run * SEC + i * US, NULL) == JCT_DUPLICATE;
      }
    }
    ck_assert_mem_eq(fate[0], fate[1], sizeof fate[0]);
    unsigned n = 0, runs = 0;
    for (unsigned i = 0; i < 2000; i++) {
      n += fate[0][i];
      runs += i && fate[0][i] != fate[0][i - 1];
    }
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_lt(n, 2000);
    if (k == 1) /* correlated: longer runs than independent draws' 2 p (1 - p) n = 840 changes */
      ck_assert_msg(runs < 700, "%u changes of fate", runs);
    jct_injector_free(inj);
  }
}
END_TEST

/* ---- rate ------------------------------------------------------------------- */

/* netem's packet time of len bytes: ceil to cells when cell > 0, then
 * floor(bytes * 8 s / rate). */
static uint64_t link_ns(size_t len, long overhead, unsigned cell, long cell_overhead,
                        uint64_t bps) {
  long bytes = (long)len + overhead;
  if (cell) bytes = (bytes + cell - 1) / cell * ((long)cell + cell_overhead);
  return (uint64_t)((double)bytes * 8e9 / (double)bps); /* exact: below 2^53 */
}

START_TEST(rate_spacing) {
  static const struct {
    const char *spec;
    long overhead;
    unsigned cell;
    long cell_overhead;
  } cases[] = {
      {"rate 10mbit", 0, 0, 0},
      {"rate 10mbit overhead=24", 24, 0, 0},
      {"rate 7.5mbit overhead=-4", -4, 0, 0},
      {"rate 1gbit overhead=20 cellsize=48 celloverhead=5", 20, 48, 5},
  };
  const uint64_t bps[] = {10000000, 10000000, 7500000, 1000000000};
  uint8_t buf[2048] = {0};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    jct_injector_t *inj = mk(cases[k].spec);
    jct_injector_start(inj, 0);
    /* a burst at one instant: each leaves one packet time after the last */
    uint64_t now = 5 * MS, want = now, total = 0;
    for (unsigned i = 0; i < 200; i++) {
      size_t len = 64 + (i * 37) % 1400;
      uint64_t hold = 0;
      ck_assert_int_eq(offer(inj, buf, len, sizeof buf, now, &hold), JCT_HOLD);
      uint64_t t = link_ns(len, cases[k].overhead, cases[k].cell, cases[k].cell_overhead, bps[k]);
      want += t;
      ck_assert_msg(hold == want, "%s: frame %u held to %llu, want %llu", cases[k].spec, i,
                    (unsigned long long)hold, (unsigned long long)want);
      total += hold - now;
    }
    ck_assert_uint_eq(inj->stats.held, 200);
    ck_assert_uint_eq(inj->stats.hold_ns_total, total);
    /* after the queue has drained: from now again */
    now = want + 1 * MS;
    uint64_t hold = 0;
    offer(inj, buf, 1000, sizeof buf, now, &hold);
    ck_assert_uint_eq(hold, now + link_ns(1000, cases[k].overhead, cases[k].cell,
                                          cases[k].cell_overhead, bps[k]));
    jct_injector_free(inj);
  }
}
END_TEST

START_TEST(rate_ports_and_chain_holds) {
  jct_injector_t *inj = mk("rate 8mbit"); /* 1 byte a microsecond */
  jct_injector_start(inj, 0);
  uint8_t buf[1500] = {0};
  jct_frame_t f = {.data = buf, .len = 1000, .cap = sizeof buf, .port = 0, .out = true};
  ck_assert_int_eq(jct_injector_process(inj, &f, 0), JCT_HOLD);
  ck_assert_uint_eq(f.hold_until_ns, 1000 * US);
  /* another port is another link: it does not wait for port 0's frame */
  f.port = 1;
  f.hold_until_ns = 0;
  ck_assert_int_eq(jct_injector_process(inj, &f, 10 * US), JCT_HOLD);
  ck_assert_uint_eq(f.hold_until_ns, 1010 * US);
  /* held by an injector before it until 3 ms (netem's delay then rate):
   * its link time counts from there, and so does the next frame's */
  f.port = 0;
  f.hold_until_ns = 3 * MS;
  ck_assert_int_eq(jct_injector_process(inj, &f, 20 * US), JCT_HOLD);
  ck_assert_uint_eq(f.hold_until_ns, 4 * MS);
  f.hold_until_ns = 0;
  f.len = 500;
  ck_assert_int_eq(jct_injector_process(inj, &f, 30 * US), JCT_HOLD);
  ck_assert_uint_eq(f.hold_until_ns, 4 * MS + 500 * US);
  /* a repetition starts with idle links */
  jct_injector_start(inj, SEC);
  f.hold_until_ns = 0;
  ck_assert_int_eq(jct_injector_process(inj, &f, SEC), JCT_HOLD);
  ck_assert_uint_eq(f.hold_until_ns, SEC + 500 * US);
  jct_injector_free(inj);
}
END_TEST

/* ---- duplicate and rate on the switch's path (harness/fabric/chain.c) ------- */

typedef struct {
  size_t n;
  uint64_t t[64];
  uint32_t psn[64];
} departures_t;

static void on_depart(uint32_t port, const uint8_t *frame, size_t len, uint64_t depart_ns,
                      void *arg) {
  departures_t *d = arg;
  jct_packet_t pkt;
  ck_assert_uint_eq(port, 1);
  ck_assert_int_eq(jct_decode(JCT_LINK_EN10MB, frame, len, len, &pkt), JCT_PKT_ROCE);
  ck_assert_uint_lt(d->n, 64);
  d->t[d->n] = depart_ns;
  d->psn[d->n++] = pkt.roce.bth.psn;
}

/* Ten frames of distinct PSNs into port 0 at once, through a chain on
 * port 1's egress: every one duplicated (the copy right behind it), a
 * rate after the duplicate paces frames and copies alike, and the switch
 * accounts for every copy. */
START_TEST(chain_duplicate_then_rate) {
  const char *specs[] = {"duplicate p=1 port=1", "rate 10mbit port=1"};
  char err[512] = "";
  jct__chain_t *chain = NULL;
  ck_assert_msg(jct__chain_new(&chain, specs, 2, 1, err, sizeof err) == 0, "%s", err);
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, 2, 1000000000);
  jct_switch_t *sw = NULL;
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(jct__chain_attach(chain, sw, 2, NULL, NULL, 0), 0);
  jct__chain_start(chain, 0);
  uint8_t buf[512];
  size_t len = 0;
  for (uint32_t i = 0; i < 10; i++) {
    len = roce_frame_psn(buf, sizeof buf, false, false, 0, 500 + i);
    ck_assert_int_eq(jct_switch_rx(sw, 0, buf, len, 0), 0);
  }
  departures_t d = {0};
  for (uint64_t t; (t = jct_switch_next_deadline_ns(sw)) != UINT64_MAX;)
    jct_switch_poll(sw, t, on_depart, &d);
  ck_assert_uint_eq(d.n, 20);
  /* the last bit of frame k leaves after k + 1 packet times of the rate,
   * its serialization at the link's 1 Gbit/s and 24 bytes of overhead */
  uint64_t pt = link_ns(len, 0, 0, 0, 10000000), ser = (len + 24) * 8;
  for (size_t k = 0; k < 20; k++) {
    ck_assert_uint_eq(d.psn[k], 500 + k / 2);
    ck_assert_uint_eq(d.t[k], (k + 1) * pt + ser);
  }
  const jct_injector_t *dup = jct__chain_get(chain, 0), *rate = jct__chain_get(chain, 1);
  ck_assert_uint_eq(dup->stats.duplicated, 10);
  ck_assert_uint_eq(dup->stats.seen, 20);
  ck_assert_uint_eq(rate->stats.held, 20);
  jct_switch_totals_t tot;
  jct_switch_totals(sw, &tot);
  ck_assert_uint_eq(tot.rx_frames, 10);
  ck_assert_uint_eq(tot.duplicates, 10);
  ck_assert_uint_eq(tot.tx_frames, 20);
  ck_assert_msg(jct_switch_check(sw, err, sizeof err) == 0, "%s", err);
  jct_switch_free(sw);
  jct__chain_free(chain);
}
END_TEST

/* A drop after a duplicate draws for the frame and for each copy: a copy
 * of a frame it passed passes too (the same packet), the copy of one it
 * dropped draws anew (its PSN was lost there). Here each frame is
 * duplicated at ingress and again at egress, where the ingress copy is
 * not duplicated once more: three frames of each PSN meet the drop, the
 * frame, the egress copy, the ingress copy, in that order. With p=1/2 a
 * PSN leaves 3 times with 1/2, 2 with 1/4, once with 1/8, never with 1/8. */
START_TEST(chain_duplicate_then_drop) {
  const char *specs[] = {"duplicate p=1 dir=in", "duplicate p=1", "drop p=0.5 seed=3"};
  char err[512] = "";
  jct__chain_t *chain = NULL;
  ck_assert_msg(jct__chain_new(&chain, specs, 3, 1, err, sizeof err) == 0, "%s", err);
  jct_switch_config_t cfg;
  jct_switch_config_default(&cfg, 2, 1000000000);
  jct_switch_t *sw = NULL;
  ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(jct__chain_attach(chain, sw, 2, NULL, NULL, 0), 0);
  jct__chain_start(chain, 0);
  enum { N = 4000 };
  static unsigned per_psn[N];
  memset(per_psn, 0, sizeof per_psn);
  uint8_t buf[512];
  departures_t d = {0};
  for (uint32_t i = 0; i < N; i++) {
    size_t len = roce_frame_psn(buf, sizeof buf, false, false, 0, i);
    ck_assert_int_le(jct_switch_rx(sw, 0, buf, len, i * 10 * US), JCT_SW_DROP_INJECTOR);
    for (uint64_t t; (t = jct_switch_next_deadline_ns(sw)) <= (i + 1) * 10 * US;) {
      d.n = 0;
      jct_switch_poll(sw, t, on_depart, &d);
      for (size_t k = 0; k < d.n; k++)
        per_psn[d.psn[k]]++;
    }
  }
  for (uint64_t t; (t = jct_switch_next_deadline_ns(sw)) != UINT64_MAX;) {
    d.n = 0;
    jct_switch_poll(sw, t, on_depart, &d);
    for (size_t k = 0; k < d.n; k++)
      per_psn[d.psn[k]]++;
  }
  const jct_injector_t *in = jct__chain_get(chain, 0), *out = jct__chain_get(chain, 1),
                       *drop = jct__chain_get(chain, 2);
  ck_assert_uint_eq(in->stats.duplicated, N);
  ck_assert_uint_eq(out->stats.duplicated, N); /* the frames, not the ingress copies */
  ck_assert_uint_eq(out->stats.seen, 3 * N);
  ck_assert_uint_eq(drop->stats.seen, 3 * N);
  unsigned times[4] = {0}, left = 0;
  for (uint32_t i = 0; i < N; i++) {
    ck_assert_uint_le(per_psn[i], 3);
    times[per_psn[i]]++;
    left += per_psn[i];
  }
  ck_assert_uint_eq(drop->stats.dropped, 3 * N - left);
  const double want[4] = {1.0 / 8, 1.0 / 8, 1.0 / 4, 1.0 / 2};
  for (int k = 0; k < 4; k++) {
    double mu = N * want[k], half = 3.29 * sqrt(N * want[k] * (1 - want[k]));
    ck_assert_msg(fabs(times[k] - mu) <= half, "%u PSNs left %d times, want %.0f +- %.0f", times[k],
                  k, mu, half);
  }
  jct_switch_totals_t tot;
  jct_switch_totals(sw, &tot);
  ck_assert_uint_eq(tot.duplicates, 2 * N);
  ck_assert_uint_eq(tot.tx_frames, left);
  ck_assert_msg(jct_switch_check(sw, err, sizeof err) == 0, "%s", err);
  jct_switch_free(sw);
  jct__chain_free(chain);
}
END_TEST

/* ---- bad specs -------------------------------------------------------------- */

START_TEST(bad_specs) {
  static const struct {
    const char *spec, *word;
  } cases[] = {
      {"delay", "TIME"},
      {"delay jitter=10us", "TIME"},
      {"delay 50us jitter=10us dist=cauchy", "dist=cauchy"},
      {"delay 50us dist=normal", "jitter"},
      {"delay fifty", "fifty"},
      {"delay 50us corr=150%", "corr=150%"},
      {"delay 50us 60us", "60us"},
      {"pause prio=9 rate=1000/s for=200ms port=1", "prio=9"},
      {"pause prio=3 rate=1000/s for=200ms", "port"},
      {"pause prio=3 quanta=0 rate=1000/s port=1", "quanta=0"},
      {"pause prio=3 port=1", "rate"},
      {"pause prio=3 rate=fast port=1", "rate=fast"},
      {"flap down=2s every=1s", "down=2s"},
      {"flap down=5ms", "every"},
      {"ecn p=2", "p=2"},
      {"ecn", "p="},
      {"corrupt p=-1", "p=-1"},
      {"reorder p=0.1 gap=0", "gap=0"},
      {"reorder gap=5", "p="},
      {"duplicate p=1.5", "p=1.5"},
      {"duplicate", "p="},
      {"duplicate p=0.1 corr=2", "corr=2"},
      {"duplicate p=0.1 gap=2", "gap=2"},
      {"rate", "RATE"},
      {"rate fast", "fast"},
      {"rate 0mbit", "0mbit"},
      {"rate 2tbit", "2tbit"},
      {"rate 10mbit 20mbit", "20mbit"},
      {"rate 10mbit overhead=x", "overhead=x"},
      {"rate 10mbit overhead=-70000", "overhead=-70000"},
      {"rate 10mbit cellsize=-1", "cellsize=-1"},
      {"rate 10mbit celloverhead=4", "celloverhead"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    jct_injector_t *inj = (jct_injector_t *)1;
    char err[512] = "";
    int rc = jct_injector_new(&inj, cases[i].spec, 1, 0, err, sizeof err);
    ck_assert_msg(rc == JCT_EINVAL, "%s: rc %d", cases[i].spec, rc);
    ck_assert_ptr_null(inj);
    ck_assert_msg(strncmp(err, cases[i].spec, strlen(cases[i].spec)) == 0, "%s: %s", cases[i].spec,
                  err);
    ck_assert_msg(strstr(err + strlen(cases[i].spec), cases[i].word), "%s: %s", cases[i].spec, err);
  }
}
END_TEST

Suite *injector_kinds_suite(void) {
  Suite *s = suite_create("injector_kinds");
  TCase *core = tcase_create("core");
  tcase_add_test(core, delay_constant);
  tcase_add_test(core, delay_repeatable);
  tcase_add_test(core, reorder_gap);
  tcase_add_test(core, pause_storm);
  tcase_add_test(core, flap_windows);
  tcase_add_test(core, duplicate_repeatable);
  tcase_add_test(core, rate_spacing);
  tcase_add_test(core, rate_ports_and_chain_holds);
  tcase_add_test(core, chain_duplicate_then_rate);
  suite_add_tcase(s, core);
  TCase *stats = tcase_create("stats");
  tcase_add_test(stats, delay_uniform);
  tcase_add_test(stats, delay_dists);
  tcase_add_test(stats, delay_correlation);
  tcase_add_test(stats, ecn_marks);
  tcase_add_test(stats, corrupt_fails_icrc);
  tcase_add_test(stats, duplicate_rate);
  tcase_add_test(stats, chain_duplicate_then_drop);
  tcase_set_timeout(stats, 60);
  suite_add_tcase(s, stats);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, bad_specs);
  suite_add_tcase(s, limits);
  return s;
}
