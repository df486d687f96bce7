/* The profile of a captured system (profile.h): crafted captures whose every
 * figure is worked out by hand from profile.h's definitions (MTU, spacing
 * per link, each loss's hole, NAK and retransmission, go-back depth,
 * timeouts, ACK coalescing); the shipped rxe capture against what tshark's
 * fields give (README, "jctlab inspect"); the profile in a schedule's JSON
 * (written, read back, edited by hand, refused when wrong) and in
 * `jctlab inspect --json` and `jctlab schedule`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "craft.h"
#include "harness/report/inspect_out.h"
#include "jctlab/error.h"
#include "jctlab/infer.h"
#include "jctlab/inspect.h"
#include "jctlab/profile.h"
#include "jctlab/schedule.h"
#include "suites.h"
#include "testkit.h"

#define SHIPPED JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap"
#define WIRE_OVERHEAD 24u /* preamble, FCS, gap: what each rate sample adds to the frame */

static craft_pcap_t *cap;

static void put(uint64_t ts_ns, const char *src, const char *dst, uint8_t opcode, uint32_t qp,
                uint32_t psn, uint32_t payload) {
  uint8_t f[2048];
  craft_roce_t c = {.src = src, .dst = dst, .payload_bytes = payload};
  c.h.bth.opcode = opcode;
  c.h.bth.dest_qp = qp;
  c.h.bth.psn = psn;
  c.h.bth.pkey = 0xffff;
  c.h.reth.dma_len_bytes = 5 * 1024;
  c.h.aeth.syndrome = 0x1f; /* ACK */
  size_t n = craft_roce(f, sizeof f, &c);
  ck_assert_uint_gt(n, 0);
  craft_pcap_add(cap, ts_ns, f, n, n);
}

static void ack(uint64_t ts_ns, const char *src, const char *dst, uint32_t qp, uint32_t psn,
                uint8_t syndrome) {
  uint8_t f[256];
  craft_roce_t c = {.src = src, .dst = dst};
  c.h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  c.h.bth.dest_qp = qp;
  c.h.bth.psn = psn;
  c.h.bth.pkey = 0xffff;
  c.h.aeth.syndrome = syndrome;
  size_t n = craft_roce(f, sizeof f, &c);
  ck_assert_uint_gt(n, 0);
  craft_pcap_add(cap, ts_ns, f, n, n);
}

static char cap_path[512];

static void cap_open(void) {
  craft_tmpname(cap_path, sizeof cap_path, ".pcap");
  cap = craft_pcap_open(cap_path, true, 1);
}

/* Close the capture, inspect it, return its profile (*ins_out kept when
 * asked for, else freed). */
static jct_profile_t *cap_profile(jct_inspect_t **ins_out) {
  craft_pcap_close(cap);
  char err[256];
  jct_inspect_t *ins;
  int rc = jct_inspect_path(cap_path, NULL, &ins, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  jct_profile_t *p;
  ck_assert_int_eq(jct_inspect_profile(ins, &p), 0);
  if (ins_out)
    *ins_out = ins;
  else
    jct_inspect_free(ins);
  unlink(cap_path);
  return p;
}

static void expect_fig(const jct_figure_t *f, uint64_t n, uint64_t value, uint64_t median,
                       uint64_t p10, uint64_t p90, uint64_t min, uint64_t max) {
  ck_assert(f->set);
  ck_assert_uint_eq(f->n, n);
  ck_assert_uint_eq(f->value, value);
  ck_assert_uint_eq(f->median, median);
  ck_assert_uint_eq(f->p10, p10);
  ck_assert_uint_eq(f->p90, p90);
  ck_assert_uint_eq(f->min, min);
  ck_assert_uint_eq(f->max, max);
}

static void expect_unset(const jct_figure_t *f) {
  ck_assert(!f->set);
  ck_assert_uint_eq(f->n, 0);
}

/* Flow i's losses re-sent and their summed latency (jct_inspect_flow_losses). */
static void expect_losses(const jct_inspect_t *ins, size_t i, uint64_t n, uint64_t ns) {
  uint64_t got_n, got_ns;
  jct_inspect_flow_losses(ins, i, &got_n, &got_ns);
  ck_assert_uint_eq(got_n, n);
  ck_assert_uint_eq(got_ns, ns);
}

#define A "198.18.0.1"
#define B "198.18.0.2"

/* Two QPs from A to B interleaved, one packet every 10 us on the link (each
 * QP's own every 20 us): the rate is the link's, 1106 wire bytes per
 * 10 us. B to A: an RDMA WRITE at one packet per 20 us. */
/* A sender that stalls inside a message: three MIDDLEs 10 us apart, then
 * the LAST 40 us later. The mode is the burst's rate; the mean, the rate
 * the link sustained: 4 packets' bytes over 70 us. */
START_TEST(sustained_rate_is_the_mean) {
  cap_open();
  const uint64_t t[5] = {0, 10000, 20000, 30000, 70000};
  for (uint32_t k = 0; k < 5; k++)
    put(1000000 + t[k], A, B,
        k == 0 ? JCT_OP_RC_SEND_FIRST : k == 4 ? JCT_OP_RC_SEND_LAST : JCT_OP_RC_SEND_MIDDLE, 5,
        100 + k, 1024);
  jct_profile_t *p = cap_profile(NULL);
  ck_assert_uint_eq(p->nlinks, 1);
  const jct_figure_t *r = &p->links[0].rate_bps;
  uint64_t wire = 1082 + WIRE_OVERHEAD;
  ck_assert_uint_eq(r->n, 4);
  ck_assert_uint_eq(r->value, 3 * wire * 8 * 1000000000ull / 30000);
  ck_assert_uint_eq(r->mean, (uint64_t)llround(4.0 * (double)wire * 8e9 / 70000.0));
  ck_assert_uint_lt(r->mean, r->value);
  jct_profile_free(p);
}
END_TEST

START_TEST(mtu_rate_and_acks) {
  cap_open();
  for (uint32_t m = 0; m < 3; m++) {
    uint64_t base = 1000000ull * (m + 1);
    for (uint32_t k = 0; k < 8; k++) {
      uint8_t op = k == 0   ? JCT_OP_RC_SEND_FIRST
                   : k == 7 ? JCT_OP_RC_SEND_LAST
                            : JCT_OP_RC_SEND_MIDDLE;
      put(base + 20000 * k, A, B, op, 5, 100 + 8 * m + k, 1024);
      put(base + 20000 * k + 10000, A, B, op, 6, 300 + 8 * m + k, 1024);
    }
    ack(base + 200000, B, A, 0x105, 107 + 8 * m, 0x1f);
    ack(base + 210000, B, A, 0x106, 307 + 8 * m, 0x1f);
  }
  put(5000000, B, A, JCT_OP_RC_RDMA_WRITE_FIRST, 9, 500, 1024);
  for (uint32_t k = 1; k < 5; k++)
    put(5000000 + 20000 * k, B, A, k == 4 ? JCT_OP_RC_RDMA_WRITE_LAST : JCT_OP_RC_RDMA_WRITE_MIDDLE,
        9, 500 + k, 1024);
  ack(5200000, A, B, 0x109, 504, 0x1f);
  jct_profile_t *p = cap_profile(NULL);

  /* FIRST and MIDDLE: 7 of each 8-packet SEND (6 of them), 4 of the WRITE. */
  expect_fig(&p->mtu_bytes, 7 * 6 + 4, 1024, 1024, 1024, 1024, 1024, 1024);
  ck_assert_uint_eq(p->nlinks, 2);
  const jct_profile_link_t *ab = &p->links[0], *ba = &p->links[1];
  ck_assert_str_eq(ab->src, A);
  ck_assert_str_eq(ab->dst, B);
  ck_assert_int_eq(ab->src_rank, -1);
  ck_assert_str_eq(ba->src, B);
  /* A SEND MIDDLE of 1024 bytes is a 1082-byte frame. */
  uint64_t r_ab = (1082 + WIRE_OVERHEAD) * 8 * 1000000000ull / 10000;
  ck_assert_uint_eq(r_ab, 884800000);
  expect_fig(&ab->rate_bps, 14 * 3, r_ab, r_ab, r_ab, r_ab, r_ab, r_ab);
  ck_assert_uint_eq(ab->rate_mode_n, 42);
  uint64_t r_ba = (1082 + WIRE_OVERHEAD) * 8 * 1000000000ull / 20000;
  expect_fig(&ba->rate_bps, 4, r_ba, r_ba, r_ba, r_ba, r_ba, r_ba);
  /* One ACK per message: 8 PSNs each, 5 for the WRITE; mean 53 / 7, rounded. */
  expect_fig(&p->packets_per_ack, 7, 8, 8, 5, 8, 5, 8);
  ck_assert_uint_eq(p->packets_per_ack.mean, 8);
  ck_assert_uint_eq(ab->rate_bps.mean, r_ab); /* every sample at the one rate */
  expect_unset(&p->hole_to_nak_ns);
  expect_unset(&p->nak_to_resend_ns);
  expect_unset(&p->loss_recovery_ns);
  expect_unset(&p->go_back_psns);
  expect_unset(&p->go_back_after_nak_psns);
  expect_unset(&p->timeout_ns);
  ck_assert_int_eq(p->timeout_exp, -1);
  jct_profile_free(p);
}
END_TEST

#define C "198.18.0.3"
#define D "198.18.0.4"

static struct {
  jct_event_t ev[16];
  size_t n;
} resent;

static void on_event(const jct_event_t *ev, void *arg) {
  (void)arg;
  if (ev->type == JCT_EV_HOLE_RESENT && resent.n < 16) resent.ev[resent.n++] = *ev;
}

/* Two losses and two timeouts on one QP (SEND ONLY packets, 1 us apart):
 * - PSN 103 lost before the capture point: hole at 14 us (PSN 104), NAK at
 *   16.5 us with 106 the highest, re-sent at 21 us with 110 the highest;
 * - PSN 112 lost after it: first known from its NAK at 32 us (113 the
 *   highest), re-sent at 34 us with 114 the highest;
 * - the requester idle after 116 (sent at 38 us, 115 ACKed at 38.5 us)
 *   until its timer re-sends 116: 4.096 us x 2^10 and 1 us later; then the
 *   same for 117, 3 us later. */
START_TEST(losses_go_back_and_timeouts) {
  cap_open();
  for (uint32_t psn = 100; psn <= 102; psn++)
    put(10000 + 1000 * (psn - 100), C, D, JCT_OP_RC_SEND_ONLY, 7, psn, 256);
  ack(12500, D, C, 0x107, 101, 0x1f);
  for (uint32_t psn = 104; psn <= 110; psn++) {
    put(10000 + 1000 * (psn - 100), C, D, JCT_OP_RC_SEND_ONLY, 7, psn, 256);
    if (psn == 106) ack(16500, D, C, 0x107, 103, 0x60);
  }
  for (uint32_t psn = 103; psn <= 110; psn++) /* go-back-N from 103 */
    put(21000 + 1000 * (psn - 103), C, D, JCT_OP_RC_SEND_ONLY, 7, psn, 256);
  ack(28500, D, C, 0x107, 110, 0x1f);
  put(29000, C, D, JCT_OP_RC_SEND_ONLY, 7, 111, 256);
  put(30000, C, D, JCT_OP_RC_SEND_ONLY, 7, 112, 256);
  put(31000, C, D, JCT_OP_RC_SEND_ONLY, 7, 113, 256);
  ack(32000, D, C, 0x107, 112, 0x60);
  put(33000, C, D, JCT_OP_RC_SEND_ONLY, 7, 114, 256);
  for (uint32_t psn = 112; psn <= 116; psn++)
    put(34000 + 1000 * (psn - 112), C, D, JCT_OP_RC_SEND_ONLY, 7, psn, 256);
  ack(38500, D, C, 0x107, 115, 0x1f);
  uint64_t t1 = 38500 + (4096ull << 10) + 1000;
  put(t1, C, D, JCT_OP_RC_SEND_ONLY, 7, 116, 256); /* timeout */
  ack(t1 + 500, D, C, 0x107, 116, 0x1f);
  put(t1 + 1000, C, D, JCT_OP_RC_SEND_ONLY, 7, 117, 256);
  uint64_t t2 = t1 + 1000 + (4096ull << 10) + 3000;
  put(t2, C, D, JCT_OP_RC_SEND_ONLY, 7, 117, 256); /* timeout */
  craft_pcap_close(cap);

  memset(&resent, 0, sizeof resent);
  jct_inspect_opts_t o = {.on_event = on_event};
  char err[256];
  jct_inspect_t *ins;
  ck_assert_int_eq(jct_inspect_path(cap_path, &o, &ins, err, sizeof err), 0);
  unlink(cap_path);
  jct_profile_t *p;
  ck_assert_int_eq(jct_inspect_profile(ins, &p), 0);

  expect_fig(&p->hole_to_nak_ns, 1, 2500, 2500, 2500, 2500, 2500, 2500);
  expect_fig(&p->nak_to_resend_ns, 2, 2000, 2000, 2000, 4500, 2000, 4500);
  expect_fig(&p->loss_recovery_ns, 2, 2000, 2000, 2000, 7000, 2000, 7000);
  expect_fig(&p->go_back_psns, 2, 2, 2, 2, 7, 2, 7); /* 110 - 103, 114 - 112 */
  expect_fig(&p->go_back_after_nak_psns, 2, 1, 1, 1, 4, 1, 4);
  uint64_t idle1 = t1 - 38500, idle2 = t2 - (t1 + 1000);
  expect_fig(&p->timeout_ns, 2, 4096ull << 10, idle1, idle1, idle2, idle1, idle2);
  ck_assert_int_eq(p->timeout_exp, 10);
  /* ACKs: 100-101, then (after NAKs) 103-110, 112-115, 116. */
  expect_fig(&p->packets_per_ack, 4, 2, 2, 1, 8, 1, 8);
  expect_unset(&p->mtu_bytes);     /* ONLY packets: no full one, */
  ck_assert_uint_eq(p->nlinks, 0); /* none continuing a message */
  jct_profile_free(p);

  /* Item 6 of issue 11: each loss's latency, in the stats and the timeline. */
  const jct_flow_stats_t *s = &jct_inspect_flow(ins, 0)->st;
  ck_assert_uint_eq(s->rewinds, 2);
  ck_assert_uint_eq(s->timeouts, 2);
  expect_losses(ins, 0, 2, 7000 + 2000);
  ck_assert_uint_eq(jct_inspect_totals(ins)->loss_recovery_ns, 9000);
  ck_assert_uint_eq(resent.n, 2);
  ck_assert_uint_eq(resent.ev[0].psn, 103);
  ck_assert_uint_eq(resent.ev[0].ts_ns, 21000);
  ck_assert_uint_eq(resent.ev[0].dur_ns, 7000);
  ck_assert_uint_eq(resent.ev[0].value, 4500);
  ck_assert_uint_eq(resent.ev[1].psn, 112);
  ck_assert_uint_eq(resent.ev[1].dur_ns, 2000);
  ck_assert_uint_eq(resent.ev[1].value, 2000);
  jct_inspect_free(ins);
}
END_TEST

#define E "198.18.0.5"
#define F "198.18.0.6"

/* Holes that are not the first PSN of a gap: a gap of two (202, 203), the
 * re-send of 203 lost again (skipped in the go-back, NAKed later: timed
 * from its first hole), and a go-back overtaken by new PSNs (208's re-send
 * lost after a timeout). */
START_TEST(gap_of_two_and_lost_resends) {
  cap_open();
  put(1000, E, F, JCT_OP_RC_SEND_ONLY, 8, 200, 64);
  put(2000, E, F, JCT_OP_RC_SEND_ONLY, 8, 201, 64);
  put(5000, E, F, JCT_OP_RC_SEND_ONLY, 8, 204, 64); /* 202, 203 missing */
  put(6000, E, F, JCT_OP_RC_SEND_ONLY, 8, 205, 64);
  ack(6500, F, E, 0x108, 202, 0x60);
  put(7000, E, F, JCT_OP_RC_SEND_ONLY, 8, 202, 64);
  put(9000, E, F, JCT_OP_RC_SEND_ONLY, 8, 204, 64); /* 203 lost again */
  put(10000, E, F, JCT_OP_RC_SEND_ONLY, 8, 205, 64);
  ack(10500, F, E, 0x108, 203, 0x60);
  for (uint32_t psn = 203; psn <= 208; psn++)
    put(11000 + 1000 * (psn - 203), E, F, JCT_OP_RC_SEND_ONLY, 8, psn, 64);
  put(20000, E, F, JCT_OP_RC_SEND_ONLY, 8, 207, 64); /* timeout */
  put(22000, E, F, JCT_OP_RC_SEND_ONLY, 8, 209, 64); /* 208's re-send lost */
  ack(22500, F, E, 0x108, 208, 0x60);
  put(23000, E, F, JCT_OP_RC_SEND_ONLY, 8, 208, 64);
  jct_inspect_t *ins;
  jct_profile_t *p = cap_profile(&ins);
  const jct_flow_stats_t *s = &jct_inspect_flow(ins, 0)->st;
  ck_assert_uint_eq(s->gaps, 1);
  ck_assert_uint_eq(s->gap_psns, 2);
  ck_assert_uint_eq(s->timeouts, 1);
  expect_losses(ins, 0, 3, 2000 + 6000 + 1000);
  expect_fig(&p->loss_recovery_ns, 3, 2000, 2000, 1000, 6000, 1000, 6000);
  expect_fig(&p->hole_to_nak_ns, 3, 1500, 1500, 500, 5500, 500, 5500);
  expect_fig(&p->nak_to_resend_ns, 3, 500, 500, 500, 500, 500, 500);
  expect_fig(&p->go_back_psns, 3, 2, 2, 1, 3, 1, 3);
  expect_fig(&p->go_back_after_nak_psns, 3, 0, 0, 0, 0, 0, 0);
  /* Idle from 208's first send (16 us) to the timer's re-send (20 us):
   * nearest 4.096 us x 2^0. */
  expect_fig(&p->timeout_ns, 1, 4096, 4000, 4000, 4000, 4000, 4000);
  ck_assert_int_eq(p->timeout_exp, 0);
  jct_profile_free(p);
  jct_inspect_free(ins);
}
END_TEST

START_TEST(timeout_exponent) {
  ck_assert_int_eq(jct_profile_timeout_exp(0), -1);
  ck_assert_uint_eq(jct_profile_timeout_ns(14), 67108864); /* 4.096 us x 2^14 */
  ck_assert_uint_eq(jct_profile_timeout_ns(-1), 0);
  ck_assert_uint_eq(jct_profile_timeout_ns(32), 0);
  for (int32_t n = 0; n <= 31; n++)
    ck_assert_int_eq(jct_profile_timeout_exp(jct_profile_timeout_ns(n)), n);
  ck_assert_int_eq(jct_profile_timeout_exp(1), 0);
  ck_assert_int_eq(jct_profile_timeout_exp(4096ull << 14), 14);
  ck_assert_int_eq(jct_profile_timeout_exp(67228000), 14); /* the shipped capture's */
  /* The boundary in log scale: 2^14.5 units. */
  ck_assert_int_eq(jct_profile_timeout_exp(94906265), 14);
  ck_assert_int_eq(jct_profile_timeout_exp(94906266 + 4096), 15);
  ck_assert_int_eq(jct_profile_timeout_exp(UINT64_MAX), 31);
}
END_TEST

/* The shipped capture (traces/README.md): the figures below were measured
 * by jctlab and by a separate reading of tshark's fields
 * (tshark -r traces/rxe-write-send-loss1pct.pcap -Y infiniband -T fields
 * -e frame.time_relative -e ip.src -e infiniband.bth.destqp
 * -e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.aeth.syndrome
 * -e frame.len, with the definitions of profile.h): they agree. */
/* 1-2-5 bins: each value in the bin whose start is the largest not above
 * it; 0 alone in bin 0; the last bin open-ended. */
START_TEST(spread_bins) {
  static const struct {
    uint64_t v, lo;
  } at[] = {{0, 0},
            {1, 1},
            {2, 2},
            {4, 2},
            {5, 5},
            {9, 5},
            {10, 10},
            {19, 10},
            {20, 20},
            {49, 20},
            {50, 50},
            {99, 50},
            {100, 100},
            {999999, 500000},
            {1000000, 1000000},
            {1999999, 1000000},
            {4999999999999999999ull, 2000000000000000000ull},
            {5000000000000000000ull, 5000000000000000000ull},
            {UINT64_MAX, 5000000000000000000ull}};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    unsigned k = jct_figure_bin(at[i].v);
    ck_assert_msg(jct_figure_bin_lo(k) == at[i].lo, "%llu: bin %u from %llu, not %llu",
                  (unsigned long long)at[i].v, k, (unsigned long long)jct_figure_bin_lo(k),
                  (unsigned long long)at[i].lo);
    ck_assert(at[i].v < jct_figure_bin_lo(k + 1) || k + 1 == JCT_FIGURE_BINS);
  }
  ck_assert_uint_eq(jct_figure_bin(UINT64_MAX), JCT_FIGURE_BINS - 1);
  ck_assert_uint_eq(jct_figure_bin_lo(JCT_FIGURE_BINS), UINT64_MAX);
  for (unsigned k = 1; k + 1 < JCT_FIGURE_BINS; k++) /* rising, each its own bin */
    ck_assert_uint_eq(jct_figure_bin(jct_figure_bin_lo(k)), k);
}
END_TEST

START_TEST(shipped_capture) {
  char err[256];
  memset(&resent, 0, sizeof resent);
  jct_inspect_opts_t o = {.on_event = on_event};
  jct_inspect_t *ins;
  ck_assert_int_eq(jct_inspect_path(JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap", &o, &ins,
                                    err, sizeof err),
                   0);
  jct_profile_t *p;
  ck_assert_int_eq(jct_inspect_profile(ins, &p), 0);
  /* ib_write_bw -m 1024: every FIRST and MIDDLE carries 1024 bytes. */
  expect_fig(&p->mtu_bytes, 2477, 1024, 1024, 1024, 1024, 1024, 1024);
  ck_assert_uint_eq(p->nlinks, 1);
  const jct_figure_t *r = &p->links[0].rate_bps;
  ck_assert_uint_eq(r->n, 2427);
  ck_assert_uint_eq(p->links[0].rate_mode_n, 527);
  ck_assert_uint_eq(r->value, 2949333333); /* 1106 bytes per 3 us: microsecond timestamps */
  expect_fig(&p->hole_to_nak_ns, 26, 467000, 467000, 353000, 7731000, 263000, 9336000);
  expect_fig(&p->nak_to_resend_ns, 25, 735000, 735000, 401000, 75138000, 313000, 84068000);
  expect_fig(&p->loss_recovery_ns, 33, 14128000, 14128000, 933000, 77001000, 718000, 90983000);
  /* Its 33 recoveries in three groups (`jctlab inspect --timeline`, hole_resent): 16 within 1.4
   * ms, 7 at 14.1-22.6 ms, 10 at 50.5-91.0 ms; the median, the late group's first. */
  static const struct {
    uint64_t from;
    uint64_t n;
  } lr[] = {{500000, 7}, {1000000, 9}, {10000000, 6}, {20000000, 1}, {50000000, 10}};
  uint64_t in_bins = 0;
  for (unsigned k = 0; k < JCT_FIGURE_BINS; k++)
    in_bins += p->loss_recovery_ns.spread[k];
  ck_assert_uint_eq(in_bins, 33);
  for (size_t i = 0; i < sizeof lr / sizeof lr[0]; i++)
    ck_assert_uint_eq(p->loss_recovery_ns.spread[jct_figure_bin(lr[i].from)], lr[i].n);
  ck_assert_uint_eq(p->go_back_psns.spread[jct_figure_bin(100)], 3); /* 115 and deeper */
  ck_assert_uint_eq(p->go_back_after_nak_psns.spread[0], 4);         /* none sent after it */
  ck_assert_uint_eq(p->mtu_bytes.spread[jct_figure_bin(1024)], 2477);
  for (unsigned k = 0; k < JCT_FIGURE_BINS; k++) /* rates keep rate bins instead */
    ck_assert_uint_eq(p->links[0].rate_bps.spread[k], 0);
  /* Depth to where the requester was: frames 554 and 938 cut go-backs
   * short (at PSNs 9768890 and 9769084), 8 and 5 past the NAKed PSN, not
   * the highest's 53 and 99 (tshark's fields: the PSN sent before each). */
  expect_fig(&p->go_back_psns, 25, 13, 13, 5, 115, 4, 128);
  expect_fig(&p->go_back_after_nak_psns, 25, 2, 2, 0, 51, 0, 125);
  expect_fig(&p->timeout_ns, 1, 67108864, 67228000, 67228000, 67228000, 67228000, 67228000);
  ck_assert_int_eq(p->timeout_exp, 14);
  expect_fig(&p->packets_per_ack, 96, 4, 4, 4, 32, 1, 32);
  jct_profile_free(p);
  /* The first loss, the one issue 11 describes: PSN 9768683, hole at frame
   * 54, NAK 7.731 ms later, re-sent 6.397 ms after that. */
  ck_assert_uint_eq(resent.ev[0].psn, 9768683);
  ck_assert_uint_eq(resent.ev[0].frame_no, 71);
  ck_assert_uint_eq(resent.ev[0].dur_ns, 14128000);
  ck_assert_uint_eq(resent.ev[0].value, 6397000);
  ck_assert_uint_eq(jct_inspect_totals(ins)->losses_recovered, 33);
  ck_assert_uint_eq(jct_inspect_totals(ins)->loss_recovery_ns, 843630000);
  jct_inspect_free(ins);
}
END_TEST

/* jctlab's own lossless ring (traces/README.md): 100 Mbit/s links, MTU 4096. */
START_TEST(ring8_links) {
  char err[256];
  jct_inspect_t *ins;
  ck_assert_int_eq(
      jct_inspect_path(JCT_SOURCE_DIR "/traces/ring8.pcap", NULL, &ins, err, sizeof err), 0);
  jct_profile_t *p;
  ck_assert_int_eq(jct_inspect_profile(ins, &p), 0);
  expect_fig(&p->mtu_bytes, 112 * 7, 4096, 4096, 4096, 4096, 4096, 4096);
  /* The clear-to-send direction has ONLY packets: not listed. */
  ck_assert_uint_eq(p->nlinks, 8);
  for (uint32_t i = 0; i < p->nlinks; i++) {
    const jct_profile_link_t *l = &p->links[i];
    ck_assert(l->rate_bps.set);
    ck_assert_uint_eq(l->rate_bps.n, 14 * 7);
    ck_assert_uint_ge(l->rate_bps.value, 99500000);
    ck_assert_uint_le(l->rate_bps.value, 100000000);
    ck_assert_uint_eq(l->rate_mode_n, l->rate_bps.n);
  }
  expect_unset(&p->loss_recovery_ns);
  expect_unset(&p->timeout_ns);
  jct_profile_free(p);
  jct_inspect_free(ins);
}
END_TEST

/* ---- in the schedule's JSON ---- */

static void same_fig(const jct_figure_t *a, const jct_figure_t *b) {
  ck_assert_int_eq(a->set, b->set);
  ck_assert_uint_eq(a->value, b->value);
  ck_assert_uint_eq(a->n, b->n);
  ck_assert_uint_eq(a->median, b->median);
  ck_assert_uint_eq(a->p10, b->p10);
  ck_assert_uint_eq(a->p90, b->p90);
  ck_assert_uint_eq(a->min, b->min);
  ck_assert_uint_eq(a->max, b->max);
  for (unsigned k = 0; k < JCT_FIGURE_BINS; k++)
    ck_assert_msg(a->spread[k] == b->spread[k], "spread[%u]: %llu, %llu", k,
                  (unsigned long long)a->spread[k], (unsigned long long)b->spread[k]);
}

START_TEST(schedule_carries_profile) {
  char err[256], path[512];
  jct_schedule_t *s, *back;
  jct_infer_report_t rep;
  int rc = jct_infer(JCT_SOURCE_DIR "/traces/rxe-write-send-loss1pct.pcap", NULL, &s, &rep, err,
                     sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  jct_infer_report_free(&rep);
  const jct_profile_t *p = s->profile;
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq(p->nlinks, 1);
  ck_assert_int_eq(p->links[0].src_rank, 0); /* 198.18.0.1 */
  ck_assert_int_eq(p->links[0].dst_rank, 1);
  ck_assert_uint_eq(p->mtu_bytes.value, 1024);
  ck_assert_int_eq(p->timeout_exp, 14);

  craft_tmpname(path, sizeof path, ".json");
  ck_assert_int_eq(jct_schedule_save(s, path, err, sizeof err), 0);
  rc = jct_schedule_load(&back, path, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  unlink(path);
  const jct_profile_t *q = back->profile;
  ck_assert_ptr_nonnull(q);
  same_fig(&p->mtu_bytes, &q->mtu_bytes);
  same_fig(&p->hole_to_nak_ns, &q->hole_to_nak_ns);
  same_fig(&p->nak_to_resend_ns, &q->nak_to_resend_ns);
  same_fig(&p->loss_recovery_ns, &q->loss_recovery_ns);
  same_fig(&p->go_back_psns, &q->go_back_psns);
  same_fig(&p->go_back_after_nak_psns, &q->go_back_after_nak_psns);
  same_fig(&p->timeout_ns, &q->timeout_ns);
  same_fig(&p->packets_per_ack, &q->packets_per_ack);
  ck_assert_int_eq(q->timeout_exp, 14);
  ck_assert_uint_eq(q->nlinks, 1);
  ck_assert_str_eq(q->links[0].src, "198.18.0.1");
  ck_assert_int_eq(q->links[0].dst_rank, 1);
  same_fig(&p->links[0].rate_bps, &q->links[0].rate_bps);
  ck_assert_uint_eq(q->links[0].rate_mode_n, 527);
  jct_schedule_free(back);
  jct_schedule_free(s);
}
END_TEST

#define SCHED_HEAD                                                                                 \
  "{\"jctlab_schedule\": 1, \"ranks\": 2, \"connections\": [{\"src\": 0, \"dst\": 1}], "           \
  "\"ops\": [{\"conn\": 0, \"bytes\": 100}]"

static int load_text(const char *json, jct_schedule_t **out, char *err, size_t errlen) {
  return jct_schedule_loads(out, json, strlen(json), err, errlen);
}

START_TEST(profile_edited_by_hand) {
  char err[256];
  jct_schedule_t *s;
  /* No profile: still a schedule. */
  ck_assert_int_eq(load_text(SCHED_HEAD "}", &s, err, sizeof err), 0);
  ck_assert_ptr_null(s->profile);
  jct_schedule_free(s);
  ck_assert_int_eq(load_text(SCHED_HEAD ", \"profile\": null}", &s, err, sizeof err), 0);
  ck_assert_ptr_null(s->profile);
  jct_schedule_free(s);
  /* Figures given by hand: a value, no samples; the timeout by exponent. */
  int rc = load_text(SCHED_HEAD ", \"profile\": {\"mtu_bytes\": {\"value\": 4096}, "
                                "\"timeout_exp\": 16, \"links\": [{\"src_rank\": 0, "
                                "\"dst_rank\": 1, \"rate_bps\": {\"value\": 25000000000}}]}}",
                     &s, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  const jct_profile_t *p = s->profile;
  ck_assert(p->mtu_bytes.set);
  ck_assert_uint_eq(p->mtu_bytes.value, 4096);
  ck_assert_uint_eq(p->mtu_bytes.n, 0);
  ck_assert(p->timeout_ns.set);
  ck_assert_uint_eq(p->timeout_ns.value, 4096ull << 16);
  ck_assert_int_eq(p->timeout_exp, 16);
  ck_assert(!p->go_back_psns.set);
  ck_assert_uint_eq(p->nlinks, 1);
  ck_assert_uint_eq(p->links[0].rate_bps.value, 25000000000ull);
  ck_assert_str_eq(p->links[0].src, "");
  jct_schedule_free(s);
  /* A spread as written, the open-ended last bin and the samples of 0 too. */
  rc =
      load_text(SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"value\": 13, \"spread\": "
                           "[{\"from\": 0, \"to\": 1, \"n\": 2}, {\"from\": 10, \"to\": 20, "
                           "\"n\": 4}, {\"from\": 5000000000000000000, \"to\": null, \"n\": 1}]}}}",
                &s, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  const uint64_t *sp = s->profile->go_back_psns.spread;
  ck_assert_uint_eq(sp[0], 2);
  ck_assert_uint_eq(sp[jct_figure_bin(10)], 4);
  ck_assert_uint_eq(sp[JCT_FIGURE_BINS - 1], 1);
  ck_assert_uint_eq(sp[jct_figure_bin(20)], 0);
  jct_schedule_free(s);
  /* The timeout by value alone: its exponent follows. */
  ck_assert_int_eq(load_text(SCHED_HEAD ", \"profile\": {\"timeout_ns\": {\"value\": 268435456}}}",
                             &s, err, sizeof err),
                   0);
  ck_assert_int_eq(s->profile->timeout_exp, 16);
  jct_schedule_free(s);

  /* Refused, naming the key. */
  static const struct {
    const char *json, *says;
  } bad[] = {
      {SCHED_HEAD ", \"profile\": 7}", "\"profile\" must be an object"},
      {SCHED_HEAD ", \"profile\": {\"mtu_bytes\": {\"value\": 0}}}", "\"mtu_bytes\": \"value\""},
      {SCHED_HEAD ", \"profile\": {\"mtu_bytes\": 1024}}", "\"mtu_bytes\" must be an object"},
      {SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"value\": -1}}}", "\"go_back_psns\""},
      {SCHED_HEAD ", \"profile\": {\"timeout_exp\": 32}}", "\"timeout_exp\""},
      {SCHED_HEAD ", \"profile\": {\"timeout_exp\": 14, \"timeout_ns\": {\"value\": 1000}}}",
       "is not 4.096 us x 2^14"},
      /* found by fuzz_schedule: a timeout no QP can have, with no exponent */
      {SCHED_HEAD ", \"profile\": {\"timeout_ns\": {\"value\": 1000}}}",
       "1000 is not 4.096 us x 2^n"},
      {SCHED_HEAD ", \"profile\": {\"links\": [{\"src_rank\": 2}]}}",
       "\"src_rank\" must be one of the schedule's ranks, 0 to 1"},
      {SCHED_HEAD ", \"profile\": {\"links\": {}}}", "\"links\" must be an array"},
      {SCHED_HEAD ", \"profile\": {\"links\": [{\"rate_bps\": {\"value\": \"fast\"}}]}}",
       "\"links\"[0]: \"rate_bps\": \"value\""},
      {SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"spread\": {}}}}",
       "\"go_back_psns\": \"spread\" must be an array"},
      {SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"spread\": [{\"from\": 3, \"n\": 1}]}}}",
       "\"go_back_psns\": \"spread\"[0]: needs \"from\", a bin's lowest value"},
      {SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"spread\": [{\"from\": 5}]}}}",
       "\"spread\"[0]: needs"},
      {SCHED_HEAD ", \"profile\": {\"go_back_psns\": {\"spread\": [{\"from\": 5, \"n\": -2}]}}}",
       "\"spread\"[0]: \"n\" must be an integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s = (jct_schedule_t *)1;
    ck_assert_int_eq(load_text(bad[i].json, &s, err, sizeof err), JCT_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, bad[i].says), "case %zu: '%s' does not say '%s'", i, err,
                  bad[i].says);
  }
}
END_TEST

/* ---- the commands ---- */

static const char *const FIG_KEYS[] = {"value", "n",   "median", "p10",
                                       "p90",   "min", "max",    "spread"};
static const char *const PROFILE_FIGS[] = {
    "mtu_bytes",    "hole_to_nak_ns",         "nak_to_resend_ns", "loss_recovery_ns",
    "go_back_psns", "go_back_after_nak_psns", "timeout_ns",       "packets_per_ack"};

START_TEST(inspect_json_and_text) {
  /* A lossless capture: every key there, null where there is no sample. */
  char *argv[] = {JCT_BINARY, "inspect", "--json", JCT_SOURCE_DIR "/traces/ring8.pcap", NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_int_eq(r.status, 0);
  json_t *doc = parse_json(r.out, "inspect --json");
  json_t *prof = jget(doc, "profile");
  for (size_t i = 0; i < sizeof PROFILE_FIGS / sizeof PROFILE_FIGS[0]; i++) {
    json_t *f = json_object_get(prof, PROFILE_FIGS[i]);
    ck_assert_msg(json_is_object(f), "%s", PROFILE_FIGS[i]);
    for (size_t k = 0; k < sizeof FIG_KEYS / sizeof FIG_KEYS[0]; k++)
      ck_assert_msg(json_object_get(f, FIG_KEYS[k]), "%s.%s", PROFILE_FIGS[i], FIG_KEYS[k]);
  }
  ck_assert(json_is_null(jget(doc, "profile.hole_to_nak_ns.value")));
  ck_assert(json_is_null(jget(doc, "profile.hole_to_nak_ns.median")));
  ck_assert_int_eq(jint(doc, "profile.hole_to_nak_ns.n"), 0);
  ck_assert_uint_eq(json_array_size(jget(doc, "profile.hole_to_nak_ns.spread")), 0);
  ck_assert(json_is_null(jget(doc, "profile.timeout_exp")));
  ck_assert_int_eq(jint(doc, "profile.mtu_bytes.value"), 4096);
  ck_assert_uint_eq(json_array_size(jget(doc, "profile.links")), 8);
  ck_assert_int_eq(jint(doc, "totals.losses_recovered"), 0);
  json_decref(doc);
  result_free(&r);

  /* The shipped capture: the summary's profile and per-loss latency. */
  char *text[] = {JCT_BINARY, "inspect", SHIPPED, NULL};
  r = run_cmd(text, NULL, 60);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "33 lost PSNs re-sent: hole → retransmission 844 ms in "
                                      "all, 14.1 ms per loss (median)"));
  ck_assert_ptr_nonnull(strstr(r.out, "Profile of the captured system"));
  ck_assert_ptr_nonnull(strstr(r.out, "path MTU               1024 B"));
  ck_assert_ptr_nonnull(strstr(r.out, "67.1 ms = 4.096 µs × 2^14"));
  ck_assert_ptr_nonnull(strstr(r.out, "spread: 7 in 500 µs-1 ms, 9 in 1-2 ms, 6 in 10-20 ms, "
                                      "1 in 20-50 ms, 10 in 50-100 ms\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "spread: 4 at 0, 6 in 1-2, 9 in 2-5,"));
  ck_assert_ptr_null(strstr(r.out, "path MTU               1024 B (p10 1024 B, p90 1024 B; "
                                   "n 2477)\n                         spread")); /* one bin */
  result_free(&r);

  char *tl[] = {JCT_BINARY, "inspect", "--timeline=json", SHIPPED, NULL};
  r = run_cmd(tl, NULL, 60);
  ck_assert_int_eq(r.status, 0);
  const char *first = strstr(r.out, "\"event\":\"hole_resent\"");
  ck_assert_ptr_nonnull(first);
  ck_assert_ptr_nonnull(strstr(first, "\"psn\":9768683,\"value\":6397000,\"dur_ns\":14128000}"));
  result_free(&r);
}
END_TEST

START_TEST(schedule_command_writes_it) {
  char *argv[] = {JCT_BINARY, "schedule", "-q", SHIPPED, NULL};
  result_t r = run_cmd(argv, NULL, 60);
  ck_assert_int_eq(r.status, 0);
  json_t *doc = parse_json(r.out, "schedule");
  ck_assert_int_eq(jint(doc, "profile.mtu_bytes.value"), 1024);
  ck_assert_int_eq(jint(doc, "profile.timeout_exp"), 14);
  ck_assert_int_eq(jint(doc, "profile.links.0.src_rank"), 0);
  ck_assert_int_eq(jint(doc, "profile.links.0.rate_bps.value"), 2949333333);
  ck_assert_int_eq(jint(doc, "profile.go_back_psns.n"), 25);
  ck_assert_int_eq(jint(doc, "profile.loss_recovery_ns.spread.4.from"), 50000000);
  ck_assert_int_eq(jint(doc, "profile.loss_recovery_ns.spread.4.to"), 100000000);
  ck_assert_int_eq(jint(doc, "profile.loss_recovery_ns.spread.4.n"), 10);
  json_decref(doc);
  result_free(&r);
}
END_TEST

Suite *profile_suite(void) {
  Suite *s = suite_create("profile");
  TCase *core = tcase_create("core");
  tcase_add_test(core, mtu_rate_and_acks);
  tcase_add_test(core, sustained_rate_is_the_mean);
  tcase_add_test(core, losses_go_back_and_timeouts);
  tcase_add_test(core, gap_of_two_and_lost_resends);
  tcase_add_test(core, timeout_exponent);
  tcase_add_test(core, spread_bins);
  tcase_add_test(core, shipped_capture);
  tcase_add_test(core, ring8_links);
  suite_add_tcase(s, core);
  TCase *json = tcase_create("json");
  tcase_add_test(json, schedule_carries_profile);
  tcase_add_test(json, profile_edited_by_hand);
  suite_add_tcase(s, json);
  TCase *cli = tcase_create("cli");
  tcase_set_timeout(cli, 120);
  tcase_add_test(cli, inspect_json_and_text);
  tcase_add_test(cli, schedule_command_writes_it);
  suite_add_tcase(s, cli);
  return s;
}
