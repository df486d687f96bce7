/* The timeout injector (injectors/timeout.c): which ACKs it drops, from
 * which packet, and that the requester's go-back ends it; one target at a
 * time, anew every repetition. Crafted frames, no switch. */
#include <check.h>
#include <string.h>

#include "craft.h"
#include "jctlab/error.h"
#include "jctlab/injector.h"
#include "jctlab/roce.h"
#include "suites.h"

#define REQ "198.18.0.1"
#define RESP "198.18.0.2"

/* An ACK (or, with syndrome, a NAK) of PSN psn from src to dst. */
static size_t ack_frame(uint8_t *buf, size_t cap, const char *src, const char *dst, uint32_t psn,
                        uint8_t syndrome) {
  craft_roce_t c = {.src = src, .dst = dst};
  c.h.bth.opcode = JCT_OP_RC_ACKNOWLEDGE;
  c.h.bth.dest_qp = 0x33;
  c.h.bth.psn = psn;
  c.h.aeth.syndrome = syndrome;
  size_t n = craft_roce(buf, cap, &c);
  ck_assert_uint_gt(n, 0);
  return n;
}

static jct_injector_t *mk(const char *spec) {
  char err[512] = "";
  jct_injector_t *inj = NULL;
  ck_assert_msg(jct_injector_new(&inj, spec, 1, 0, err, sizeof err) == 0, "%s: %s", spec, err);
  jct_injector_start(inj, 0);
  return inj;
}

static jct_verdict_t offer(jct_injector_t *inj, uint8_t *buf, size_t len) {
  jct_frame_t f = {.data = buf, .len = len, .cap = len, .port = 0, .out = false};
  return jct_injector_process(inj, &f, 0);
}

static jct_verdict_t data(jct_injector_t *inj, uint32_t qp, uint32_t psn, uint32_t k) {
  uint8_t buf[256];
  return offer(inj, buf, craft_write_frame(buf, sizeof buf, REQ, RESP, qp, psn, k));
}

static jct_verdict_t ack(jct_injector_t *inj, const char *src, const char *dst, uint32_t psn,
                         uint8_t syndrome) {
  uint8_t buf[256];
  return offer(inj, buf, ack_frame(buf, sizeof buf, src, dst, psn, syndrome));
}

/* pkt=1:0 of QP 0x11: ACKs of message 0 pass; from message 1's first
 * packet on, the responder's ACKs of it and later are dropped (NAKs, ACKs
 * the other way and data pass) until the QP re-sends: then one timeout,
 * and ACKs pass again. A repetition starts over. */
START_TEST(timeout_drops_acks_until_the_go_back) {
  jct_injector_t *inj = mk("timeout pkt=1:0 qp=0x11 baseline=yes");
  ck_assert(!inj->out);
  ck_assert(inj->targeted);
  ck_assert(inj->baseline);
  for (int rep = 0; rep < 2; rep++) {
    jct_injector_start(inj, 0);
    uint32_t b = rep ? 0xfffffe : 100; /* the second wraps around 2^24 */
    for (uint32_t k = 0; k < 3; k++)
      ck_assert_int_eq(data(inj, 0x11, (b + k) & 0xffffff, k), JCT_PASS);
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 2) & 0xffffff, 0), JCT_PASS); /* message 0 */
    for (uint32_t k = 3; k < 6; k++)
      ck_assert_int_eq(data(inj, 0x11, (b + k) & 0xffffff, k), JCT_PASS);
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 2) & 0xffffff, 0), JCT_PASS); /* before it */
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 4) & 0xffffff, 0), JCT_DROP); /* of it on */
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 5) & 0xffffff, 0), JCT_DROP);
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 9) & 0xffffff, 0), JCT_PASS);    /* never sent */
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 5) & 0xffffff, 0x60), JCT_PASS); /* a NAK */
    ck_assert_int_eq(ack(inj, REQ, RESP, (b + 5) & 0xffffff, 0), JCT_PASS);    /* the other way */
    ck_assert_uint_eq(inj->stats.timeouts, 0);
    ck_assert_int_eq(data(inj, 0x11, (b + 3) & 0xffffff, 3), JCT_PASS); /* the go-back */
    ck_assert_uint_eq(inj->stats.timeouts, 1);
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 5) & 0xffffff, 0), JCT_PASS);
    ck_assert_uint_eq(inj->stats.dropped, 2);
    /* Once a repetition: message 1 again does not arm it. */
    for (uint32_t k = 6; k < 9; k++)
      ck_assert_int_eq(data(inj, 0x11, (b + k) & 0xffffff, k), JCT_PASS);
    ck_assert_int_eq(ack(inj, RESP, REQ, (b + 8) & 0xffffff, 0), JCT_PASS);
  }
  jct_injector_free(inj);
}
END_TEST

/* qp-order=1 and two targets: the second QP's; its first target's go-back
 * (nothing dropped yet: the host timed out by itself) still counts, then
 * the second arms; another QP's go-back ends nothing. */
START_TEST(timeout_targets_in_turn) {
  jct_injector_t *inj = mk("timeout pkt=0:1,1:2 qp-order=1");
  ck_assert(!inj->baseline);
  ck_assert_int_eq(data(inj, 0x22, 700, 0), JCT_PASS); /* the first QP: not followed */
  ck_assert_int_eq(data(inj, 0x11, 40, 0), JCT_PASS);
  ck_assert_int_eq(data(inj, 0x11, 41, 1), JCT_PASS);  /* 0:1 arms */
  ck_assert_int_eq(data(inj, 0x22, 700, 0), JCT_PASS); /* QP 0x22 re-sends: not ours */
  ck_assert_uint_eq(inj->stats.timeouts, 0);
  ck_assert_int_eq(ack(inj, RESP, REQ, 41, 0), JCT_DROP);
  ck_assert_int_eq(data(inj, 0x11, 40, 0), JCT_PASS); /* go-back */
  ck_assert_uint_eq(inj->stats.timeouts, 1);
  for (uint32_t k = 1; k < 6; k++)
    ck_assert_int_eq(data(inj, 0x11, 40 + k, k), JCT_PASS); /* 1:2 arms at PSN 45 */
  ck_assert_int_eq(ack(inj, RESP, REQ, 44, 0), JCT_PASS);
  ck_assert_int_eq(ack(inj, RESP, REQ, 45, 0), JCT_DROP);
  ck_assert_int_eq(data(inj, 0x11, 45, 5), JCT_PASS);
  ck_assert_uint_eq(inj->stats.timeouts, 2);
  ck_assert_uint_eq(inj->stats.dropped, 2);
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

START_TEST(timeout_bad_specs) {
  expect_error("timeout", "pkt=");
  expect_error("timeout pkt=1", "pkt=1");
  expect_error("timeout pkt=1:2 dir=out", "dir=out");
  expect_error("timeout pkt=1:2 qp=3 qp-order=1", "qp-order=1");
  expect_error("timeout pkt=1:2 qp-order=16", "qp-order=16");
  expect_error("timeout pkt=1:2 baseline=maybe", "baseline=maybe");
  expect_error("timeout pkt=1:2 for=1ms", "for=1ms");
}
END_TEST

Suite *timeout_suite(void) {
  Suite *s = suite_create("timeout");
  TCase *core = tcase_create("core");
  tcase_add_test(core, timeout_drops_acks_until_the_go_back);
  tcase_add_test(core, timeout_targets_in_turn);
  tcase_add_test(core, timeout_bad_specs);
  suite_add_tcase(s, core);
  return s;
}
