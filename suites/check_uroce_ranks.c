/* The uroce suite's "ranks" case: the ranks' NIC (harness/transport/
 * uroce/ranks.c) handles what fell due while the loop was late in time
 * order, as a NIC would have.
 *
 * One connection of a 2-rank topology (jct_topo_create), its ranks on the
 * test's loop, no switch: what the sender sends goes nowhere and nothing
 * is ever acknowledged, so its retransmit timer runs out. The link is made
 * idle first (a malformed datagram wakes the rank with nothing to send),
 * then one message of two full packets is posted: FIRST leaves at once,
 * at t3; LAST's send slot t1 comes one packet time later, before the
 * retransmit deadline t2 = t3 + T. The loop then "wakes late" at W, past
 * both, within the catch-up slack: the process-wide clock offset jumps to
 * W (a second clock's idle-time skipping, clock.h) and the ranks' due
 * timer fires there. No wall time passes and nothing depends on the
 * machine's speed but a stall of tens of ms between the jump and the
 * firing, which the test detects.
 *  - W: LAST goes in its slot, then the timer's go-back-N: two packets,
 *    none a retransmission, one timeout. (Timer first: the slot carries a
 *    re-sent FIRST.)
 *  - W2 = t2 + T + a little: the re-armed timer runs out again, because the
 *    go-back-N at W re-armed it from t2, the deadline's own time, not from
 *    W. (Handed the loop's now, the QP would have re-armed it from W.)
 * When not root and user namespaces are unavailable, the test says why
 * and passes without running. Traffic stays in 198.18.0.0/15.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "harness/orch/loop.h"
#include "harness/transport/uroce/ranks.h"
#include "jctlab/clock.h"
#include "jctlab/executor.h"
#include "jctlab/roce.h"
#include "jctlab/schedule.h"
#include "jctlab/topo.h"
#include "jctlab/uroce.h"
#include "nskit.h"
#include "suites.h"

#define LATE_TIMEOUT 16 /* T = 4.096 us * 2^16 = 268 ms (emulated: no wall time) */
#define LATE_MTU_BYTES 4096

static bool got_datagram(void *arg) {
  jct_uroce_stats_t st;
  jct__ranks_stats(arg, &st);
  return st.rx_malformed > 0;
}

static void on_jump(jct_timer_t *t, uint64_t now_ns) {
  (void)t, (void)now_ns;
}

/* Move the process's time (jct_now_ns()) to at_ns, the loop's timers
 * left unfired: a quiet clock of its own skips to a timer there. */
static void jump_to(uint64_t at_ns) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  jct_clock_t c;
  ck_assert_int_eq(jct_clock_init(&c, &loop), 0);
  jct_clock_set_skip(&c, JCT_CLOCK_SKIP_MIN_NS);
  jct_timer_t t = {0};
  ck_assert_uint_gt(at_ns, jct_now_ns() + 2 * JCT_CLOCK_SKIP_MIN_NS);
  jct_timer_start(&c, &t, at_ns, on_jump);
  ck_assert_uint_gt(jct_clock_skip_idle(&c), 0);
  ck_assert_uint_ge(jct_now_ns(), at_ns);
  jct_clock_set_skip(&c, 0);
  jct_clock_close(&c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}

START_TEST(late_loop_keeps_time_order) {
  if (!ns_own("uroce", "late_loop_keeps_time_order", NS_USERNS)) return;
  char err[256] = "";
  jct_topo_opts_t to = {.mtu = 9000, .ipv6 = false};
  jct_topo_t *topo = NULL;
  ck_assert_msg(jct_topo_create(&topo, 2, &to, err, sizeof err) == 0, "topology: %s", err);
  jct_schedule_t *s = NULL;
  ck_assert_int_eq(jct_schedule_synth(&s, "ring", 2, 1u << 20, 1, err, sizeof err), 0);
  uint32_t src = s->conns[0].src;

  /* One full packet (the catch-up slack) takes 200 ms on the link; T is
   * between one and two of them, so LAST's slot t1 = t3 + 200.8 ms comes
   * before t2 = t3 + 268 ms, and a wake-up before t1 + slack catches up
   * no further than t1. */
  uint64_t full_bytes = jct_uroce_full_packet_wire_bytes(LATE_MTU_BYTES);
  uint64_t slack_ns = 200000000u, T = (uint64_t)JCT_UROCE_TIMEOUT_UNIT_NS << LATE_TIMEOUT;
  uint64_t first_ns = (full_bytes + JCT_RETH_BYTES) * slack_ns / full_bytes;
  jct__ranks_opts_t ro = {.rate_bps = full_bytes * 8u * 5u,
                          .path_mtu_bytes = LATE_MTU_BYTES,
                          .timeout = LATE_TIMEOUT,
                          .retry_cnt = 7,
                          .dscp = 26,
                          .data_prio = 3};
  ck_assert_uint_gt(T, first_ns);
  ck_assert_uint_lt(T, first_ns + slack_ns);

  jct__loop_t L;
  memset(&L, 0, sizeof L);
  ck_assert_int_eq(jct__loop_open(&L, 0, err, sizeof err), 0);
  jct__ranks_t *R = NULL;
  ck_assert_msg(jct__ranks_new(&R, &L.uv, &L.clock, topo, s, &ro, err, sizeof err) == 0,
                "ranks: %s", err);
  jct_exec_hooks_t hooks = jct__ranks_hooks(R);
  jct_exec_t *e = NULL; /* for its hooks only: never started, never attached */
  ck_assert_int_eq(jct_exec_new(&e, s, 0, &hooks), 0);

  /* The sender's link idle: a datagram too short for a packet, to the
   * sender's QP, wakes its rank with nothing to send. */
  int fd = jct_topo_socket(topo, src, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0, err, sizeof err);
  ck_assert_msg(fd >= 0, "socket: %s", err);
  struct sockaddr_storage to_rank;
  socklen_t tl = jct_rank_sockaddr(src, AF_INET, JCT_ROCEV2_UDP_PORT, &to_rank);
  uint8_t junk[JCT_BTH_BYTES] = {0};
  uint32_t qpn = jct__uroce_qpn(0, false);
  junk[5] = (uint8_t)(qpn >> 16), junk[6] = (uint8_t)(qpn >> 8), junk[7] = (uint8_t)qpn;
  jct_clock_flight(&L.clock, 1); /* the rank counts it out */
  ck_assert_int_eq(sendto(fd, junk, sizeof junk, 0, (struct sockaddr *)&to_rank, tl),
                   (ssize_t)sizeof junk);
  close(fd);
  ck_assert_msg(jct__loop_run_until(&L, got_datagram, NULL, R, jct_now_ns() + 5000000000u),
                "the rank did not read the datagram in 5 s");

  uint64_t lo = jct_now_ns();
  ck_assert_int_eq(hooks.post_send(e, 0, 0, 2 * LATE_MTU_BYTES), 0);
  jct__ranks_kick(R);
  uint64_t hi = jct_now_ns();
  jct_uroce_stats_t st;
  jct__ranks_stats(R, &st);
  ck_assert_uint_eq(st.tx_pkts, 1); /* FIRST at t3 in [lo, hi]; LAST waits for t1 */

  /* Late, past t1 and t2, before t1 + slack. */
  uint64_t W = hi + T + (first_ns + slack_ns - T) / 2;
  jump_to(W);
  jct_clock_run_due(&L.clock);
  ck_assert_msg(jct_now_ns() < lo + first_ns + slack_ns,
                "the test stalled %llu ms between the jump and the firing: inconclusive",
                (unsigned long long)((jct_now_ns() - W) / 1000000u));
  jct__ranks_stats(R, &st);
  ck_assert_uint_eq(st.timeouts, 1);
  ck_assert_msg(st.tx_pkts == 2 && st.retx_pkts == 0,
                "%llu packets sent, %llu re-sent: the timer's go-back-N took LAST's slot",
                (unsigned long long)st.tx_pkts, (unsigned long long)st.retx_pkts);

  /* The go-back-N at W re-armed the timer from t2 <= hi + T. */
  jump_to(hi + 2 * T + (W - hi - T) / 2);
  jct_clock_run_due(&L.clock);
  jct__ranks_stats(R, &st);
  ck_assert_msg(st.timeouts == 2,
                "%llu timeouts by t2 + T: the timer was re-armed from the "
                "loop's late now, not from its own deadline",
                (unsigned long long)st.timeouts);
  ck_assert_int_eq(jct__ranks_failed(R, NULL, 0), 0);
  ck_assert_uint_eq(jct__ranks_harness_losses(R), 0);

  jct_exec_free(e);
  jct__ranks_free(R);
  jct__loop_close(&L);
  jct_schedule_free(s);
  jct_topo_destroy(topo);
}
END_TEST

TCase *uroce_ranks_tcase(void) {
  TCase *tc = tcase_create("ranks");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, late_loop_keeps_time_order);
  return tc;
}
