/* Faults from the hosts' side (issue 14): the drop injector run in a
 * host's kernel as a tc-eBPF program on its egress (harness/fabric/
 * hostdrop.h, include/jctlab/kdrop.h).
 *   kernel:  the program itself, run on crafted frames with
 *            BPF_PROG_TEST_RUN: every-Nth, Bernoulli and Gilbert-Elliott
 *            rates within their intervals, a seed repeats its drops, PSN
 *            targets (@T, count=) and Bernoulli's packet-keyed draws decide
 *            frame by frame as the switch's drop injector does on the same
 *            sequence (go-back copies and ACKs in it), non-RoCE frames and
 *            baseline repetitions pass uncounted; pkt= positions and
 *            qp-order='s QP found as the switch finds them; a held NAK
 *            and its flow's later packets stamped, other flows not.
 *   cleanup: attach and detach on a veth leave it as found: a tcx link
 *            gone; in the fallback, no filter, and the clsact qdisc gone
 *            when jctlab made it, kept when it was there before.
 *   killed:  a SIGKILLed `jctlab agent` leaves nothing (check_hostfault_kill.c).
 *   run:     `jctlab run` with at=host:RANK, ranks in namespaces: a
 *            targeted drop gives exactly one NAK and no timeout, as on the
 *            switch; drop p=1% at the host and on the switch give the same
 *            degradation within the interval; a PFC storm sent from a
 *            rank's interface is received and paused on by the switch, and
 *            the job takes about the paused time longer; a flap of a
 *            rank's interface counts its down time and what the rank's
 *            kernel refused to send meanwhile, retransmit timeouts
 *            follow and the link is up at the end; bad input exits
 *            2; killed runs leave no program in the kernel.
 * Needs root (CAP_BPF, CAP_NET_ADMIN in the initial user namespace): the
 * tests say so and pass without running otherwise. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <signal.h>
#include <sys/socket.h>
#ifdef JCT_HAVE_HOSTFAULT
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif

#include "craft.h"
#include "harness/fabric/hostcut.h"
#include "harness/fabric/hostdrop.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/topo.h"
#include "common/rng.h"
#include "nskit.h"
#include "suites.h"
#include "testkit.h"

/* `delay TIME at=host:R` and its NAK holds are emulated time, as the
 * switch's delay (its clock dilated) and every spec time: the kernel
 * program, which keeps wall time, gets them x F (jct__hostdrop_cfg_wall,
 * as chain_host.c and the agents configure it); undilated, as given. */
START_TEST(delay_at_host_dilated) {
  const char *specs[] = {"delay 2ms at=host:1", "delay nak=1@3ms,2@500us at=host:1"};
  for (double tdf = 1; tdf <= 64; tdf *= 4)
    for (int k = 0; k < 2; k++) {
      char err[512] = "";
      jct_injector_t *inj = NULL;
      ck_assert_msg(jct_injector_new(&inj, specs[k], 1, 0, err, sizeof err) == 0, "%s", err);
      struct jct_kdrop_cfg cfg;
      ck_assert_msg(inj->ops->kernel(inj, &cfg, err, sizeof err) == 0, "%s", err);
      jct__hostdrop_cfg_wall(&cfg, tdf);
      ck_assert_uint_eq(cfg.mode, JCT_KDROP_DELAY);
      if (k == 0) {
        ck_assert_uint_eq(cfg.nnaks, 0);
        ck_assert_uint_eq(cfg.delay_ns, (uint64_t)(2000000 * tdf));
      } else {
        ck_assert_uint_eq(cfg.nnaks, 2);
        ck_assert_uint_eq(cfg.nak_k[1], 2);
        ck_assert_uint_eq(cfg.nak_hold_ns[0], (uint64_t)(3000000 * tdf));
        ck_assert_uint_eq(cfg.nak_hold_ns[1], (uint64_t)(500000 * tdf));
      }
      jct_injector_free(inj);
    }
}
END_TEST

/* The window of a host injector is emulated time too: at= and until=
 * reach the kernel x F, by the one conversion that the namespaces' chains
 * and the agents call (jct__hostdrop_cfg_of); without until= none. */
START_TEST(window_at_host_dilated) {
  const char *specs[] = {"drop p=0.01 at=host:1 at=5ms until=20ms", "drop p=0.01 at=host:1"};
  for (double tdf = 1; tdf <= 64; tdf *= 4)
    for (int k = 0; k < 2; k++) {
      char err[512] = "";
      jct_injector_t *inj = NULL;
      ck_assert_msg(jct_injector_new(&inj, specs[k], 1, 0, err, sizeof err) == 0, "%s", err);
      struct jct_kdrop_cfg cfg;
      ck_assert_msg(jct__hostdrop_cfg_of(inj, tdf, &cfg, err, sizeof err) == 0, "%s", err);
      ck_assert_uint_eq(cfg.at_ns, k == 0 ? (uint64_t)(5000000 * tdf) : 0);
      ck_assert_uint_eq(cfg.until_ns, k == 0 ? (uint64_t)(20000000 * tdf) : 0);
      ck_assert_uint_eq(cfg.seed, inj->seed);
      ck_assert(!cfg.enabled && cfg.start_ns == 0); /* the caller's */
      jct_injector_free(inj);
    }
}
END_TEST

/* nak=K@TIME reads each TIME as every spec time reads (spec_int.h): a
 * bare number is ns, .5us is 500 ns; above 100 s, or not a time, the
 * entry is refused. */
START_TEST(nak_times_as_spec_times) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  const char *spec = "delay nak=1@0.5ms,2@250,3@.5us,4@100s at=host:1";
  ck_assert_msg(jct_injector_new(&inj, spec, 1, 0, err, sizeof err) == 0, "%s", err);
  struct jct_kdrop_cfg cfg;
  ck_assert_msg(inj->ops->kernel(inj, &cfg, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(cfg.nnaks, 4);
  const uint64_t want_ns[] = {500000, 250, 500, 100000000000ull};
  for (uint32_t k = 0; k < 4; k++)
    ck_assert_uint_eq(cfg.nak_hold_ns[k], want_ns[k]);
  jct_injector_free(inj);
  static const char *const refused[] = {
      "delay nak=1@101s at=host:1", "delay nak=1@1e30s at=host:1", "delay nak=1@5m at=host:1",
      "delay nak=1@ at=host:1",     "delay nak=1@5ms,x at=host:1", "delay nak=1 at=host:1"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    ck_assert_int_eq(jct_injector_new(&inj, refused[i], 1, 0, err, sizeof err), JCT_EINVAL);
    ck_assert_msg(strstr(err, "K@TIME"), "%s: %s", refused[i], err);
  }
}
END_TEST

#ifdef JCT_HAVE_HOSTFAULT
#define QP 0x101

/* The program, attached to this namespace's lo. */
static jct__hostdrop_t *attach_lo(void) {
  char err[512] = "";
  jct__hostdrop_t *h = NULL;
  int rc = jct__hostdrop_attach(&h, 1, 1, "lo", err, sizeof err);
  ck_assert_msg(rc == 0, "attach: %s", err);
  return h;
}

/* Configure h from spec as a run's faulted repetition does (chain.c). */
static jct_injector_t *configure(jct__hostdrop_t *h, const char *spec, bool enabled) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  ck_assert_msg(jct_injector_new(&inj, spec, 1, 0, err, sizeof err) == 0, "%s: %s", spec, err);
  ck_assert_int_ge(inj->host, 0);
  struct jct_kdrop_cfg cfg;
  ck_assert_msg(inj->ops->kernel(inj, &cfg, err, sizeof err) == 0, "%s", err);
  cfg.enabled = enabled;
  cfg.seed = inj->seed;
  uint64_t rng[4];
  jct__rng_seed(rng, inj->seed);
  ck_assert_int_eq(jct__hostdrop_configure(h, &cfg, rng), 0);
  return inj;
}

/* c with its BTH's opcode, destination QP and PSN, into buf's 256 bytes. */
static size_t craft_bth(uint8_t *buf, craft_roce_t *c, uint8_t opcode, uint32_t qp, uint32_t psn) {
  c->h.bth.opcode = opcode;
  c->h.bth.dest_qp = qp;
  c->h.bth.psn = psn;
  size_t n = craft_roce(buf, 256, c);
  ck_assert_uint_gt(n, 0);
  return n;
}

static size_t frame(uint8_t *buf, uint8_t opcode, uint32_t qp, uint32_t psn, uint16_t dport) {
  craft_roce_t c = {.udp_dport = dport, .payload_bytes = 64};
  return craft_bth(buf, &c, opcode, qp, psn);
}

static bool run1(jct__hostdrop_t *h, uint32_t psn) {
  uint8_t buf[256];
  size_t n = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP, psn, 4791);
  bool dropped;
  ck_assert_int_eq(jct__hostdrop_test_run(h, buf, n, &dropped), 0);
  return dropped;
}

/* The switch's drop injector for spec, a host's (its " at=" and what
 * follows left out), started: the program's twin. */
static jct_injector_t *switch_twin(const char *spec) {
  char err[256], swspec[128];
  jct_injector_t *sw = NULL;
  snprintf(swspec, sizeof swspec, "%.*s", (int)(strstr(spec, " at=") - spec), spec);
  ck_assert_msg(jct_injector_new(&sw, swspec, 1, 0, err, sizeof err) == 0, "%s: %s", swspec, err);
  jct_injector_start(sw, 0);
  return sw;
}

/* One frame (frame()'s, in its 256 bytes) through the program h and its
 * twin sw: whether the program dropped it; *sw_drop whether the switch
 * did. */
static bool verdicts(jct__hostdrop_t *h, jct_injector_t *sw, uint8_t *buf, size_t len,
                     bool *sw_drop) {
  jct_frame_t f = {.data = buf, .len = len, .cap = 256, .out = true};
  *sw_drop = jct_injector_process(sw, &f, 1) == JCT_DROP;
  bool k_drop;
  ck_assert_int_eq(jct__hostdrop_test_run(h, buf, len, &k_drop), 0);
  return k_drop;
}

/* n frames, PSNs 0..n-1: how many the program dropped. */
static uint64_t run_n(jct__hostdrop_t *h, uint32_t n) {
  uint64_t d = 0;
  for (uint32_t i = 0; i < n; i++)
    d += run1(h, i & 0xffffff);
  return d;
}

START_TEST(every_nth_and_uncounted) {
  if (!ns_own("hostfault", "every_nth_and_uncounted", 0)) return;
  jct__hostdrop_t *h = attach_lo();
  jct_injector_t *inj = configure(h, "drop every=3 burst=2 at=host:0", true);
  bool got[9];
  for (uint32_t i = 0; i < 9; i++)
    got[i] = run1(h, i);
  /* The last 2 of every 3: frames 2,3 5,6 8,9 (from 1). */
  for (uint32_t i = 0; i < 9; i++)
    ck_assert_msg(got[i] == (i % 3 != 0), "frame %u: dropped %d", i + 1, got[i]);
  /* Not RoCEv2 (UDP 4792): passes, not counted. */
  uint8_t buf[256];
  size_t n = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP, 100, 4792);
  bool dropped = true;
  ck_assert_int_eq(jct__hostdrop_test_run(h, buf, n, &dropped), 0);
  ck_assert(!dropped);
  struct jct_kdrop_counters k;
  ck_assert_int_eq(jct__hostdrop_counters(h, &k), 0);
  ck_assert_uint_eq(k.seen, 9);
  ck_assert_uint_eq(k.dropped, 6);
  /* A baseline repetition: everything passes, nothing counted. */
  ck_assert_int_eq(jct__hostdrop_enable(h, false), 0);
  ck_assert_uint_eq(run_n(h, 9), 0);
  ck_assert_int_eq(jct__hostdrop_counters(h, &k), 0);
  ck_assert_uint_eq(k.seen, 9);
  jct_injector_free(inj);
  jct__hostdrop_detach(h, false);
}
END_TEST

/* Bernoulli p=10% and Gilbert-Elliott (p=1%, r=30%: 1/31 of frames lost,
 * in bursts of 1/r = 3.3) over 20000 frames, within 5 standard deviations
 * of the binomial; the same seed drops the same frames again. */
START_TEST(random_models_rates_and_seed) {
  if (!ns_own("hostfault", "random_models_rates_and_seed", 0)) return;
  jct__hostdrop_t *h = attach_lo();
  const uint32_t n = 20000;
  jct_injector_t *inj = configure(h, "drop p=10% at=host:0 seed=7", true);
  uint64_t d1 = run_n(h, n);
  jct_injector_free(inj);
  inj = configure(h, "drop p=10% at=host:0 seed=7", true);
  uint64_t d2 = run_n(h, n);
  jct_injector_free(inj);
  inj = configure(h, "drop p=10% at=host:0 seed=8", true);
  uint64_t d3 = run_n(h, n);
  jct_injector_free(inj);
  double sd = sqrt(n * 0.1 * 0.9);
  printf("hostfault: p=10%%: %llu of %u dropped (seed 7, again %llu; seed 8 %llu)\n",
         (unsigned long long)d1, n, (unsigned long long)d2, (unsigned long long)d3);
  ck_assert_msg(fabs((double)d1 - n * 0.1) < 5 * sd, "p=10%%: %llu of %u", (unsigned long long)d1,
                n);
  ck_assert_uint_eq(d1, d2);
  ck_assert_uint_ne(d1, d3);

  inj = configure(h, "drop model=gemodel p=1% r=30% at=host:0", true);
  uint64_t g = run_n(h, n);
  jct_injector_free(inj);
  double pg = 0.01 / 0.31;
  printf("hostfault: gemodel p=1%% r=30%%: %llu of %u dropped (expected %.0f)\n",
         (unsigned long long)g, n, n * pg);
  /* Bursts of mean 3.3 widen the spread: 5 standard deviations of 3.3-frame bursts. */
  ck_assert_msg(fabs((double)g - n * pg) < 5 * sqrt(n * pg / 3.3) * 3.3, "gemodel: %llu",
                (unsigned long long)g);
  jct__hostdrop_detach(h, false);
}
END_TEST

/* The same PSN sequence, with go-back-N copies, through the switch's drop
 * injector and the kernel program: the same verdict on every frame. */
START_TEST(targets_as_the_switch) {
  if (!ns_own("hostfault", "targets_as_the_switch", 0)) return;
  static const char *const specs[] = {
      "drop psn=5 qp=0x101 at=host:0",
      "drop psn=5,5@2 qp=0x101 at=host:0",
      "drop psn=5@2 qp=0x101 at=host:0",
      "drop psn=5,7 qp=0x101 retransmissions=yes count=2 at=host:0",
      "drop psn=5 qp=0x102 at=host:0", /* another QP: nothing */
      /* Bernoulli: keyed by the packet as draw.c keys it, so the same. */
      "drop p=30% seed=3 at=host:0",
      "drop p=20% burst=2 seed=5 at=host:0",
  };
  /* 0..9, a go-back from 5 (5..9), another from 5, then 10, 11, and ACKs
   * (opcode 0x11) for 3 and 9 along the way. */
  static const uint32_t psns[] = {0, 1, 2, 3, 4, 5,  6,  7, 8, 9,  5,  6,  7,
                                  8, 9, 5, 6, 7, 10, 11, 3, 9, 12, 13, 14, 15};
  static const uint8_t ack[sizeof psns / sizeof *psns] = {[20] = 1, [21] = 1};
  const size_t n = sizeof psns / sizeof *psns;
  jct__hostdrop_t *h = attach_lo();
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    jct_injector_t *kinj = configure(h, specs[s], true), *sw = switch_twin(specs[s]);
    uint64_t drops = 0;
    for (size_t i = 0; i < n; i++) {
      uint8_t buf[256];
      uint8_t op = ack[i] ? JCT_OP_RC_ACKNOWLEDGE : JCT_OP_RC_RDMA_WRITE_MIDDLE;
      size_t len = frame(buf, op, QP, psns[i], 4791);
      bool sw_drop, k_drop = verdicts(h, sw, buf, len, &sw_drop);
      ck_assert_msg(sw_drop == k_drop, "%s: frame %zu (PSN %u): switch %d, kernel %d", specs[s], i,
                    psns[i], sw_drop, k_drop);
      drops += k_drop;
    }
    printf("hostfault: '%s': %llu drops, as the switch's\n", specs[s], (unsigned long long)drops);
    if (s != 4) ck_assert_uint_gt(drops, 0);
    jct_injector_free(sw);
    jct_injector_free(kinj);
  }
  jct__hostdrop_detach(h, false);
}
END_TEST

/* pkt= and qp-order=: targets by their position in a message, on a QP
 * named or found in the order QPs start, decided by the program as by the
 * switch's drop injector on the same sequence: two QPs' messages of 4
 * packets (WRITE FIRST, MIDDLE, MIDDLE, LAST), go-backs on both. */
START_TEST(positions_as_the_switch) {
  if (!ns_own("hostfault", "positions_as_the_switch", 0)) return;
  static const char *const specs[] = {
      "drop pkt=1:2 qp=0x101 at=host:0",
      "drop pkt=0:1,1:2@2 qp=0x101 at=host:0",
      "drop pkt=2:1,2:1@2 qp=0x102 at=host:0",
      "drop pkt=1:0,1:0@2 at=host:0",          /* the first QP to start: 0x102 */
      "drop pkt=0:3,2:1 qp-order=1 at=host:0", /* the second: 0x101 */
      "drop pkt=4:0 qp=0x101 at=host:0",       /* a message that never starts: nothing */
  };
  /* (QP, PSN): 0x102 0..3, 0x101 0..7, 0x101 go-back 5..7, 0x102 4..11,
   * 0x101 8..11, 0x101 go-backs 9..11 twice, 0x102 go-back 4..11. */
  static const uint16_t seq[][2] = {
      {2, 0}, {2, 1},  {2, 2},  {2, 3},  {1, 0},  {1, 1},  {1, 2}, {1, 3},  {1, 4},
      {1, 5}, {1, 6},  {1, 7},  {1, 5},  {1, 6},  {1, 7},  {2, 4}, {2, 5},  {2, 6},
      {2, 7}, {2, 8},  {2, 9},  {2, 10}, {2, 11}, {1, 8},  {1, 9}, {1, 10}, {1, 11},
      {1, 9}, {1, 10}, {1, 11}, {1, 9},  {1, 10}, {1, 11}, {2, 4}, {2, 5},  {2, 6},
      {2, 7}, {2, 8},  {2, 9},  {2, 10}, {2, 11}, {1, 12}, {1, 13}};
  static const uint8_t ops[4] = {JCT_OP_RC_RDMA_WRITE_FIRST, JCT_OP_RC_RDMA_WRITE_MIDDLE,
                                 JCT_OP_RC_RDMA_WRITE_MIDDLE, JCT_OP_RC_RDMA_WRITE_LAST};
  const size_t n = sizeof seq / sizeof *seq;
  jct__hostdrop_t *h = attach_lo();
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    jct_injector_t *kinj = configure(h, specs[s], true), *sw = switch_twin(specs[s]);
    uint64_t drops = 0;
    char dropped[256] = "";
    for (size_t i = 0; i < n; i++) {
      uint8_t buf[256];
      uint32_t qp = 0x100 + seq[i][0], psn = 1000 + seq[i][1];
      size_t len = frame(buf, ops[seq[i][1] % 4], qp, psn, 4791);
      bool sw_drop, k_drop = verdicts(h, sw, buf, len, &sw_drop);
      ck_assert_msg(sw_drop == k_drop, "%s: frame %zu (QP 0x%x PSN %u): switch %d, kernel %d",
                    specs[s], i, qp, psn, sw_drop, k_drop);
      if (k_drop) {
        size_t l = strlen(dropped);
        snprintf(dropped + l, sizeof dropped - l, " 0x%x:%u", qp, psn);
      }
      drops += k_drop;
    }
    printf("hostfault: '%s': %llu drops (%s), as the switch's\n", specs[s],
           (unsigned long long)drops, drops ? dropped + 1 : "none");
    static const uint64_t want[] = {1, 2, 2, 2, 2, 0};
    ck_assert_uint_eq(drops, want[s]);
    jct_injector_free(sw);
    jct_injector_free(kinj);
  }
  jct__hostdrop_detach(h, false);
}
END_TEST

/* The program's counters are seen, held and dropped. */
static void assert_counters(jct__hostdrop_t *h, uint64_t seen, uint64_t held, uint64_t dropped) {
  struct jct_kdrop_counters k;
  ck_assert_int_eq(jct__hostdrop_counters(h, &k), 0);
  ck_assert_uint_eq(k.seen, seen);
  ck_assert_uint_eq(k.held, held);
  ck_assert_uint_eq(k.dropped, dropped);
}

/* delay 5ms at a host: each RoCEv2 packet in the window gets the departure
 * time now + 5 ms (CLOCK_MONOTONIC, what fq honours), counted as held;
 * other packets and a baseline leave unstamped; jitter= is refused. */
START_TEST(delay_stamps_departure) {
  if (!ns_own("hostfault", "delay_stamps_departure", 0)) return;
  jct__hostdrop_t *h = attach_lo();
  jct_injector_t *inj = configure(h, "delay 5ms at=host:0", true);
  uint8_t buf[256];
  size_t n = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP, 7, 4791);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t before = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, t = 0;
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, n, &t), 0);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t after = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  printf("hostfault: delay 5ms: departure %.3f ms after the call began\n",
         (double)(t - before) / 1e6);
  ck_assert_uint_ge(t, before + 5000000);
  ck_assert_uint_le(t, after + 5000000);
  size_t other = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP, 8, 4792); /* not RoCEv2 */
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, other, &t), 0);
  ck_assert_uint_eq(t, 0);
  assert_counters(h, 1, 1, 0);
  jct_injector_free(inj);
  inj = configure(h, "delay 5ms at=host:0", false); /* a baseline */
  n = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP, 9, 4791);
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, n, &t), 0);
  ck_assert_uint_eq(t, 0);
  jct_injector_free(inj);
  char err[256] = "";
  ck_assert_int_eq(jct_injector_new(&inj, "delay 5ms jitter=1ms at=host:0", 1, 0, err, sizeof err),
                   JCT_EINVAL);
  ck_assert_msg(strstr(err, "jitter="), "%s", err);
  jct__hostdrop_detach(h, false);
}
END_TEST

/* An RC ACKNOWLEDGE with syndrome, to dest QP qp from src (rank 1's
 * address to rank 0's unless src names another). */
static size_t ack(uint8_t *buf, uint32_t qp, uint32_t psn, uint8_t syndrome, const char *src) {
  craft_roce_t c = {.src = src, .dst = "198.18.0.1"};
  c.h.aeth.syndrome = syndrome;
  return craft_bth(buf, &c, JCT_OP_RC_ACKNOWLEDGE, qp, psn);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* delay nak=2@30ms at a host: the second PSN sequence error NAK the host
 * sends leaves 30 ms late; every later packet of its flow (the responder
 * QP's ACKs) is stamped no earlier, so none overtakes it under fq; the
 * first NAK, an RNR NAK, the ACKs before it and another flow's ACK after
 * it leave at once. Refused on the switch, with jitter, or malformed. */
START_TEST(nak_hold_keeps_its_flow) {
  if (!ns_own("hostfault", "nak_hold_keeps_its_flow", 0)) return;
  jct__hostdrop_t *h = attach_lo();
  jct_injector_t *inj = configure(h, "delay nak=2@30ms at=host:0", true);
  const char *a = "198.18.0.2", *b = "198.18.0.3"; /* two responders' ACK flows */
  uint8_t buf[256];
  uint64_t t = 1, before, after;
  /* An ACK, the first NAK, an RNR NAK (0x20 | timer): none held. */
  static const uint8_t early[] = {0x1f, 0x60, 0x2e};
  for (size_t i = 0; i < sizeof early; i++) {
    ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, ack(buf, QP, (uint32_t)(10 + i), early[i], a), &t), 0);
    ck_assert_msg(t == 0, "syndrome 0x%02x stamped", early[i]);
  }
  before = mono_ns();
  uint64_t nak = 0;
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, ack(buf, QP, 20, 0x60, a), &nak), 0);
  after = mono_ns();
  printf("hostfault: delay nak=2@30ms: the second NAK leaves %.3f ms after the call began\n",
         (double)(nak - before) / 1e6);
  ck_assert_uint_ge(nak, before + 30000000);
  ck_assert_uint_le(nak, after + 30000000);
  /* Its flow's next ACK: not before the NAK. Another flow's: at once. */
  uint64_t next = 0, other = 1;
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, ack(buf, QP, 25, 0x1f, a), &next), 0);
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, ack(buf, QP, 25, 0x1f, b), &other), 0);
  ck_assert_uint_ge(next, nak);
  ck_assert_uint_eq(other, 0);
  /* The flow's data the other way (another QP: another flow) is untouched too. */
  size_t n = frame(buf, JCT_OP_RC_RDMA_WRITE_MIDDLE, QP + 1, 7, 4791);
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, n, &other), 0);
  ck_assert_uint_eq(other, 0);
  assert_counters(h, 7, 1, 0);
  jct_injector_free(inj);
  /* A new repetition counts NAKs from 1 again, and holds none of an
   * earlier one's flow: the first NAK now passes at once. */
  inj = configure(h, "delay nak=2@30ms at=host:0", true);
  ck_assert_int_eq(jct__hostdrop_test_tstamp(h, buf, ack(buf, QP, 30, 0x60, a), &t), 0);
  ck_assert_uint_eq(t, 0);
  jct_injector_free(inj);
  static const char *const refused[][2] = {
      {"delay nak=1@20ms", "at a host only"},
      {"delay nak=1@20ms jitter=1ms at=host:0", "no jitter"},
      {"delay 5ms nak=1@20ms at=host:0", "no bare TIME"},
      {"delay nak=0@20ms at=host:0", "K@TIME"},
      {"delay nak=1@20parsecs at=host:0", "K@TIME"},
      {"delay nak=1@20ms,1@5ms at=host:0", "named twice"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char err[512] = "";
    ck_assert_int_eq(jct_injector_new(&inj, refused[i][0], 1, 0, err, sizeof err), JCT_EINVAL);
    ck_assert_msg(strstr(err, refused[i][1]), "%s: %s", refused[i][0], err);
  }
  jct__hostdrop_detach(h, false);
}
END_TEST

/* Whether ifindex has our egress filter, and whether it has a clsact
 * qdisc (creating one fails with EEXIST; one created to find out is
 * removed again). */
static bool has_filter(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  LIBBPF_OPTS(bpf_tc_opts, o, .handle = 0x4a43, .priority = 1);
  return bpf_tc_query(&hook, &o) == 0;
}



/* A veth that outlives the program (a rank's eth0 in a topology the test
 * holds): left as found. By a tcx link (this kernel has them): no filter,
 * no clsact, the link gone at detach. By the fallback filter
 * (JCT_HOSTDROP_ATTACH=tc): with and without a clsact of its own before. */
START_TEST(veth_left_as_found) {
  if (!ns_own("hostfault", "veth_left_as_found", 0)) return;
  char err[512] = "";
  jct_topo_t *t = NULL;
  ck_assert_msg(jct_topo_create(&t, 2, NULL, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(jct_topo_enter_rank(t, 0, err, sizeof err), 0);
  int ifindex = jct_topo_rank_ifindex(t, 0);
  unsetenv("JCT_HOSTDROP_ATTACH");
  jct__hostdrop_t *x = NULL;
  ck_assert_msg(jct__hostdrop_attach(&x, ifindex, 1, "rank 0's eth0", err, sizeof err) == 0, "%s",
                err);
  ck_assert_str_eq(jct__hostdrop_attach_kind(x), "tcx");
  uint32_t id = jct__hostdrop_prog_id(x);
  ck_assert_int_eq(tcx_links(ifindex, id), 1);
  ck_assert(!has_filter(ifindex));
  ck_assert(!has_clsact(ifindex));
  jct__hostdrop_detach(x, false);
  ck_assert_int_eq(tcx_links(ifindex, id), 0);
  setenv("JCT_HOSTDROP_ATTACH", "tc", 1);
  for (int pre = 0; pre <= 1; pre++) {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
    if (pre) ck_assert_int_eq(bpf_tc_hook_create(&hook), 0); /* someone's clsact */
    jct__hostdrop_t *h = NULL;
    ck_assert_msg(jct__hostdrop_attach(&h, ifindex, 1, "rank 0's eth0", err, sizeof err) == 0, "%s",
                  err);
    ck_assert_str_eq(jct__hostdrop_attach_kind(h), "tc");
    ck_assert(has_filter(ifindex));
    jct__hostdrop_detach(h, false);
    ck_assert_msg(!has_filter(ifindex), "the filter is still there (clsact before: %d)", pre);
    ck_assert_msg(has_clsact(ifindex) == (bool)pre, "clsact %s (before: %d)",
                  pre ? "removed" : "left behind", pre);
    if (pre) {
      hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
      ck_assert_int_eq(bpf_tc_hook_destroy(&hook), 0);
    }
  }
  ck_assert_int_eq(jct_topo_enter_switch(t, err, sizeof err), 0);
  jct_topo_destroy(t);
}
END_TEST

/* The programs on lo's tcx hook (46 ingress, 47 egress: linux/bpf.h from
 * 6.6 on), any program. */
static uint32_t lo_tcx(int hook) {
  uint32_t ids[8], n = 8;
  if (bpf_prog_query(1, (enum bpf_attach_type)hook, 0, NULL, ids, &n) < 0) return 0;
  return n;
}

/* A datagram to 127.0.0.1:9: whether sendto took it whole (the sender told
 * it left) and whether it arrived. */
static void lo_datagram(bool *sent, bool *arrived) {
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(9)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ck_assert_int_eq(bind(rx, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {0, 200000};
  setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char msg[64] = "flap", got[64];
  *sent = sendto(tx, msg, sizeof msg, 0, (struct sockaddr *)&sa, sizeof sa) == (ssize_t)sizeof msg;
  *arrived = recv(rx, got, sizeof got, 0) == (ssize_t)sizeof msg;
  close(rx);
  close(tx);
}

/* A flap's cut under a soft-RoCE netdev (hostcut.h), on lo: cut, a
 * datagram is taken by the sender and lost, one program on each hook;
 * mended, it arrives and both hooks are empty; freed while cut, the same. */
START_TEST(cut_both_ways) {
  if (!ns_own("hostfault", "cut_both_ways", NS_LO_UP)) return;
  char err[512] = "";
  jct__hostcut_t *c = NULL;
  ck_assert_msg(jct__hostcut_new(&c, 1, "lo", err, sizeof err) == 0, "%s", err);
  bool sent, arrived;
  lo_datagram(&sent, &arrived);
  ck_assert(sent && arrived);
  ck_assert_int_eq(lo_tcx(46) + lo_tcx(47), 0); /* loaded, not cut */
  for (int round = 0; round < 2; round++) {
    ck_assert_msg(jct__hostcut_set(c, true, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(jct__hostcut_set(c, true, err, sizeof err) == 0, "%s", err); /* idempotent */
    ck_assert_uint_eq(lo_tcx(46), 1);
    ck_assert_uint_eq(lo_tcx(47), 1);
    lo_datagram(&sent, &arrived);
    ck_assert_msg(sent && !arrived, "cut: a datagram was %s and %s", sent ? "sent" : "refused",
                  arrived ? "arrived" : "lost");
    if (round == 0) ck_assert_int_eq(jct__hostcut_set(c, false, err, sizeof err), 0);
  }
  jct__hostcut_free(c); /* while cut: mended */
  ck_assert_int_eq(lo_tcx(46) + lo_tcx(47), 0);
  lo_datagram(&sent, &arrived);
  ck_assert(sent && arrived);
}
END_TEST

/* ---- jctlab run, ranks in namespaces ------------------------------------ */

/* Connection 1 (rank 1 -> 2): its data goes to QP 0x103 and its PSNs start
 * at 2654435761 & 0xffffff (check_inject.c's facts of a run). */
#define CONN1_QP "0x103"
#define CONN1_PSN0 (2654435761u & 0xffffff)

static bool root_or_skip(const char *test) {
  if (geteuid() == 0) return true;
  printf("hostfault: %s skipped: needs root (CAP_BPF)\n", test);
  return false;
}

/* A 4-rank ring of 256 KiB at 5 Mbit/s (a busy machine keeps up), 1
 * repetition, one injector: its document, valid. */
static json_t *run_one(const char *spec, const char *log) {
  const char *const args[] = {"run",   "--synth",     "ring", "--ranks", "4",      "--rate",
                              "5mbit", "--reps",      "1",    "--bytes", "256KiB", "--inject",
                              spec,    "--fault-log", log,    NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "'%s': exit %d: %s", spec, status, err);
  ck_assert_msg(jbool(doc, "valid"), "'%s': invalid: %s", spec,
                json_string_value(json_object_get(doc, "invalid_why")));
  free(err);
  return doc;
}

/* The acceptance's targeted drop: one data packet of rank 1's, lost in
 * its own kernel, gives exactly one NAK and one go-back on the sender and
 * no timeout, as the same drop on the switch (frames from rank 1) does. */
START_TEST(targeted_drop_host_as_switch) {
  if (!root_or_skip("targeted_drop_host_as_switch")) return;
  char spec[2][96], log[2][256];
  snprintf(spec[0], sizeof spec[0], "drop psn=%u qp=" CONN1_QP " at=host:1", CONN1_PSN0 + 5);
  snprintf(spec[1], sizeof spec[1], "drop psn=%u qp=" CONN1_QP " port=1 dir=in", CONN1_PSN0 + 5);
  json_t *doc[2];
  for (int i = 0; i < 2; i++) {
    craft_tmpname(log[i], sizeof log[i], ".log");
    doc[i] = run_one(spec[i], log[i]);
    ck_assert_int_eq(jint(doc[i], "injectors.0.dropped"), 1);
    ck_assert_int_eq(jint(doc[i], "transport.naks"), 1);
    ck_assert_int_eq(jint(doc[i], "transport.timeouts"), 0);
    ck_assert_int_gt(jint(doc[i], "transport.retransmitted_packets"), 0);
    printf("hostfault: %s: 1 drop, %lld NAK, %lld timeouts, %lld packets re-sent\n", spec[i],
           (long long)jint(doc[i], "transport.naks"), (long long)jint(doc[i], "transport.timeouts"),
           (long long)jint(doc[i], "transport.retransmitted_packets"));
  }
  /* On the host the switch drops nothing; its fault log line names the host. */
  ck_assert_int_eq(jint(doc[0], "fabric.drops"), 0);
  ck_assert_int_eq(jint(doc[1], "fabric.drops"), 1);
  char *text = slurp(log[0], NULL);
  ck_assert_uint_eq(count_lines(text), 1);
  json_t *l = parse_json(text, "the fault log's line");
  ck_assert_str_eq(json_string_value(jget(l, "at")), "host:1");
  ck_assert_str_eq(json_string_value(jget(l, "action")), "drop");
  ck_assert_str_eq(json_string_value(jget(l, "src")), "198.18.0.2");
  ck_assert_int_eq(jint(l, "qp"), 0x103);
  ck_assert_int_eq(jint(l, "psn"), CONN1_PSN0 + 5);
  ck_assert(!jbool(l, "retransmission"));
  json_decref(l);
  free(text);
  for (int i = 0; i < 2; i++) {
    unlink(log[i]);
    json_decref(doc[i]);
  }
}
END_TEST

/* A window (at=, until=) is emulated time at the host as on the switch:
 * under time dilation (F = 16) the kernel, which keeps wall time, is
 * given the window x F. Every 10th frame from rank 1 between 5 and 15 ms
 * is dropped at the host and on the switch alike, and the host's drops
 * are logged at emulated times inside the window. The two drops cost one
 * retransmit timeout: --timeout 14 (67 ms), not the default 20 (4.3 s),
 * which the run with the host's drop waited out x 16 in wall time (70 s
 * of the suite's 95 s; the switch's run skips that idle time: 1.3 s), for
 * a figure no assertion here reads. */
START_TEST(window_dilated_host_as_switch) {
  if (!root_or_skip("window_dilated_host_as_switch")) return;
  static const char *const where[] = {"at=host:1", "port=1 dir=in"};
  json_int_t dropped[2];
  char log[256];
  craft_tmpname(log, sizeof log, ".log");
  for (int i = 0; i < 2; i++) {
    char spec[96];
    snprintf(spec, sizeof spec, "drop every=10 at=5ms until=15ms %s", where[i]);
    const char *const args[] = {"run",   "--synth",  "ring",   "--ranks",  "4",  "--rate",
                                "80mbit", "--tdf",   "16",     "--reps",   "1",  "--bytes",
                                "256KiB", "--timeout", "14", "--inject", spec, "--fault-log", log,
                                NULL};
    int status;
    char *err = NULL;
    json_t *doc = jctlab_json_retry(args, &status, &err);
    ck_assert_msg(status == 0 && doc, "'%s': exit %d: %s", spec, status, err);
    free(err);
    dropped[i] = jint(doc, "injectors.0.dropped");
    json_decref(doc);
    if (i) continue;
    char *text = slurp(log, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(count_lines(text), (size_t)dropped[0]);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
      json_t *l = parse_json(line, "the fault log's line");
      json_int_t t = jint(l, "t_ns");
      ck_assert_msg(t >= 5000000 && t < 15000000, "a host drop at %lld ns", (long long)t);
      json_decref(l);
    }
    free(text);
  }
  unlink(log);
  printf("hostfault: every 10th frame in [5, 15) ms, F = 16: host %lld drops, switch %lld\n",
         (long long)dropped[0], (long long)dropped[1]);
  ck_assert_int_gt(dropped[0], 0);
  ck_assert_int_eq(dropped[0], dropped[1]);
}
END_TEST

/* The same packet picked by position, pkt=1:5 on connection 1 (the sixth
 * packet of rank 1's second message to QP 0x103), named by its QP or
 * found as the second QP rank 1 sends data to (qp-order=1: its first is
 * 0x100, toward rank 0): at the host and on the switch each loses the same
 * PSN once, one NAK, no timeout. */
START_TEST(position_drop_host_as_switch) {
  if (!root_or_skip("position_drop_host_as_switch")) return;
  static const char *const specs[] = {
      "drop pkt=1:5 qp=" CONN1_QP " at=host:1",
      "drop pkt=1:5 qp=" CONN1_QP " port=1 dir=in",
      "drop pkt=1:5 qp-order=1 at=host:1",
  };
  long long psn[3];
  for (int i = 0; i < 3; i++) {
    char log[256];
    craft_tmpname(log, sizeof log, ".log");
    json_t *doc = run_one(specs[i], log);
    ck_assert_int_eq(jint(doc, "injectors.0.dropped"), 1);
    ck_assert_int_eq(jint(doc, "transport.naks"), 1);
    ck_assert_int_eq(jint(doc, "transport.timeouts"), 0);
    ck_assert_int_eq(jint(doc, "fabric.drops"), strstr(specs[i], "port=") ? 1 : 0);
    char *text = slurp(log, NULL);
    ck_assert_uint_eq(count_lines(text), 1);
    json_t *l = parse_json(text, "the fault log's line");
    ck_assert_int_eq(jint(l, "qp"), 0x103);
    psn[i] = jint(l, "psn");
    printf("hostfault: %s: PSN %lld (first %u + %lld) lost, 1 NAK, no timeout\n", specs[i], psn[i],
           CONN1_PSN0, psn[i] - CONN1_PSN0);
    json_decref(l);
    free(text);
    unlink(log);
    json_decref(doc);
  }
  ck_assert_int_eq(psn[0], psn[1]);
  ck_assert_int_eq(psn[2], psn[1]);
  ck_assert_int_gt(psn[0], CONN1_PSN0 + 5); /* message 1, not 0 */
}
END_TEST

/* drop p=1% on rank 1's egress, in its kernel and on the switch
 * (suites/scenarios/host-loss.yaml, 5 repetitions a side): the same
 * packets are lost (packet-keyed draws), so the same NAKs and timeouts,
 * and the two degradations' 95% intervals overlap. */
START_TEST(random_drop_host_as_switch) {
  if (!root_or_skip("random_drop_host_as_switch")) return;
  const char *const args[] = {"run", JCT_SOURCE_DIR "/suites/scenarios/host-loss.yaml", NULL};
  int status;
  char *err = NULL;
  json_t *doc = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0 && doc, "exit %d: %s", status, err);
  free(err);
  json_t *host = jget(doc, "cases.0"), *sw = jget(doc, "cases.1");
  ck_assert_str_eq(json_string_value(jget(host, "name")), "host");
  for (int i = 0; i < 2; i++) {
    json_t *c = i ? sw : host;
    ck_assert_msg(json_is_null(json_object_get(c, "invalid_why")), "%s: %s",
                  json_string_value(jget(c, "name")),
                  json_string_value(json_object_get(c, "invalid_why")));
    printf("hostfault: p=1%% on rank 1's egress, %s: degradation %.3f [%.3f, %.3f], %lld NAKs, "
           "%lld timeouts\n",
           json_string_value(jget(c, "name")), jnum(c, "degradation.median"),
           jnum(c, "degradation.ci95_low"), jnum(c, "degradation.ci95_high"),
           (long long)jint(c, "transport.naks"), (long long)jint(c, "transport.timeouts"));
  }
  ck_assert_int_eq(jint(host, "transport.naks"), jint(sw, "transport.naks"));
  ck_assert_int_eq(jint(host, "transport.timeouts"), jint(sw, "transport.timeouts"));
  ck_assert_int_gt(jint(host, "transport.naks") + jint(host, "transport.timeouts"), 0);
  /* Same drops, so the same degradation up to the run-to-run noise the
   * 95% intervals measure: they overlap. */
  double hlo = jnum(host, "degradation.ci95_low"), hhi = jnum(host, "degradation.ci95_high");
  double slo = jnum(sw, "degradation.ci95_low"), shi = jnum(sw, "degradation.ci95_high");
  ck_assert_msg(hlo <= shi && slo <= hhi, "host [%.3f, %.3f] and switch [%.3f, %.3f] are apart",
                hlo, hhi, slo, shi);
  json_decref(doc);
}
END_TEST

/* A PFC storm sent from rank 1's own interface (AF_PACKET), quanta 1000
 * at 5 Mbit/s = 102.4 ms, link=5mbit: a frame every 51.2 ms for 300 ms
 * (6 frames) from 50 ms. The switch receives all 6 on rank 1's link and
 * keeps its egress toward rank 1 paused from the first to the last
 * frame's end: 5 * 51.2 + 102.4 = 358.4 ms; the job takes about that much
 * longer than without the storm. */
START_TEST(pause_storm_from_host) {
  if (!root_or_skip("pause_storm_from_host")) return;
  const char *const base_args[] = {"run",   "--synth", "ring", "--ranks", "4",      "--rate",
                                   "5mbit", "--reps",  "3",    "--bytes", "256KiB", NULL};
  int status;
  char *err = NULL;
  json_t *base = jctlab_json_retry(base_args, &status, &err);
  ck_assert_msg(status == 0 && base, "baseline: exit %d: %s", status, err);
  free(err);
  char log[256];
  craft_tmpname(log, sizeof log, ".log");
  const char *storm = "pause prio=3 quanta=1000 link=5mbit for=300ms at=50ms at=host:1";
  json_t *run = run_one(storm, log);
  /* On a loaded machine a stalled loop can cost a packet and a 4.3 s
   * retransmit timeout: that run measures the machine, so once more. */
  if (jint(run, "transport.timeouts") > 0) {
    printf("hostfault: storm run with %lld timeouts (a loaded machine): once more\n",
           (long long)jint(run, "transport.timeouts"));
    json_decref(run);
    run = run_one(storm, log);
  }
  ck_assert_int_eq(jint(run, "injectors.0.generated"), 6);
  ck_assert_int_eq(jint(run, "injectors.0.dropped"), 0);
  ck_assert_int_eq(jint(run, "fabric.pfc_xoff_received"), 6);
  ck_assert_int_eq(jint(run, "fabric.drops"), 0);
  double paused = (double)jint(run, "fabric.paused_ns"), expect = 5 * 51.2e6 + 102.4e6;
  ck_assert_msg(fabs(paused - expect) <= 3e6, "paused %.1f ms, expected %.1f ms", paused / 1e6,
                expect / 1e6);
  double lossless = (double)jint(base, "jct.median_ns"),
         stormy = (double)jint(run, "jct.median_ns");
  double ratio = (stormy - lossless) / paused;
  printf("hostfault: storm from host:1: %lld PFC frames received, paused %.1f ms; JCT %.1f ms, "
         "lossless %.1f ms: +%.1f ms, %.2f x the paused time\n",
         (long long)jint(run, "fabric.pfc_xoff_received"), paused / 1e6, stormy / 1e6,
         lossless / 1e6, (stormy - lossless) / 1e6, ratio);
  fflush(stdout);
  ck_assert_msg(ratio >= 0.7 && ratio <= 1.5, "JCT increase %.2f x the paused time", ratio);
  char *text = slurp(log, NULL);
  ck_assert_uint_eq(count_lines(text), 6);
  ck_assert_ptr_nonnull(strstr(text, "\"at\":\"host:1\""));
  ck_assert_ptr_nonnull(strstr(text, "\"action\":\"generate\""));
  free(text);
  unlink(log);
  json_decref(run);
  json_decref(base);
}
END_TEST

/* Rank 1's interface set down for 100 ms from 100 ms (flap at=host:1,
 * over netlink): the link-down time is counted, the senders' retransmit
 * timers (exponent 14: 67 ms) fire, the job still completes, and the
 * fault log ends with the link up. */
START_TEST(flap_from_host) {
  if (!root_or_skip("flap_from_host")) return;
  char log[256];
  craft_tmpname(log, sizeof log, ".log");
  const char *const args[] = {"run",
                              "--synth",
                              "ring",
                              "--ranks",
                              "4",
                              "--rate",
                              "5mbit",
                              "--reps",
                              "1",
                              "--bytes",
                              "256KiB",
                              "--timeout",
                              "14",
                              "--fault-log",
                              log,
                              "--inject",
                              "flap down=100ms every=10s at=100ms at=host:1",
                              NULL};
  int status;
  char *err = NULL;
  json_t *run = jctlab_json_retry(args, &status, &err);
  ck_assert_msg(status == 0 && run, "exit %d: %s", status, err);
  free(err);
  double down = (double)jint(run, "injectors.0.link_down_ns");
  printf("hostfault: flap at host:1: link down %.1f ms, %lld timeouts, %lld packets re-sent\n",
         down / 1e6, (long long)jint(run, "transport.timeouts"),
         (long long)jint(run, "transport.retransmitted_packets"));
  /* Each transition is as late as the loop (a few ms on a busy machine). */
  ck_assert_msg(down >= 90e6 && down <= 110e6, "link down %.1f ms, not about 100", down / 1e6);
  ck_assert_int_gt(jint(run, "transport.timeouts"), 0);
  ck_assert_int_gt(jint(run, "injectors.0.dropped"), 0); /* the switch's, toward the down link */
  ck_assert_int_eq(jint(run, "fabric.harness_losses"), 0);
  /* What rank 1 sent meanwhile its kernel refused (no route): counted,
   * fewer than it sent in all, and the link-up line says as many. */
  long long refused = jint(run, "injectors.0.refused");
  ck_assert_int_gt(refused, 0);
  ck_assert_int_lt(refused, jint(run, "transport.packets"));
  char *text = slurp(log, NULL);
  ck_assert_uint_eq(count_lines(text), 2);
  char *down_at = strstr(text, "\"action\":\"link-down\""),
       *up_at = strstr(text, "\"action\":\"link-up\"");
  ck_assert_ptr_nonnull(down_at);
  ck_assert_ptr_nonnull(up_at);
  ck_assert(up_at > down_at); /* up again at the end */
  json_t *up = parse_json(strchr(down_at, '\n') + 1, "the link-up line");
  ck_assert_int_eq(jint(up, "refused"), refused);
  json_decref(up);
  printf("hostfault: flap at host:1: %lld packets refused by rank 1's kernel while down\n",
         refused);
  free(text);
  unlink(log);
  json_decref(run);
}
END_TEST

/* How many programs named jct_hostdrop the kernel holds (any process's). */
static int count_progs(void) {
  int n = 0;
  uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && !strcmp(info.name, "jct_hostdrop")) n++;
    close(fd);
  }
  return n;
}

/* Wait up to limit_s for count_progs() to be want. */
static bool progs_become(int want, double limit_s) {
  for (double t0 = now_s(); now_s() - t0 < limit_s; sleep_ms(50))
    if (count_progs() == want) return true;
  return count_progs() == want;
}

/* jctlab killed in the middle of a run with a host injector attached:
 * SIGTERM ends it cleanly (exit 128 + 15), SIGKILL at once; either way
 * the program is gone from the kernel afterwards (the filter went with
 * the rank's namespace, the maps and program with the last descriptor). */
START_TEST(killed_leaves_no_program) {
  if (!root_or_skip("killed_leaves_no_program")) return;
  int before = count_progs();
  const int sigs[] = {SIGTERM, SIGKILL};
  for (int i = 0; i < 2; i++) {
    char *argv[] = {
        JCT_BINARY, "run",    "--synth", "ring",    "--ranks", "4",        "--rate",
        "5mbit",    "--reps", "50",      "--bytes", "256KiB",  "--inject", "drop p=1% at=host:1",
        NULL};
    child_t c = spawn(argv, NULL);
    ck_assert_msg(progs_become(before + 1, 20), "the program never appeared");
    sleep_ms(300);
    kill(c.pid, sigs[i]);
    result_t r = finish(&c, 30);
    if (sigs[i] == SIGTERM)
      ck_assert_msg(r.status == 128 + SIGTERM, "SIGTERM: exit %d: %s", r.status, r.err);
    else
      ck_assert_int_eq(r.signal, SIGKILL);
    ck_assert_msg(progs_become(before, 5), "%s: %d programs left (before: %d)",
                  sigs[i] == SIGTERM ? "SIGTERM" : "SIGKILL", count_progs() - before, before);
    result_free(&r);
  }
}
END_TEST

/* What a host cannot do: exit 2, one line naming the word and the reason. */
START_TEST(bad_input) {
  if (!root_or_skip("bad_input")) return;
  static const struct {
    const char *opt, *val, *says;
  } cases[] = {
      {"--inject", "delay 10us at=host:1", "fq qdisc"},
      {"--inject", "drop p=1% at=host:9", "host:9 does not exist"},
      {"--inject", "drop p=1% at=host:one", "at=host:one"},
      {"--inject", "ecn p=1% at=host:1", "ecn cannot run at a host"},
      {"--inject", "pause prio=3 quanta=100 at=host:1", "link=RATE"},
      {"--inject", "drop p=1% at=host:1 where=udp", "where=udp"},
      {"--inject", "drop psn=5,5,5,5,5,5,5,5,5 qp=3 at=host:1", "at most 8 targets"},
      {"--inject-at", "hosts:1", "--inject-at: 'hosts:1'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {JCT_BINARY,
                    "run",
                    "--synth",
                    "ring",
                    "--ranks",
                    "4",
                    "--bytes",
                    "64KiB",
                    "--reps",
                    "1",
                    (char *)cases[i].opt,
                    (char *)cases[i].val,
                    "--inject",
                    "drop p=0",
                    NULL};
    if (!strcmp(cases[i].opt, "--inject")) argv[12] = NULL; /* only the case's */
    result_t r = run_cmd(argv, NULL, 30);
    ck_assert_msg(r.status == 2, "%s '%s': exit %d: %s", cases[i].opt, cases[i].val, r.status,
                  r.err);
    ck_assert_msg(strstr(r.err, cases[i].says), "%s '%s': %s", cases[i].opt, cases[i].val, r.err);
    ck_assert_uint_eq(count_lines(r.err), 1);
    result_free(&r);
  }
}
END_TEST

#else
/* Built without JCT_HOSTFAULT: at=host says "not supported in this build". */
START_TEST(not_built) {
  char *argv[] = {JCT_BINARY, "run",     "--synth", "ring",     "--ranks",
                  "4",        "--bytes", "64KiB",   "--inject", "drop p=1% at=host:1",
                  NULL};
  result_t r = run_cmd(argv, NULL, 30);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "not supported in this build"));
  result_free(&r);
}
END_TEST
#endif

Suite *hostfault_suite(void) {
#ifndef JCT_HAVE_HOSTFAULT
  Suite *off = suite_create("hostfault");
  TCase *t = tcase_create("off");
  tcase_add_test(t, not_built);
  tcase_add_test(t, delay_at_host_dilated);
  tcase_add_test(t, nak_times_as_spec_times);
  tcase_add_test(t, window_at_host_dilated);
  suite_add_tcase(off, t);
  return off;
#else
  Suite *s = suite_create("hostfault");
  TCase *k = tcase_create("kernel");
  tcase_set_timeout(k, 60);
  tcase_add_test(k, every_nth_and_uncounted);
  tcase_add_test(k, random_models_rates_and_seed);
  tcase_add_test(k, targets_as_the_switch);
  tcase_add_test(k, positions_as_the_switch);
  tcase_add_test(k, delay_stamps_departure);
  tcase_add_test(k, nak_hold_keeps_its_flow);
  tcase_add_test(k, delay_at_host_dilated);
  tcase_add_test(k, nak_times_as_spec_times);
  tcase_add_test(k, window_at_host_dilated);
  suite_add_tcase(s, k);
  TCase *c = tcase_create("cleanup");
  tcase_set_timeout(c, 60);
  tcase_add_test(c, veth_left_as_found);
  tcase_add_test(c, cut_both_ways);
  suite_add_tcase(s, c);
  TCase *kill = hostfault_kill_tcase(); /* check_hostfault_kill.c */
  if (kill) suite_add_tcase(s, kill);
  TCase *r = tcase_create("run");
  tcase_set_timeout(r, 300);
  tcase_add_test(r, targeted_drop_host_as_switch);
  tcase_add_test(r, position_drop_host_as_switch);
  tcase_add_test(r, random_drop_host_as_switch);
  tcase_add_test(r, window_dilated_host_as_switch);
  tcase_add_test(r, pause_storm_from_host);
  tcase_add_test(r, flap_from_host);
  tcase_add_test(r, bad_input);
  tcase_add_test(r, killed_leaves_no_program);
  suite_add_tcase(s, r);
  return s;
#endif
}
