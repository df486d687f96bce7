/* The stall injector (injectors/stall.c): where it asks for its sender's
 * transmit stall, through the chain's stall hook on a real switch (a fake
 * host), in faulted and baseline repetitions; and the lab's VM stalls
 * (harness/orch/vm_stalls.h) on a real clock with a fake freeze. No VM. */
#include <check.h>
#include <string.h>
#include <uv.h>

#include "craft.h"
#include "harness/fabric/chain.h"
#include "harness/orch/vm_stalls.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/switch.h"
#include "suites.h"

static jct_injector_t *mk(const char *spec) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  ck_assert_msg(jct_injector_new(&inj, spec, 1, 0, err, sizeof err) == 0, "%s: %s", spec, err);
  jct_injector_start(inj, 0);
  return inj;
}

/* Offer the frame at ingress of port 0; the stall it asked for (0: none). */
static uint64_t offer(jct_injector_t *inj, uint8_t *buf, size_t len) {
  jct_frame_t f = {.data = buf, .len = len, .cap = len, .port = 0, .out = false};
  ck_assert_int_eq(jct_injector_process(inj, &f, 0), JCT_PASS); /* the frame always passes */
  return f.stall_ns;
}

/* pkt=1:1,2:0 with a time each: the first transmissions at those positions
 * ask for their stalls, once; re-sent copies, ACKs and other QPs never do;
 * a repetition counts anew. */
START_TEST(stall_at_positions) {
  jct_injector_t *inj = mk("stall pkt=1:1,2:0 for=20ms,5ms qp=0x11");
  ck_assert(!inj->out);      /* where the sender's frames enter */
  ck_assert(inj->targeted);  /* acting on nothing is an invalid case */
  ck_assert(!inj->baseline); /* a fault unless baseline=yes */
  uint8_t buf[256];
  for (int rep = 0; rep < 2; rep++) {
    jct_injector_start(inj, 0);
    uint32_t base = rep ? 9000 : 500;
    /* messages 0..2, then message 1 again (go-back-N), another QP between */
    uint32_t seq[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 3, 4, 5};
    uint64_t got[12];
    for (int i = 0; i < 12; i++) {
      size_t n = craft_write_frame(buf, sizeof buf, NULL, NULL, 0x11, base + seq[i], seq[i]);
      got[i] = offer(inj, buf, n);
      n = craft_write_frame(buf, sizeof buf, NULL, NULL, 0x22, base + seq[i], seq[i]);
      ck_assert_uint_eq(offer(inj, buf, n), 0);
    }
    for (int i = 0; i < 12; i++)
      ck_assert_uint_eq(got[i], i == 4 ? 20000000u : i == 6 ? 5000000u : 0u);
    ck_assert_uint_eq(inj->stats.stalls, 2);
    ck_assert_uint_eq(inj->stats.stall_ns, 25000000u);
    ck_assert_uint_eq(inj->stats.dropped + inj->stats.held, 0);
  }
  jct_injector_free(inj);

  /* qp-order=1 and one time for both: the second QP whose requests pass. */
  inj = mk("stall pkt=0:1,0:2 for=1ms qp-order=1 baseline=yes");
  ck_assert(inj->baseline);
  uint64_t total = 0;
  for (uint32_t k = 0; k < 3; k++) {
    size_t n = craft_write_frame(buf, sizeof buf, NULL, NULL, 0x22, 700 + k, k);
    ck_assert_uint_eq(offer(inj, buf, n), 0);
    n = craft_write_frame(buf, sizeof buf, NULL, NULL, 0x11, 40 + k, k);
    uint64_t s = offer(inj, buf, n);
    ck_assert_uint_eq(s, k ? 1000000u : 0u);
    total += s;
  }
  ck_assert_uint_eq(total, 2000000u);
  jct_injector_free(inj);
}
END_TEST

static void expect_error(const char *spec, const char *word) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  ck_assert_msg(jct_injector_new(&inj, spec, 1, 0, err, sizeof err) == JCT_EINVAL, "%s: accepted",
                spec);
  ck_assert_ptr_null(inj);
  ck_assert_msg(strstr(err, word), "%s: \"%s\" does not name %s", spec, err, word);
}

START_TEST(stall_bad_specs) {
  expect_error("stall for=1ms", "pkt=");
  expect_error("stall pkt=1:2", "for=");
  expect_error("stall pkt=1 for=1ms", "pkt=1");
  expect_error("stall pkt=1:2 for=0", "for=0");
  expect_error("stall pkt=1:2 for=1parsec", "for=1parsec");
  expect_error("stall pkt=1:2,3:4,5:6 for=1ms,2ms", "for=1ms,2ms");
  expect_error("stall pkt=1:2 for=1ms dir=out", "dir=out");
  expect_error("stall pkt=1:2 for=1ms qp=3 qp-order=1", "qp-order=1");
  expect_error("stall pkt=1:2 for=1ms qp-order=16", "qp-order=16");
  expect_error("stall pkt=1:2 for=1ms baseline=maybe", "baseline=maybe");
  expect_error("stall pkt=1:2 for=1ms at=host:1", "stall cannot run at a host");
  expect_error("stall pkt=1:2 for=1ms p=0.5", "p=0.5");
}
END_TEST

typedef struct {
  uint32_t n, rank[8];
  uint64_t stall_ns[8], at_ns[8];
} asked_t;

static int fake_host(void *arg, uint32_t rank, uint64_t stall_ns, uint64_t now_ns) {
  asked_t *a = arg;
  ck_assert_uint_lt(a->n, 8);
  a->rank[a->n] = rank, a->stall_ns[a->n] = stall_ns, a->at_ns[a->n++] = now_ns;
  return 0;
}

static void drain(jct_switch_t *sw) {
  for (uint64_t t; (t = jct_switch_next_deadline_ns(sw)) != UINT64_MAX;)
    jct_switch_poll(sw, t, NULL, NULL);
}

/* Through a chain on a switch: the frame that passes position 0:1 of rank
 * 1's QP asks for rank 1's stall (the port it entered by), once (an
 * injector after it that does not select the frame asks nothing), in a
 * faulted repetition; in a baseline only with baseline=yes, while a drop
 * beside it stays off the path there; never before a repetition started
 * (the QPs' setup). */
START_TEST(stall_through_the_chain) {
  for (int with_baseline = 0; with_baseline < 2; with_baseline++) {
    const char *specs[] = {with_baseline ? "stall pkt=0:1 for=3ms baseline=yes"
                                         : "stall pkt=0:1 for=3ms",
                           "drop pkt=0:2 dir=in", "drop p=1 dir=in where=\"udp port 9\""};
    char err[512] = "";
    jct__chain_t *chain = NULL;
    ck_assert_msg(jct__chain_new(&chain, specs, 3, 1, err, sizeof err) == 0, "%s", err);
    asked_t asked = {0};
    jct__chain_set_stall_fn(chain, fake_host, &asked);
    jct_switch_config_t cfg;
    jct_switch_config_default(&cfg, 2, 1000000000);
    jct_switch_t *sw = NULL;
    ck_assert_msg(jct_switch_new(&sw, &cfg, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(jct__chain_attach(chain, sw, 2, NULL, NULL, 0), 0);
    uint8_t buf[256];
    for (uint32_t k = 0; k < 3; k++) { /* before any repetition */
      size_t n = craft_write_frame(buf, sizeof buf, "198.18.0.2", "198.18.0.1", 0x11, 30 + k, k);
      jct_switch_rx(sw, 1, buf, n, 500 + k);
      drain(sw);
    }
    ck_assert_uint_eq(asked.n, 0);
    for (int faulted = 1; faulted >= 0; faulted--) {
      ck_assert_int_eq(jct__chain_set_enabled(chain, faulted), 0);
      jct__chain_start(chain, 1000);
      asked.n = 0;
      for (uint32_t k = 0; k < 3; k++) {
        size_t n = craft_write_frame(buf, sizeof buf, "198.18.0.2", "198.18.0.1", 0x11, 60 + k, k);
        jct_switch_rx(sw, 1, buf, n, 2000 + k);
        drain(sw);
      }
      const jct_injector_t *st = jct__chain_get(chain, 0), *drop = jct__chain_get(chain, 1);
      bool acts = faulted || with_baseline;
      ck_assert_uint_eq(asked.n, acts ? 1 : 0);
      if (acts) {
        ck_assert_uint_eq(asked.rank[0], 1);
        ck_assert_uint_eq(asked.stall_ns[0], 3000000);
        /* when packet 0:1 (rx at 2001) had entered, its serialization on the way in */
        ck_assert_uint_ge(asked.at_ns[0], 2001);
        ck_assert_uint_lt(asked.at_ns[0], 2001 + 10000);
      }
      ck_assert_uint_eq(st->stats.stalls, acts ? 1 : 0);
      ck_assert_uint_eq(drop->stats.dropped, faulted ? 1 : 0); /* a fault: never a baseline's */
    }
    jct_switch_free(sw);
    jct__chain_free(chain);
  }
}
END_TEST

/* ---- the lab's VM stalls, with a fake freeze ---------------------------------- */

typedef struct {
  bool frozen[2];
  uint32_t stops, conts;
  uint64_t stop_ns, cont_ns;
} vms_t;

static int fake_freeze(void *arg, uint32_t rank, bool frozen) {
  vms_t *v = arg;
  ck_assert_uint_lt(rank, 2);
  ck_assert_int_ne(v->frozen[rank], frozen); /* never stopped twice, never continued unstopped */
  v->frozen[rank] = frozen;
  if (frozen)
    v->stops++, v->stop_ns = jct_now_ns();
  else
    v->conts++, v->cont_ns = jct_now_ns();
  return 0;
}

static bool all_going(const vms_t *v) {
  return !v->frozen[0] && !v->frozen[1];
}

/* A stall stops the VM at once and its timer has it go on after the time;
 * a second stall while stopped extends it; thaw_all and free never leave a
 * VM stopped; the stalls kept are what the clock saw. */
START_TEST(vm_stalls_stop_and_go_on) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  jct_clock_t clock;
  ck_assert_int_eq(jct_clock_init(&clock, &loop), 0);
  vms_t v = {0};
  jct__vm_stalls_t *x;
  ck_assert_int_eq(jct__vm_stalls_new(&x, &clock, 2, fake_freeze, &v), 0);
  jct__vm_stalls_begin(x);
  uint64_t t0 = jct_now_ns();
  ck_assert_int_eq(jct__vm_stalls_stall(x, 1, 20000000, t0), 0);
  ck_assert(v.frozen[1]);
  ck_assert_int_eq(jct__vm_stalls_stall(x, 1, 30000000, t0 + 5000000), 0); /* ends 35 ms on */
  ck_assert_uint_eq(v.stops, 1);
  ck_assert_int_eq(jct__vm_stalls_stall(x, 2, 1000, t0), JCT_EINVAL);
  while (!all_going(&v))
    uv_run(&loop, UV_RUN_ONCE);
  ck_assert_uint_eq(v.conts, 1);
  ck_assert_uint_ge(v.cont_ns - t0, 35000000);
  ck_assert_uint_lt(v.cont_ns - t0, 35000000 + 20000000); /* a loaded machine's lateness */
  const uint64_t *at, *len;
  uint32_t n;
  jct__vm_stalls_of(x, 1, &at, &len, &n);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(at[0], t0);
  ck_assert_uint_ge(len[0], 35000000);
  ck_assert_uint_le(len[0], v.cont_ns - t0);
  jct__vm_stalls_of(x, 0, &at, &len, &n);
  ck_assert_uint_eq(n, 0);
  /* Cut short by a repetition's end, then by free: never left stopped. */
  ck_assert_int_eq(jct__vm_stalls_stall(x, 0, 1000000000, jct_now_ns()), 0);
  jct__vm_stalls_thaw_all(x, jct_now_ns());
  ck_assert(all_going(&v));
  jct__vm_stalls_of(x, 0, &at, &len, &n);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_lt(len[0], 1000000000);
  jct__vm_stalls_begin(x); /* the next repetition forgets them */
  jct__vm_stalls_of(x, 0, &at, &len, &n);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(jct__vm_stalls_stall(x, 0, 1000000000, jct_now_ns()), 0);
  jct__vm_stalls_free(x);
  ck_assert(all_going(&v));
  ck_assert_uint_eq(v.stops, 3);
  ck_assert_uint_eq(v.conts, 3);
  jct_clock_close(&clock, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/* 4.096 us * 2^e, the IBA's local ACK timeout, in ns. */
static double timer_ns(uint8_t e) {
  return 4096.0 * (double)(1ull << e);
}

/* The lab's peers' clear-to-send timer outlasts twice the longest stall it
 * holds, in the VMs' time, and is the first exponent from the QPs' own
 * that does; none held, or no timer, leaves the QPs' own (0). The longest
 * stall is the stall injector's own, whichever target has it. */
START_TEST(vm_stalls_cts_timer_outlasts_the_stalls) {
  jct_injector_t *inj = mk("stall pkt=0:0,1:1,2:2 for=4820us,91614us,5ms");
  ck_assert_uint_eq(inj->stall_max_ns, 91614000);
  jct_injector_free(inj);
  const struct {
    uint8_t timeout;
    uint64_t stall_ns;
    double tdf;
  } rows[] = {{16, 91614000, 4},
              {14, 91614000, 1},
              {14, 1000000, 1},
              {20, 10000000, 16},
              {5, 1000000000, 64}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    uint8_t e = jct__vm_stalls_cts_timeout(rows[i].timeout, rows[i].stall_ns, rows[i].tdf);
    double outlast_ns = 2.0 * (double)rows[i].stall_ns * rows[i].tdf;
    ck_assert_uint_ge(e, rows[i].timeout);
    ck_assert_msg(timer_ns(e) > outlast_ns, "row %zu: 2^%u", i, e);
    ck_assert_msg(e == rows[i].timeout || timer_ns(e - 1) <= outlast_ns, "row %zu: 2^%u", i, e);
  }
  ck_assert_uint_eq(jct__vm_stalls_cts_timeout(16, 0, 4), 0);               /* none held */
  ck_assert_uint_eq(jct__vm_stalls_cts_timeout(0, 91614000, 4), 0);         /* no timer */
  ck_assert_uint_eq(jct__vm_stalls_cts_timeout(14, UINT64_MAX / 4, 1), 31); /* the IBA's last */
}
END_TEST

/* A run's clear-to-send timer: in the lab, past its chain's longest stall
 * (over every stall injector and target), from the QPs' timer as rxe gets
 * it (dilated: t + log2 F); 0 with no stall, on uroce, or with agents. */
START_TEST(vm_stalls_run_cts_timer) {
  const char *specs[] = {"stall pkt=0:1 for=30ms baseline=yes", "drop p=0.01",
                         "stall pkt=1:0,2:0 for=5ms,92ms"};
  char err[256] = "";
  jct__chain_t *c, *none;
  ck_assert_msg(jct__chain_new(&c, specs, 3, 1, err, sizeof err) == 0, "%s", err);
  ck_assert_msg(jct__chain_new(&none, specs + 1, 1, 1, err, sizeof err) == 0, "%s", err);
  jct_run_opts_t o = {
      .transport = JCT_TRANSPORT_VERBS, .lab_ranks = 2, .rate_bps = 400000000ull, .timeout = 14};
  jct_run_dilation_t d;
  jct_run_dilation(&o, &d); /* x4: rxe's timer 2^16 */
  ck_assert_uint_eq(d.verbs_timeout_exp, 16);
  uint8_t e = jct__vm_stalls_run_cts_timeout(&o, &d, c);
  ck_assert_uint_eq(e, jct__vm_stalls_cts_timeout(16, 92000000, d.tdf));
  ck_assert_uint_gt(e, 16);
  ck_assert_uint_eq(jct__vm_stalls_run_cts_timeout(&o, &d, none), 0);
  o.agents = "h0:1,h1:1";
  ck_assert_uint_eq(jct__vm_stalls_run_cts_timeout(&o, &d, c), 0);
  o.agents = NULL;
  o.transport = JCT_TRANSPORT_UROCE;
  ck_assert_uint_eq(jct__vm_stalls_run_cts_timeout(&o, &d, c), 0);
  jct__chain_free(c);
  jct__chain_free(none);
}
END_TEST

Suite *stall_suite(void) {
  Suite *s = suite_create("stall");
  TCase *core = tcase_create("core");
  tcase_add_test(core, stall_at_positions);
  tcase_add_test(core, stall_through_the_chain);
  tcase_add_test(core, vm_stalls_stop_and_go_on);
  tcase_add_test(core, vm_stalls_cts_timer_outlasts_the_stalls);
  tcase_add_test(core, vm_stalls_run_cts_timer);
  suite_add_tcase(s, core);
  TCase *limits = tcase_create("limits");
  tcase_add_test(limits, stall_bad_specs);
  suite_add_tcase(s, limits);
  return s;
}
