/* The injector framework (spec parsing, selection by port, side, window and
 * where=, seeds, counters) and the drop kind: Bernoulli, Gilbert-Elliott
 * and 4-state loss against their closed forms, every-Nth, bursts, targeted
 * PSN drops, errors that name the bad word, and probabilities as 32-bit
 * fractions (common/rng.h).
 *
 * Statistical tests use fixed seeds and assert intervals: the exact
 * binomial 99.9% interval (normal approximation, n large) for Bernoulli;
 * for the correlated models, whose losses are not independent, the
 * interval comes from batch means (100 batches, far longer than the
 * chains' memory) with Student's t for 99 degrees of freedom; for mean
 * burst lengths, from the observed spread of burst lengths. */
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "craft.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/kdrop.h"
#include "suites.h"

#define Z999 3.2905  /* two-sided 99.9% normal quantile */
#define T999_99 3.39 /* two-sided 99.9% Student t, 99 degrees of freedom */

static jct_injector_t *mk(const char *spec, uint64_t run_seed, uint32_t index) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  int rc = jct_injector_new(&inj, spec, run_seed, index, err, sizeof err);
  ck_assert_msg(rc == 0, "%s: %s", spec, err);
  ck_assert_ptr_nonnull(inj);
  jct_injector_start(inj, 0);
  return inj;
}

static void expect_error(const char *spec, const char *word) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  int rc = jct_injector_new(&inj, spec, 1, 0, err, sizeof err);
  ck_assert_msg(rc == JCT_EINVAL, "%s: accepted (rc %d)", spec, rc);
  ck_assert_ptr_null(inj);
  ck_assert_msg(strstr(err, word) != NULL, "%s: error \"%s\" does not name %s", spec, err, word);
}

/* A RoCEv2 RDMA WRITE ONLY frame. */
typedef struct {
  uint8_t buf[256];
  jct_frame_t f;
} frame_t;

static void roce_frame(frame_t *fr, const char *src, uint32_t qp, uint32_t psn, bool ipv6) {
  craft_roce_t c = {.payload_bytes = 64, .src = src, .ipv6 = ipv6, .vlan = ipv6};
  if (ipv6 && !src) c.src = "2001:2::1";
  if (ipv6) c.dst = "2001:2::2";
  c.h.bth.opcode = JCT_OP_RC_RDMA_WRITE_ONLY;
  c.h.bth.dest_qp = qp;
  c.h.bth.psn = psn;
  c.h.reth.dma_len_bytes = 64;
  size_t n = craft_roce(fr->buf, sizeof fr->buf, &c);
  ck_assert_uint_gt(n, 0);
  fr->f = (jct_frame_t){.data = fr->buf, .len = n, .cap = sizeof fr->buf, .out = true};
}

/* Packet k of QP qp's stream of 3-packet RDMA WRITE messages (FIRST,
 * MIDDLE, LAST by k % 3), PSN psn (craft_write_frame). */
static void write_frame(frame_t *fr, uint32_t qp, uint32_t psn, uint32_t k) {
  size_t n = craft_write_frame(fr->buf, sizeof fr->buf, NULL, NULL, qp, psn, k);
  fr->f = (jct_frame_t){.data = fr->buf, .len = n, .cap = sizeof fr->buf, .out = true};
}

/* The frame's PSN set to psn (the ICRC is left stale: the drops do not
 * check it). The packet-keyed draws give each PSN its own fate and a copy
 * of a PSN that was never lost its first copy's, so a rate is measured
 * over many PSNs, as a flow sends them. */
static void set_psn(frame_t *fr, uint32_t psn) {
  assert_quiet(jct_frame_roce(&fr->f), "set_psn: not a RoCE frame"); /* 10^6 calls a test */
  uint8_t *p = fr->buf + fr->f.udp + 8 + 9;
  p[0] = (uint8_t)(psn >> 16);
  p[1] = (uint8_t)(psn >> 8);
  p[2] = (uint8_t)psn;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static bool dropped(jct_injector_t *inj, frame_t *fr, uint64_t now_ns) {
  return jct_injector_process(inj, &fr->f, now_ns) == JCT_DROP;
}

/* ---- spec parsing ------------------------------------------------------- */

START_TEST(spec_words) {
  jct_spec_t s;
  char err[256];
  const char *text = "delay 50us jitter=10us where='udp and  host 198.18.0.3' x=\"a\\\"b c\"";
  ck_assert_int_eq(jct_spec_parse(text, &s, err, sizeof err), 0);
  ck_assert_str_eq(s.kind, "delay");
  ck_assert_uint_eq(s.nargs, 4);
  ck_assert_str_eq(s.arg[0].key, "");
  ck_assert_str_eq(s.arg[0].value, "50us");
  ck_assert_uint_eq(s.arg[1].offset, 11);
  ck_assert_str_eq(jct_spec_get(&s, "where"), "udp and  host 198.18.0.3");
  ck_assert_str_eq(jct_spec_get(&s, "x"), "a\"b c");
  ck_assert(s.arg[3].used && !s.arg[0].used);
  ck_assert_ptr_null(jct_spec_get(&s, "absent"));
  uint64_t ns = 0;
  ck_assert_int_eq(jct_spec_time_ns(&s, "", &ns, err, sizeof err), 0);
  ck_assert_uint_eq(ns, 50000);
  ck_assert_int_eq(jct_spec_time_ns(&s, "jitter", &ns, err, sizeof err), 0);
  ck_assert_uint_eq(ns, 10000);

  ck_assert_int_eq(jct_spec_parse("pause rate=1000/s for=1.5ms quanta=0xffff p=25% t=500 u=2s", &s,
                                  err, sizeof err),
                   0);
  double v = 0;
  ck_assert_int_eq(jct_spec_rate_per_s(&s, "rate", &v, err, sizeof err), 0);
  ck_assert(v == 1000.0);
  ck_assert_int_eq(jct_spec_time_ns(&s, "for", &ns, err, sizeof err), 0);
  ck_assert_uint_eq(ns, 1500000);
  ck_assert_int_eq(jct_spec_time_ns(&s, "t", &ns, err, sizeof err), 0);
  ck_assert_uint_eq(ns, 500);
  ck_assert_int_eq(jct_spec_time_ns(&s, "u", &ns, err, sizeof err), 0);
  ck_assert_uint_eq(ns, 2000000000u);
  uint64_t q = 0;
  ck_assert_int_eq(jct_spec_u64(&s, "quanta", 65535, &q, err, sizeof err), 0);
  ck_assert_uint_eq(q, 65535);
  ck_assert_int_eq(jct_spec_prob(&s, "p", &v, err, sizeof err), 0);
  ck_assert(v == 0.25);
  q = 7; /* absent keys leave out untouched */
  ck_assert_int_eq(jct_spec_u64(&s, "absent", 10, &q, err, sizeof err), 0);
  ck_assert_uint_eq(q, 7);
}
END_TEST

START_TEST(spec_errors) {
  jct_spec_t s;
  char err[256];
  ck_assert_int_eq(jct_spec_parse("drop p=", &s, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "p has no value"));
  ck_assert_int_eq(jct_spec_parse("drop p=0.1 \"x", &s, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "unterminated quote"));
  ck_assert_int_eq(jct_spec_parse("drop p=0.1 p=0.2", &s, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "p=0.2"));
  ck_assert_int_eq(jct_spec_parse("   ", &s, err, sizeof err), JCT_EINVAL);
  ck_assert_int_eq(jct_spec_parse("p=0.1", &s, err, sizeof err), JCT_EINVAL);
  char many[512] = "drop";
  for (int i = 0; i <= JCT_SPEC_MAX_ARGS; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), " k%d=1", i);
  ck_assert_int_eq(jct_spec_parse(many, &s, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "too many"));

  ck_assert_int_eq(jct_spec_parse("x p=1.5 q=-1 t=5parsecs u=12x r=2/h", &s, err, sizeof err), 0);
  double v = -1;
  uint64_t n = 3;
  ck_assert_int_eq(jct_spec_prob(&s, "p", &v, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "p=1.5 is outside [0, 1]"));
  ck_assert(v == -1);
  ck_assert_int_eq(jct_spec_prob(&s, "q", &v, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "q=-1"));
  ck_assert_int_eq(jct_spec_time_ns(&s, "t", &n, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "t=5parsecs"));
  ck_assert_int_eq(jct_spec_u64(&s, "u", 100, &n, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "u=12x"));
  ck_assert_int_eq(jct_spec_rate_per_s(&s, "r", &v, err, sizeof err), JCT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "r=2/h"));
  ck_assert_uint_eq(n, 3);
}
END_TEST

START_TEST(bad_specs_name_the_word) {
  expect_error("drop p=1.5", "p=1.5");
  expect_error("drop model=foo", "model=foo");
  expect_error("drop p=0.1 bogus=1", "bogus=1");
  expect_error("drop where=\"udp port\"", "where");
  expect_error("delayy 1ms", "delayy");
  expect_error("drop p=abc", "p=abc");
  expect_error("drop p=0.1 extra", "extra");
  expect_error("drop model=gemodel r=0.3", "p=");
  expect_error("drop model=gemodel p=0.1 r=2", "r=2");
  expect_error("drop p=0.1 every=10", "p=0.1");
  expect_error("drop model=state p13=0.1 every=3", "every=3");
  expect_error("drop model=state p13=0.7 p14=0.5", "p14=0.5");
  expect_error("drop model=state p13=0.1 p31=0.7 p32=0.5", "p32=0.5");
  expect_error("drop psn=5", "qp=");
  expect_error("drop psn=5,,6 qp=3", "psn=5,,6");
  expect_error("drop psn=5,x qp=3", "psn=5,x");
  expect_error("drop psn=16777216 qp=3", "psn=16777216");
  expect_error("drop pkt=3 qp=3", "pkt=3");
  expect_error("drop pkt=3:1 psn=4 qp=3", "pkt=3:1");
  expect_error("drop psn=3", "qp=");
  expect_error("drop pkt=3:1 qp=3 retransmissions=yes", "retransmissions=yes");
  expect_error("drop psn=5 qp=0x1000000", "qp=0x1000000");
  expect_error("drop psn=5 qp=3 retransmissions=maybe", "retransmissions=maybe");
  expect_error("drop pkt=0:1 qp=3 qp-order=1", "qp-order=1");
  expect_error("drop psn=5 qp-order=1", "qp-order=1");
  expect_error("drop pkt=0:1 qp-order=16", "qp-order=16");
  expect_error("drop p=0.1 qp-order=1", "qp-order=1");
  expect_error("drop psn=5@0 qp=3", "psn=5@0");
  expect_error("drop psn=5@129 qp=3", "psn=5@129");
  expect_error("drop pkt=1:2@ qp=3", "pkt=1:2@");
  expect_error("drop pkt=1:2@2x qp=3", "pkt=1:2@2x");
  expect_error("drop psn=5@2 qp=3 retransmissions=yes", "retransmissions=yes");
  expect_error("drop psn=5@2#1 qp=3", "psn=5@2#1");     /* a copy before the transmission */
  expect_error("drop pkt=1:2@1#3 qp=3", "pkt=1:2@1#3"); /* the first is copy 1 */
  expect_error("drop pkt=1:2@2#256 qp=3", "pkt=1:2@2#256");
  expect_error("drop pkt=1:2@2# qp=3", "pkt=1:2@2#");
  expect_error("drop every=0", "every=0");
  expect_error("drop every=3 burst=4", "burst=4");
  expect_error("drop", "drop needs");
  expect_error("drop p=0.1 at=2ms until=1ms", "until=1ms");
  expect_error("drop p=0.1 dir=up", "dir=up");
  expect_error("drop p=0.1 port=-1", "port=-1");
}
END_TEST

/* ---- the framework ------------------------------------------------------ */

START_TEST(where_selects_frames) {
  jct_injector_t *inj = mk("drop p=1 where=\"udp dst port 4791 and src host 198.18.0.3\"", 1, 0);
  frame_t a, b;
  roce_frame(&a, "198.18.0.1", 0x11, 1, false);
  roce_frame(&b, "198.18.0.3", 0x11, 1, false);
  for (int i = 0; i < 100; i++) {
    ck_assert(!dropped(inj, &a, 0));
    if (i % 2) ck_assert(dropped(inj, &b, 0));
  }
  ck_assert_uint_eq(inj->stats.seen, 150);
  ck_assert_uint_eq(inj->stats.matched, 50);
  ck_assert_uint_eq(inj->stats.dropped, 50);
  jct_injector_free(inj);
}
END_TEST

START_TEST(window_port_and_side) {
  jct_injector_t *inj = mk("drop p=1 at=1ms until=2ms port=2 dir=in", 1, 0);
  uint64_t t0 = 5000000000u;
  jct_injector_start(inj, t0);
  frame_t a;
  roce_frame(&a, NULL, 1, 1, false);
  a.f.out = false;
  a.f.port = 2;
  ck_assert(!dropped(inj, &a, t0 + 999999));
  ck_assert(dropped(inj, &a, t0 + 1000000));
  ck_assert(dropped(inj, &a, t0 + 1999999));
  ck_assert(!dropped(inj, &a, t0 + 2000000));
  a.f.port = 1;
  ck_assert(!dropped(inj, &a, t0 + 1500000));
  a.f.port = 2;
  a.f.out = true;
  ck_assert(!dropped(inj, &a, t0 + 1500000));
  ck_assert_uint_eq(inj->stats.seen, 2);
  ck_assert_uint_eq(inj->stats.dropped, 2);
  jct_injector_free(inj);

  inj = mk("drop p=1", 1, 0); /* default: every port, egress side */
  a.f.port = 7;
  ck_assert(dropped(inj, &a, 0));
  a.f.out = false;
  ck_assert(!dropped(inj, &a, 0));
  jct_injector_free(inj);
}
END_TEST

/* The first n verdicts as a bit pattern. */
static void pattern(jct_injector_t *inj, size_t n, uint8_t *bits) {
  frame_t a;
  roce_frame(&a, NULL, 1, 1, false);
  memset(bits, 0, (n + 7) / 8);
  for (size_t i = 0; i < n; i++) {
    set_psn(&a, (uint32_t)i);
    if (dropped(inj, &a, 0)) bits[i / 8] |= (uint8_t)(1u << (i % 8));
  }
}

START_TEST(seeds_repeat_faults) {
  enum { N = 20000 };
  static uint8_t a[N / 8], b[N / 8];
  jct_injector_t *x = mk("drop p=0.1", 42, 0), *y = mk("drop p=10%", 42, 0);
  pattern(x, N, a);
  pattern(y, N, b);
  ck_assert(memcmp(a, b, sizeof a) == 0); /* same seed, same faults */
  ck_assert_uint_gt(x->stats.dropped, 0);

  /* The recorded seed reproduces the run given explicitly. */
  char spec[64];
  snprintf(spec, sizeof spec, "drop p=0.1 seed=%llu", (unsigned long long)x->seed);
  jct_injector_t *z = mk(spec, 999, 5);
  pattern(z, N, b);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  jct_injector_free(z);

  /* Another run seed, another position in the chain, another seed=: differ. */
  z = mk("drop p=0.1", 43, 0);
  pattern(z, N, b);
  ck_assert(memcmp(a, b, sizeof a) != 0);
  jct_injector_free(z);
  z = mk("drop p=0.1", 42, 1);
  pattern(z, N, b);
  ck_assert(memcmp(a, b, sizeof a) != 0);
  jct_injector_free(z);

  /* start: the same faults again, counters from zero. */
  jct_injector_free(y);
  y = mk("drop model=gemodel p=0.05 r=0.2 h=0.3 k=0.99", 42, 0);
  pattern(y, N, a);
  uint64_t first = y->stats.dropped;
  jct_injector_start(y, 1000);
  ck_assert_uint_eq(y->stats.seen, 0);
  pattern(y, N, b);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  ck_assert_uint_eq(y->stats.dropped, first);
  jct_injector_free(x);
  jct_injector_free(y);
}
END_TEST

/* One go-back-N transfer of n PSNs through inj under the timing that
 * timing_seed picks, as the fabric's timing varies between two runs: how
 * many packets the requester sends past a hole before the NAK rewinds it
 * (0 to 15), and spurious rewinds (a timeout that fires while the ACK is
 * still on its way) that send copies of PSNs the responder already has.
 * Writes the dropped PSNs, sorted; returns how many. */
static size_t gbn_drops(jct_injector_t *inj, uint64_t timing_seed, uint32_t n, uint32_t *drops,
                        size_t cap) {
  uint64_t rng[4];
  jct__rng_seed(rng, timing_seed);
  frame_t a;
  roce_frame(&a, NULL, 1, 0, false);
  uint32_t next = 0, expected = 0, past_hole = 0, lag = 0;
  size_t nd = 0;
  bool hole = false;
  while (expected < n) {
    if (next == n || (hole && past_hole >= lag)) { /* the NAK or the timeout rewinds */
      next = expected;
      hole = false;
      if (jct__rng_next(rng) % 4 == 0) /* spurious: resend some already accepted */
        next = expected > 8 ? expected - 1 - (uint32_t)(jct__rng_next(rng) % 8) : 0;
    }
    set_psn(&a, next);
    if (dropped(inj, &a, 0)) {
      ck_assert_uint_lt(nd, cap);
      drops[nd++] = next;
      if (!hole && next >= expected) {
        hole = true;
        past_hole = 0;
        lag = (uint32_t)(jct__rng_next(rng) % 16);
      }
    } else if (next == expected) {
      expected++;
    } else if (hole) {
      past_hole++;
    }
    next++;
  }
  qsort(drops, nd, sizeof *drops, cmp_u32);
  return nd;
}

/* The property behind "the same seed gives the same faults": under
 * go-back-N, which PSNs are sent twice depends on timing, but the drops do
 * not. 50 timings, one drop list (with each PSN as often as it was lost). */
START_TEST(drops_independent_of_gbn_timing) {
  enum { N = 3000, CAP = 4096, RUNS = 50 };
  static uint32_t first[CAP], other[CAP];
  jct_injector_t *inj = mk("drop p=0.05", 7, 0);
  size_t n0 = gbn_drops(inj, 1, N, first, CAP);
  ck_assert_uint_gt(n0, N / 40);
  size_t repeats = 0; /* PSNs lost more than once: the loss count keys anew */
  for (size_t i = 1; i < n0; i++)
    repeats += first[i] == first[i - 1];
  ck_assert_uint_gt(repeats, 0);
  jct_injector_free(inj);
  for (uint64_t t = 2; t <= RUNS; t++) {
    inj = mk("drop p=0.05", 7, 0);
    size_t n = gbn_drops(inj, t, N, other, CAP);
    ck_assert_msg(n == n0 && !memcmp(first, other, n0 * sizeof *first),
                  "timing %llu: %zu drops, timing 1: %zu", (unsigned long long)t, n, n0);
    jct_injector_free(inj);
  }
}
END_TEST

/* ---- drop: the loss models ----------------------------------------------- */

typedef struct {
  double rate, rate_half;   /* loss rate and the half-width of its interval */
  double burst, burst_half; /* mean burst length and its half-width */
} loss_stats_t;

/* Run n frames through spec; loss rate with a batch-means interval, mean
 * burst length with an interval from the burst lengths' spread. */
static loss_stats_t measure(const char *spec, uint64_t seed, size_t n) {
  enum { BATCHES = 100 };
  jct_injector_t *inj = mk(spec, seed, 0);
  frame_t a;
  roce_frame(&a, NULL, 1, 1, false);
  double batch[BATCHES] = {0};
  size_t per = n / BATCHES, lost = 0, run = 0, bursts = 0;
  double sum_b = 0, sum_b2 = 0;
  for (size_t i = 0; i < per * BATCHES; i++) {
    set_psn(&a, (uint32_t)i & JCT_PSN_MASK);
    if (dropped(inj, &a, 0)) {
      lost++;
      batch[i / per] += 1;
      run++;
    } else if (run) {
      bursts++;
      sum_b += (double)run;
      sum_b2 += (double)run * (double)run;
      run = 0;
    }
  }
  ck_assert_uint_eq(inj->stats.dropped, lost);
  ck_assert_uint_eq(inj->stats.matched, per * BATCHES);
  jct_injector_free(inj);
  loss_stats_t s;
  s.rate = (double)lost / (double)(per * BATCHES);
  double var = 0;
  for (int b = 0; b < BATCHES; b++) {
    double d = batch[b] / (double)per - s.rate;
    var += d * d;
  }
  var /= BATCHES - 1;
  s.rate_half = T999_99 * sqrt(var / BATCHES);
  ck_assert_uint_gt(bursts, 100);
  s.burst = sum_b / (double)bursts;
  double bvar = (sum_b2 - (double)bursts * s.burst * s.burst) / (double)(bursts - 1);
  s.burst_half = Z999 * sqrt(bvar / (double)bursts);
  return s;
}

START_TEST(bernoulli_rate) {
  const double p = 0.01;
  const size_t n = 1000000;
  jct_injector_t *inj = mk("drop p=1%", 20240611, 0);
  frame_t a;
  roce_frame(&a, NULL, 1, 1, false);
  size_t lost = 0;
  for (size_t i = 0; i < n; i++) {
    set_psn(&a, (uint32_t)i & JCT_PSN_MASK);
    lost += dropped(inj, &a, 0);
  }
  double mean = (double)n * p, half = Z999 * sqrt((double)n * p * (1 - p));
  ck_assert_msg(fabs((double)lost - mean) <= half, "lost %zu, want %.0f +- %.0f", lost, mean, half);
  ck_assert_uint_eq(inj->stats.dropped, lost);
  ck_assert_uint_eq(inj->stats.seen, n);
  jct_injector_free(inj);

  /* Bursts: each loss event takes 4 frames; events start with p among the
   * frames not already in a burst. */
  loss_stats_t s = measure("drop p=0.01 burst=4", 7, 1000000);
  double want = 4 * p / (1 + 3 * p); /* a renewal cycle: 1/p frames, then 3 more lost */
  ck_assert_msg(fabs(s.rate - want) <= s.rate_half, "rate %g want %g +- %g", s.rate, want,
                s.rate_half);
  ck_assert(s.burst >= 4.0); /* back-to-back events merge into longer runs */
}
END_TEST

START_TEST(gilbert_elliott) {
  /* h=0, k=1: every frame in Bad is lost, none in Good. */
  double p = 0.01, r = 0.3;
  loss_stats_t s = measure("drop model=gemodel p=0.01 r=0.3", 11, 1000000);
  double pi_b = p / (p + r);
  ck_assert_msg(fabs(s.rate - pi_b) <= s.rate_half, "rate %g want %g +- %g", s.rate, pi_b,
                s.rate_half);
  ck_assert_msg(fabs(s.burst - 1 / r) <= s.burst_half, "burst %g want %g +- %g", s.burst, 1 / r,
                s.burst_half);

  /* Losses in both states: loss = pi_B (1-h) + pi_G (1-k). */
  p = 0.05, r = 0.2;
  double h = 0.3, k = 0.99;
  s = measure("drop model=gemodel p=5% r=20% h=30% k=99%", 12, 1000000);
  pi_b = p / (p + r);
  double want = pi_b * (1 - h) + (1 - pi_b) * (1 - k);
  ck_assert_msg(fabs(s.rate - want) <= s.rate_half, "rate %g want %g +- %g", s.rate, want,
                s.rate_half);
  ck_assert(s.rate_half < 0.01); /* the interval is tight enough to mean something */

  /* tc's default r = 1 - p: losses independent, rate p. */
  s = measure("drop model=gemodel p=0.02", 13, 1000000);
  ck_assert_msg(fabs(s.rate - 0.02) <= s.rate_half, "rate %g", s.rate);
}
END_TEST

START_TEST(four_state) {
  const double p13 = 0.01, p31 = 0.3, p32 = 0.1, p23 = 0.4, p14 = 0.005;
  loss_stats_t s =
      measure("drop model=state p13=0.01 p31=0.3 p32=0.1 p23=0.4 p14=0.005", 21, 2000000);
  /* Balance equations with pi1 = 1: pi3 p31 = pi1 p13, pi2 p23 = pi3 p32,
   * pi4 = pi1 p14. */
  double pi1 = 1, pi3 = p13 / p31, pi2 = pi3 * p32 / p23, pi4 = p14;
  double sum = pi1 + pi2 + pi3 + pi4;
  double loss = (pi3 + pi4) / sum;
  /* Bursts start by entering 3 from 1 or 2, or 4 from 1. */
  double burst = (pi3 + pi4) / (pi1 * (p13 + p14) + pi2 * p23);
  ck_assert_msg(fabs(s.rate - loss) <= s.rate_half, "rate %g want %g +- %g", s.rate, loss,
                s.rate_half);
  ck_assert_msg(fabs(s.burst - burst) <= s.burst_half, "burst %g want %g +- %g", s.burst, burst,
                s.burst_half);

  /* p13 alone is Bernoulli (tc's defaults: p31 = 1 - p13, p23 = 1). */
  s = measure("drop model=state p13=0.03", 22, 1000000);
  ck_assert_msg(fabs(s.rate - 0.03) <= s.rate_half, "rate %g", s.rate);
}
END_TEST

START_TEST(every_nth_and_bursts) {
  jct_injector_t *inj = mk("drop every=7", 1, 0);
  frame_t a;
  roce_frame(&a, NULL, 1, 1, false);
  for (int i = 1; i <= 100; i++)
    ck_assert_int_eq(dropped(inj, &a, 0), i % 7 == 0);
  ck_assert_uint_eq(inj->stats.dropped, 14);
  jct_injector_start(inj, 0);
  for (int i = 1; i <= 14; i++)
    ck_assert_int_eq(dropped(inj, &a, 0), i % 7 == 0);
  jct_injector_free(inj);

  inj = mk("drop burst=3 every=10", 1, 0);
  for (int i = 1; i <= 100; i++)
    ck_assert_int_eq(dropped(inj, &a, 0), (i - 1) % 10 >= 7);
  ck_assert_uint_eq(inj->stats.dropped, 30);
  jct_injector_free(inj);
}
END_TEST

/* A go-back-N exchange on QP 0x11: PSN 100..110, then 105..110 twice. */
static void psn_run(jct_injector_t *inj, bool ipv6, uint32_t *drops_at_105) {
  frame_t a, other;
  roce_frame(&other, NULL, 0x12, 105, ipv6); /* same PSN, another QP */
  int pass = 0;
  for (uint32_t psn = 100; psn <= 110; psn++) {
    roce_frame(&a, NULL, 0x11, psn, ipv6);
    bool d = dropped(inj, &a, 0);
    if (psn != 105)
      ck_assert(!d);
    else
      drops_at_105[pass] = d;
    ck_assert(!dropped(inj, &other, 0));
  }
  for (pass = 1; pass <= 2; pass++)
    for (uint32_t psn = 105; psn <= 110; psn++) {
      roce_frame(&a, NULL, 0x11, psn, ipv6);
      bool d = dropped(inj, &a, 0);
      if (psn != 105)
        ck_assert(!d);
      else
        drops_at_105[pass] = d;
    }
}

START_TEST(targeted_psn) {
  uint32_t d[3];
  jct_injector_t *inj = mk("drop psn=105 qp=0x11", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && !d[1] && !d[2]); /* the first transmission only */
  ck_assert_uint_eq(inj->stats.dropped, 1);
  jct_injector_start(inj, 0); /* a repetition drops it again */
  psn_run(inj, true, d);      /* over IPv6 with an 802.1Q tag */
  ck_assert(d[0] && !d[1] && !d[2]);
  jct_injector_free(inj);

  inj = mk("drop psn=105 qp=17 retransmissions=yes count=2", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && d[1] && !d[2]);
  jct_injector_free(inj);

  inj = mk("drop psn=105 qp=0x11 retransmissions=yes", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && d[1] && d[2]);
  ck_assert_uint_eq(inj->stats.dropped, 3);
  jct_injector_free(inj);

  /* A retransmission is never a first transmission. */
  inj = mk("drop psn=105 qp=0x11 count=5", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && !d[1] && !d[2]);
  jct_injector_free(inj);

  /* A list: each PSN's first transmission, once each. */
  inj = mk("drop psn=101,105,0x6c qp=0x11", 1, 0);
  frame_t l;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t psn = 100; psn <= 110; psn++) {
      roce_frame(&l, NULL, 0x11, psn, false);
      ck_assert_int_eq(dropped(inj, &l, 0), pass == 0 && (psn == 101 || psn == 105 || psn == 108));
    }
  ck_assert_uint_eq(inj->stats.dropped, 3);
  jct_injector_free(inj);

  /* By position: three 3-packet messages (FIRST, MIDDLE, LAST) from PSN
   * 500, then message 1 again (go-back-N); pkt=1:2,2:0 drops PSN 505 and
   * 506 once, and again after the injector restarts at other PSNs. */
  inj = mk("drop pkt=1:2,2:0 qp=0x11", 1, 0);
  for (int rep = 0; rep < 2; rep++) {
    uint32_t base = rep ? 9000 : 500;
    jct_injector_start(inj, 0);
    uint32_t seq[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 3, 4, 5};
    for (int i = 0; i < 12; i++) {
      write_frame(&l, 0x11, base + seq[i], seq[i]);
      ck_assert_int_eq(dropped(inj, &l, 0), i < 9 && (seq[i] == 5 || seq[i] == 6));
    }
    ck_assert_uint_eq(inj->stats.dropped, 2);
  }
  jct_injector_free(inj);

  /* pkt= without qp=: the QP of the first request seen (0x22 here), and no
   * other, even when another QP's packets interleave. */
  inj = mk("drop pkt=0:1", 1, 0);
  for (int i = 0; i < 6; i++) {
    uint32_t qp = i % 2 ? 0x11 : 0x22, k = (uint32_t)i / 2;
    write_frame(&l, qp, 700 + k, k);
    ck_assert_int_eq(dropped(inj, &l, 0), qp == 0x22 && k == 1);
  }
  ck_assert_uint_eq(inj->stats.dropped, 1);
  jct_injector_free(inj);

  /* PSN wrap: 0xfffffe, 0xffffff, 0, 1 are all first transmissions. */
  inj = mk("drop psn=0 qp=0x11", 1, 0);
  frame_t a;
  uint32_t seq[] = {0xfffffe, 0xffffff, 0, 1};
  for (int i = 0; i < 4; i++) {
    roce_frame(&a, NULL, 0x11, seq[i], false);
    ck_assert_int_eq(dropped(inj, &a, 0), seq[i] == 0);
  }
  jct_injector_free(inj);

  /* After PSN 0, 2^23 - 1 is a first transmission; 2^23 is not (IBA 9.7.1). */
  inj = mk("drop psn=0x7fffff,0x800000 qp=0x11", 1, 0);
  uint32_t half[] = {0, 0x800000, 0x7fffff};
  for (int i = 0; i < 3; i++) {
    roce_frame(&a, NULL, 0x11, half[i], false);
    ck_assert_int_eq(dropped(inj, &a, 0), i == 2);
  }
  jct_injector_free(inj);

  /* Not RoCE: never taken for the target. */
  inj = mk("drop psn=105 qp=0x11", 1, 0);
  roce_frame(&a, NULL, 0x11, 105, false);
  a.buf[14 + 20 + 3] ^= 0x01; /* UDP destination port 4791 -> 4790 */
  ck_assert(!dropped(inj, &a, 0));
  jct_injector_free(inj);
}
END_TEST

/* A frame of QP 0x11 at psn with the site history flows (NULL: none). */
static void site_frame(frame_t *fr, uint32_t psn, void *flows) {
  roce_frame(fr, NULL, 0x11, psn, false);
  fr->f.site_flows = flows;
}

/* One site, two injectors in a chain: the frame goes to b only when a
 * passes it. Returns which dropped it: 0 none, 1 a, 2 b. */
static int chain2(jct_injector_t *a, jct_injector_t *b, uint32_t psn, void *flows) {
  frame_t fr;
  site_frame(&fr, psn, flows);
  if (dropped(a, &fr, 0)) return 1;
  return b && dropped(b, &fr, 0) ? 2 : 0;
}

START_TEST(targeted_transmission) {
  uint32_t d[3];
  /* psn_run: PSN 105 sent three times (100..110, then 105..110 twice). */
  jct_injector_t *inj = mk("drop psn=105@2 qp=0x11", 1, 0);
  ck_assert(inj->targeted);
  psn_run(inj, false, d);
  ck_assert(!d[0] && d[1] && !d[2]); /* its first re-sent copy; the next is the 3rd */
  ck_assert_uint_eq(inj->stats.dropped, 1);
  jct_injector_free(inj);

  inj = mk("drop psn=105,105@2,105@3 qp=0x11", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && d[1] && d[2]); /* each copy after a loss is the next transmission */
  ck_assert_uint_eq(inj->stats.dropped, 3);
  jct_injector_start(inj, 0); /* a repetition drops them again */
  psn_run(inj, false, d);
  ck_assert(d[0] && d[1] && d[2]);
  jct_injector_free(inj);

  /* Lost first, then its first copy passes: @3 never comes. */
  inj = mk("drop psn=105,105@3 qp=0x11", 1, 0);
  psn_run(inj, false, d);
  ck_assert(d[0] && !d[1] && !d[2]);
  ck_assert_uint_eq(inj->stats.dropped, 1);
  jct_injector_free(inj);

  /* go-back-N's extra copies of a packet not lost since are the same
   * transmission again: 105 passes, then go-backs from 103, 104 and 105
   * re-send it, none lost: all its 2nd transmission, so @3 never comes. */
  inj = mk("drop psn=105@3 qp=0x11", 1, 0);
  uint32_t from[] = {100, 103, 104, 105};
  for (int pass = 0; pass < 4; pass++)
    for (uint32_t psn = from[pass]; psn <= 110; psn++) {
      frame_t fr;
      roce_frame(&fr, NULL, 0x11, psn, false);
      ck_assert(!dropped(inj, &fr, 0));
    }
  jct_injector_free(inj);

  /* ... unless the target names the copy: #C holds the drop until the
   * packet's C-th copy (the first transmission is copy 1, each go-back's
   * copy counts): @2#3 passes 105's first re-sent copy (the go-back from
   * 103) and drops the next (from 104); @2#2 is @2; @2#9 never comes.
   * After a loss the next transmission's copies count on: @2#2,@3#4 loses
   * the 2nd copy, passes the 3rd, loses the 4th. */
  struct {
    const char *spec;
    int lost[4]; /* in each pass */
  } by_copy[] = {{"drop psn=105@2#3 qp=0x11", {0, 0, 1, 0}},
                 {"drop psn=105@2#2 qp=0x11", {0, 1, 0, 0}},
                 {"drop psn=105@2#9 qp=0x11", {0, 0, 0, 0}},
                 {"drop psn=105@2#2,105@3#4 qp=0x11", {0, 1, 0, 1}}};
  for (size_t k = 0; k < sizeof by_copy / sizeof by_copy[0]; k++) {
    inj = mk(by_copy[k].spec, 1, 0);
    uint64_t lost = 0;
    for (int pass = 0; pass < 4; pass++) {
      lost += (uint64_t)by_copy[k].lost[pass];
      for (uint32_t psn = from[pass]; psn <= 110; psn++) {
        frame_t fr;
        roce_frame(&fr, NULL, 0x11, psn, false);
        ck_assert_msg(dropped(inj, &fr, 0) == (psn == 105 && by_copy[k].lost[pass]),
                      "%s: pass %d psn %u", by_copy[k].spec, pass, psn);
      }
    }
    ck_assert_uint_eq(inj->stats.dropped, lost);
    jct_injector_free(inj);
  }

  /* Two injectors on one site (one flow history): a loses the 2nd
   * transmission, b after it counts that loss, a copy it never saw, and
   * loses the 3rd; the 4th passes both. */
  void *flows = jct_flows_new();
  ck_assert_ptr_nonnull(flows);
  jct_injector_t *a = mk("drop psn=105@2 qp=0x11", 1, 0);
  jct_injector_t *b = mk("drop psn=105@3 qp=0x11", 1, 1);
  int want105[] = {0, 1, 2, 0}; /* who drops 105 in each pass */
  for (int pass = 0; pass < 4; pass++)
    for (uint32_t psn = from[pass]; psn <= 110; psn++) {
      int who = chain2(a, b, psn, flows);
      ck_assert_msg(who == (psn == 105 ? want105[pass] : 0), "pass %d psn %u: %d", pass, psn, who);
    }
  ck_assert_uint_eq(a->stats.dropped, 1);
  ck_assert_uint_eq(b->stats.dropped, 1);
  jct_injector_free(a);
  jct_injector_free(b);
  jct_flows_free(flows);

  /* By position: three 3-packet messages from PSN 500, then message 1
   * again (go-back-N): pkt=1:2@2 drops PSN 505's re-sent copy, not its
   * first transmission, and learns the PSN anew after a restart. */
  inj = mk("drop pkt=1:2@2 qp=0x11", 1, 0);
  for (int rep = 0; rep < 2; rep++) {
    uint32_t base = rep ? 9000 : 500;
    jct_injector_start(inj, 0);
    uint32_t seq[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 15; i++) {
      frame_t l;
      write_frame(&l, 0x11, base + seq[i], seq[i]);
      ck_assert_int_eq(dropped(inj, &l, 0), i == 11);
    }
    ck_assert_uint_eq(inj->stats.dropped, 1);
  }
  jct_injector_free(inj);

  /* qp-order=1: the second QP whose requests pass (0x11 after 0x22), not
   * the first or the third, each QP's packets interleaved with the others'. */
  inj = mk("drop pkt=0:1 qp-order=1", 1, 0);
  for (int i = 0; i < 9; i++) {
    static const uint32_t qps[] = {0x22, 0x11, 0x33};
    uint32_t qp = qps[i % 3], k = (uint32_t)i / 3;
    frame_t l;
    write_frame(&l, qp, 700 + k, k);
    ck_assert_int_eq(dropped(inj, &l, 0), qp == 0x11 && k == 1);
  }
  ck_assert_uint_eq(inj->stats.dropped, 1);
  jct_injector_free(inj);

  /* Random loss is not targeted: acting on nothing is its right. */
  inj = mk("drop p=0.1", 1, 0);
  ck_assert(!inj->targeted);
  jct_injector_free(inj);
}
END_TEST

/* Packet k of a stream of 3-packet messages of QP 0x11 (FIRST, MIDDLE,
 * LAST), PSN 500 + k: whether inj drops it. */
static bool pos_dropped(jct_injector_t *inj, uint32_t k) {
  frame_t l;
  write_frame(&l, 0x11, 500 + k, k);
  return dropped(inj, &l, 0);
}

/* unreached=first: packet 1:1's first transmission stands in for its @2
 * when the go-back after the loss of 0:1 has come and gone before it (a
 * sender that goes back less deep than the capture's), and its @3 then
 * counts as @2; when the go-back still re-sends it (as deep as the
 * capture's) the targets act as written. Without it, the shallow run's
 * @2 and @3 never act. */
START_TEST(targeted_unreached_first) {
  const char *spec[] = {"drop pkt=0:1,1:1@2,1:1@3 qp=0x11 unreached=first",
                        "drop pkt=0:1,1:1@2,1:1@3 qp=0x11"};
  /* deep: 0..5, go-back to 1 re-sends 1..5 (4 lost again), again from 4.
   * shallow: 0..2, go-back to 1 re-sends 1..2, then 3..5 (4 lost: the
   * stand-in), go-back to 4 (lost again), and again. */
  uint32_t deep[] = {0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 4, 5, 4, 5};
  uint32_t shallow[] = {0, 1, 2, 1, 2, 3, 4, 5, 4, 5, 4, 5};
  for (int with = 0; with < 2; with++) {
    jct_injector_t *inj = mk(spec[with], 1, 0);
    for (int rep = 0; rep < 2; rep++) { /* a repetition counts anew (tx is restored) */
      jct_injector_start(inj, 0);
      char got[16] = "";
      for (size_t i = 0; i < sizeof deep / sizeof deep[0]; i++)
        got[i] = pos_dropped(inj, deep[i]) ? 'x' : '.';
      /* 0:1's first, 1:1's 2nd (its first re-sent copy) and 3rd */
      ck_assert_msg(!strcmp(got, ".x.......x.x..."), "%s deep: %s", spec[with], got);
    }
    /* Without it 4 passes and is not re-sent: its copies never come. */
    size_t n = with ? 8 : sizeof shallow / sizeof shallow[0];
    for (int rep = 0; rep < 2; rep++) {
      jct_injector_start(inj, 0);
      char got[16] = "";
      for (size_t i = 0; i < n; i++)
        got[i] = pos_dropped(inj, shallow[i]) ? 'x' : '.';
      ck_assert_msg(!strcmp(got, with ? ".x......" : ".x....x.x..."), "%s shallow: %s", spec[with],
                    got);
      ck_assert_uint_eq(inj->stats.dropped, with ? 1 : 3);
    }
    jct_injector_free(inj);
  }
  expect_error("drop psn=5@2 qp=3 unreached=first", "unreached=first");
  expect_error("drop pkt=1:2@2 qp=3 unreached=maybe", "unreached=maybe");
  expect_error("drop p=0.1 unreached=first", "unreached");
}
END_TEST

/* epsn=: by what the responder makes of each copy. A sender that goes back
 * deep (0..5, then from 1, then from 3): packet 3's first transmission
 * comes behind the hole at 1, which the responder discards, so
 * epsn=expected drops its first copy the responder would accept (the
 * go-back's), where epsn=any drops the discarded one and the go-back
 * repairs both at once (one NAK where the capture had two). epsn=behind
 * drops only a copy that comes behind a hole (packet 1 lost before the
 * site: 2 and 3 come behind it), and @2 counts such copies: packet 3
 * comes behind one once, so its @2 never acts, and the injector is not
 * held to acting (its loss would change nothing). */
START_TEST(targeted_by_epsn) {
  static const uint32_t deep[] = {0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 3, 4, 5, 99};
  static const uint32_t hole[] = {0, 2, 3, 4, 5, 1, 2, 3, 4, 5, 99};
  struct {
    const char *spec;
    const uint32_t *seq;
    const char *want;
    uint64_t dropped;
    bool targeted;
  } cases[] = {
      {"drop pkt=0:1,1:0 qp=0x11 epsn=expected", deep, ".x......x.....", 2, true},
      {"drop pkt=0:1,1:0 qp=0x11", deep, ".x.x..........", 2, true},
      {"drop pkt=0:1,0:1@2 qp=0x11 epsn=expected", deep, ".x....x.......", 2, true},
      {"drop psn=503 qp=0x11 epsn=expected", deep, "...x..........", 1, true},
      {"drop pkt=1:0 qp=0x11 epsn=behind", hole, "..x.......", 1, false},
      {"drop pkt=1:0@2 qp=0x11 epsn=behind", hole, "..........", 0, false},
      {"drop pkt=1:0 qp=0x11 epsn=expected", hole, ".......x..", 1, true},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    jct_injector_t *inj = mk(cases[k].spec, 1, 0);
    ck_assert(inj->targeted == cases[k].targeted);
    for (int rep = 0; rep < 2; rep++) { /* the expected PSN is learnt anew */
      jct_injector_start(inj, 0);
      char got[16] = "";
      for (size_t i = 0; cases[k].seq[i] != 99; i++)
        got[i] = pos_dropped(inj, cases[k].seq[i]) ? 'x' : '.';
      ck_assert_msg(!strcmp(got, cases[k].want), "%s: %s", cases[k].spec, got);
      ck_assert_uint_eq(inj->stats.dropped, cases[k].dropped);
    }
    jct_injector_free(inj);
  }
  expect_error("drop pkt=1:2 qp=3 epsn=maybe", "epsn=maybe");
  expect_error("drop pkt=1:2@2#3 qp=3 epsn=expected", "epsn=expected");
  expect_error("drop pkt=1:2@2 qp=3 epsn=expected unreached=first", "epsn=expected");
  expect_error("drop psn=5 qp=3 retransmissions=yes epsn=behind", "epsn=behind");
  expect_error("drop p=0.1 epsn=expected", "epsn");
  /* The host's program counts transmissions only: refused there. */
  jct_injector_t *inj = mk("drop pkt=1:2 qp=3 epsn=expected", 1, 0);
  struct jct_kdrop_cfg cfg;
  char err[256] = "";
  ck_assert_int_eq(inj->ops->kernel(inj, &cfg, err, sizeof err), JCT_EINVAL);
  ck_assert_msg(strstr(err, "epsn=") && strstr(err, "switch only"), "%s", err);
  jct_injector_free(inj);
}
END_TEST

/* ---- probabilities as 32-bit fractions ------------------------------------ */

START_TEST(probabilities_are_32bit_fractions) {
  /* tc's rint(p * UINT32_MAX), compared as draw < p; p = 1 takes every draw. */
  ck_assert(!jct__rng_prob32(0) && !jct__rng_prob32(1e-10) && jct__rng_prob32(3e-10) == 1);
  ck_assert(jct__rng_prob32(0.5) == 0x80000000u && jct__rng_prob32(1 + 1e-12) == UINT32_MAX);
  ck_assert(!jct__rng_hit(0, 0) && jct__rng_hit(0, 1) && !jct__rng_hit(1, 1));
  ck_assert(!jct__rng_hit(UINT32_MAX - 1, UINT32_MAX - 1) && jct__rng_hit(UINT32_MAX, UINT32_MAX));
  uint64_t a[4], b[4]; /* a 32-bit draw is the top of the same 64-bit step */
  jct__rng_seed(a, 42);
  jct__rng_seed(b, 42);
  for (int i = 0; i < 100; i++)
    ck_assert_uint_eq(jct__rng_u32(a), jct__rng_next(b) >> 32);
  /* p=0 never fires, p=1 always: packet-keyed draws (RoCE) and the stream's. */
  jct_injector_t *never = mk("drop p=0", 5, 0), *always = mk("drop p=100%", 5, 0);
  frame_t f, other;
  roce_frame(&f, NULL, 0x11, 1, false); /* each repeat a new go-back: a new draw */
  roce_frame(&other, NULL, 0x11, 1, false);
  other.buf[14 + 20 + 3] ^= 0x01; /* UDP port 4790: not RoCE */
  for (int i = 0; i < 20000; i++) {
    ck_assert(!dropped(never, i % 2 ? &other : &f, 0));
    ck_assert(dropped(always, i % 2 ? &other : &f, 0));
  }
  jct_injector_free(never);
  jct_injector_free(always);
  jct_injector_t *inj = mk("drop model=gemodel p=1 r=0", 5, 0); /* to Bad at once, for good */
  for (int i = 0; i < 20000; i++)
    ck_assert_int_eq(dropped(inj, &f, 0), i > 0);
  jct_injector_free(inj);
  /* 4-state whose ways out of 1 and 3 add up to 1 (and p23=1): a frame
   * that passes (state 1 or 2) is always followed by a loss. */
  inj = mk("drop model=state p13=0.3 p14=0.7 p31=0.6 p32=0.4", 5, 0);
  bool passed = false;
  for (int i = 0; i < 20000; i++) {
    bool d = dropped(inj, &f, 0);
    ck_assert(d || !passed);
    passed = !d;
  }
  jct_injector_free(inj);
}
END_TEST

Suite *injector_suite(void) {
  Suite *s = suite_create("injector");
  TCase *core = tcase_create("core");
  tcase_add_test(core, spec_words);
  tcase_add_test(core, where_selects_frames);
  tcase_add_test(core, window_port_and_side);
  tcase_add_test(core, seeds_repeat_faults);
  tcase_add_test(core, drops_independent_of_gbn_timing);
  tcase_add_test(core, every_nth_and_bursts);
  tcase_add_test(core, targeted_psn);
  tcase_add_test(core, targeted_transmission);
  tcase_add_test(core, targeted_unreached_first);
  tcase_add_test(core, targeted_by_epsn);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, spec_errors);
  tcase_add_test(limits, bad_specs_name_the_word);
  tcase_add_test(limits, probabilities_are_32bit_fractions);
  suite_add_tcase(s, limits);
  TCase *stats = tcase_create("stats");
  tcase_set_timeout(stats, 60);
  tcase_add_test(stats, bernoulli_rate);
  tcase_add_test(stats, gilbert_elliott);
  tcase_add_test(stats, four_state);
  suite_add_tcase(s, stats);
  return s;
}
