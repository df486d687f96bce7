/* agents' "qdisc" and "pause" cases (issue 14: nothing lost from a host's
 * qdiscs), on lo in a network namespace of the test's, read back over
 * rtnetlink (tc_tree(), nskit.h; not tc's output):
 *   - qdisc: a host delay's fq replaces the root qdisc, and jctlab puts
 *     back the root alone (agent_qdisc.h); a root with classes of its own,
 *     filters or qdiscs a user added under it (an htb tree: this kernel has
 *     htb) is refused before anything changes, the counts from the kernel
 *     named, and the tree is as before; a root its kind, handle and
 *     options make again whole (an htb without classes, a tbf over its own
 *     bfifo) is kept and put back; so is an ets root, whose bands are
 *     classes with options its own options make again (where the kernel
 *     has sch_ets: this one has not, and the test says it skipped).
 *   - pause: a PFC pause reaching the lab agent's NIC pauses its tbf
 *     shaper (agent_pfc.c) by changing the tbf in place, and a delay's fq
 *     under the tbf's class 1:1 stays there before, during and after the
 *     pause: fq where the kernel has it (the lab VM's), else stand-ins
 *     with its handle fc7:, htb (not a FIFO, as fq: tbf_change() resizes
 *     only a FIFO child, fifo_set_limit() in sch_fifo.c) and pfifo (the
 *     guard case's).
 * Need root and Check's fork mode (jct_ns_isolate), tc(8) to build trees. */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <linux/pkt_sched.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nskit.h"
#include "suites.h"
#include "testkit.h"

#ifdef JCT_HAVE_VERBS
#include <uv.h>

#include "harness/lab/agent_guard.h"
#include "harness/lab/agent_qdisc.h"
#include "harness/transport/verbs/agent_nic.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"

/* Saving lo's root for a fq at the root is refused with want in the
 * message, the guard handed nothing, the tree as before. */
static void refused(const char *want) {
  char before[4096], after[4096], err[512] = "";
  tc_tree("lo", before, sizeof before, NULL);
  jct__agent_qdisc_t q;
  ck_assert_int_eq(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err),
                   JCT_EINVAL);
  printf("agents: refused: %s\n", err);
  ck_assert_msg(strstr(err, want), "'%s' without '%s'", err, want);
  ck_assert_uint_eq(q.key, 0);
  ck_assert_int_eq(jct__agent_guard_pid(), 0); /* no guard started: nothing to undo */
  ck_assert_str_eq(tc_tree("lo", after, sizeof after, NULL), before);
}

START_TEST(classful_root_refused) {
  if (!ns_own("agents", "classful_root_refused", NS_TC | NS_LO_UP)) return;
  /* An htb tree: three classes, a u32 filter on the root, a pfifo of
   * the user's under a leaf. */
  tc_ok("qdisc replace dev lo root handle 1: htb default 20");
  tc_ok("class add dev lo parent 1: classid 1:1 htb rate 10mbit");
  tc_ok("class add dev lo parent 1:1 classid 1:10 htb rate 6mbit ceil 10mbit");
  tc_ok("class add dev lo parent 1:1 classid 1:20 htb rate 4mbit ceil 10mbit");
  tc_ok("qdisc add dev lo parent 1:10 handle 10: pfifo limit 50");
  tc_ok("filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport 4791 0xffff "
        "flowid 1:10");
  char t[4096];
  tc_tree("lo", t, sizeof t, NULL);
  ck_assert_msg(strstr(t, "qdisc htb 1:0 parent ffff:ffff info 0 opts 32 10") &&
                    strstr(t, "class htb 1:20 ") && strstr(t, "filter u32 0:0 parent 1:0"),
                "%s", t);
  refused("lo: its root qdisc htb 1: has 3 classes, 1 filter, 1 qdisc of its own");
  /* Each alone is enough. */
  tc_ok("qdisc del dev lo parent 1:10 handle 10:");
  refused("lo: its root qdisc htb 1: has 3 classes, 1 filter, which");
  tc_ok("filter del dev lo parent 1: protocol ip prio 1 u32");
  refused("lo: its root qdisc htb 1: has 3 classes, 0 filters, which");
  /* A tbf's own class (no parameters of its own) is no reason; a qdisc
   * of the user's under it is. */
  tc_ok("qdisc del dev lo root");
  tc_ok("qdisc add dev lo root handle 1: tbf rate 10mbit burst 20kb limit 300kb");
  tc_ok("qdisc add dev lo parent 1:1 handle 20: pfifo limit 9");
  refused("lo: its root qdisc tbf 1: has 1 class, 0 filters, 1 qdisc of its own");

  /* What the root's kind, handle and options make whole is kept, the
   * jctlab fq stand-in put in its place and the root put back: an htb
   * without classes, then the tbf over its own bfifo. */
  const char *roots[] = {"handle 1: htb default 20 r2q 7",
                         "handle 1: tbf rate 10mbit burst 20kb limit 300kb"};
  for (size_t i = 0; i < 2; i++) {
    tc_ok("qdisc del dev lo root");
    char before[4096], after[4096], err[512] = "";
    tc_ok("qdisc add dev lo root %s", roots[i]);
    tc_tree("lo", before, sizeof before, NULL);
    jct__agent_qdisc_t q;
    ck_assert_msg(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err) == 0,
                  "%s: %s", roots[i], err);
    tc_ok("qdisc replace dev lo root handle fc7: pfifo limit 77");
    ck_assert_msg(
        strstr(tc_tree("lo", after, sizeof after, NULL), "qdisc pfifo fc7:0 parent ffff:ffff"),
        "%s", after);
    ck_assert_msg(jct__agent_qdisc_restore(&q, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(tc_tree("lo", after, sizeof after, NULL), before);
  }
  jct__agent_guard_stop();
}
END_TEST

/* What tc(8) shows of lo's qdiscs and classes (an ets root's bands,
 * strict bands, quanta and priomap among them), into buf. */
static const char *tc_show(char *buf, size_t len) {
  FILE *f = popen("tc qdisc show dev lo; tc class show dev lo", "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  ck_assert_int_eq(pclose(f), 0);
  return buf;
}

/* An ets root (802.1Qaz transmission selection) dumps its bands as
 * classes with options, yet its own options make them all again
 * (agent_qdisc.h): kept, and put back with its bands, quanta and priomap,
 * where a filter on it or a qdisc of the user's under a band is still
 * refused. Skipped, saying so, where the kernel has no sch_ets. */
START_TEST(ets_root_kept) {
  if (!ns_own("agents", "ets_root_kept", NS_TC | NS_LO_UP)) return;
  char out[512] = "";
  FILE *f = popen("tc qdisc add dev lo root handle 1: ets bands 4 strict 1 quanta 3000 2000 1000 "
                  "priomap 3 2 1 0 3 3 3 3 3 3 3 3 3 3 3 3 2>&1",
                  "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  if (pclose(f) != 0) { /* the kernel's word for a kind it lacks, else a failure */
    ck_assert_msg(strstr(out, "qdisc kind is unknown"), "tc qdisc add ... ets: %s", out);
    printf("agents: ets_root_kept skipped: this kernel has no ets qdisc (sch_ets, "
           "CONFIG_NET_SCH_ETS): tc says %s",
           out);
    return;
  }
  char t[4096], before[4096], after[4096], shown[4096], err[512] = "";
  tc_tree("lo", t, sizeof t, NULL);
  ck_assert_msg(strstr(t, "qdisc ets 1:0 parent ffff:ffff") && strstr(t, "class ets 1:4 "), "%s",
                t);
  /* What its options do not make is still refused: a qdisc of the
   * user's under a band, a filter on it. */
  tc_ok("qdisc add dev lo parent 1:2 handle 20: pfifo limit 9");
  refused("lo: its root qdisc ets 1: has 4 classes, 0 filters, 1 qdisc of its own");
  tc_ok("qdisc del dev lo parent 1:2 handle 20:");
  tc_ok("filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport 4791 0xffff "
        "flowid 1:1");
  refused("lo: its root qdisc ets 1: has 4 classes, 1 filter, which");
  tc_ok("filter del dev lo parent 1: protocol ip prio 1 u32");
  /* The bands alone: kept, the jctlab fq stand-in put in its place, and
   * the root put back with its bands, quanta and priomap. */
  tc_show(shown, sizeof shown);
  ck_assert_msg(strstr(shown, "quanta 3000 2000 1000") && strstr(shown, "priomap 3 2 1 0 3"),
                "%s", shown);
  tc_tree("lo", before, sizeof before, NULL);
  jct__agent_qdisc_t q;
  ck_assert_msg(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err) == 0,
                "%s", err);
  ck_assert_str_eq(q.kind, "ets");
  tc_ok("qdisc replace dev lo root handle fc7: pfifo limit 77");
  ck_assert_msg(!strstr(tc_tree("lo", after, sizeof after, NULL), "ets"), "%s", after);
  ck_assert_msg(jct__agent_qdisc_restore(&q, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(tc_tree("lo", after, sizeof after, NULL), before);
  ck_assert_str_eq(tc_show(after, sizeof after), shown);
  jct__agent_guard_stop();
}
END_TEST

/* ---- a PFC pause with a delay's fq under the shaper --------------------- */

#define PAUSE_RATE_BPS 100000000u /* 65535 quanta: 335.5 ms at 100 Mbit/s */
#define PAUSE_PRIO 3

/* One 802.1Qbb frame on lo pausing PAUSE_PRIO for quanta (IEEE 802.1Q
 * Annex 31D: 01:80:c2:00:00:01, 0x8808, opcode 0x0101, class-enable
 * vector, eight quanta), sent past lo's qdiscs as a NIC's MAC would. */
static void send_pfc(uint16_t quanta) {
  uint8_t f[60] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x02, 0, 0, 0, 0, 1, 0x88, 0x08, 0x01, 0x01};
  f[17] = 1u << PAUSE_PRIO;
  f[18 + 2 * PAUSE_PRIO] = (uint8_t)(quanta >> 8);
  f[19 + 2 * PAUSE_PRIO] = (uint8_t)quanta;
  int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), one = 1;
  ck_assert_int_ge(s, 0);
  struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex("lo")};
  ck_assert_int_eq(setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one), 0);
  ck_assert_int_eq(bind(s, (struct sockaddr *)&sll, sizeof sll), 0);
  ck_assert_int_eq(send(s, f, sizeof f, 0), (ssize_t)sizeof f);
  close(s);
}

/* Run the loop until paused is what the responder says, 2 s at most. */
static void until_paused(uv_loop_t *loop, jct__agent_pfc_t *p, bool paused) {
  double t0 = now_s();
  uint64_t last = jct__agent_pfc_paused_ns(p);
  for (;;) {
    uv_run(loop, UV_RUN_NOWAIT);
    uint64_t now = jct__agent_pfc_paused_ns(p);
    bool growing = now != last;
    last = now;
    if (growing == paused && (paused || now > 0)) return;
    ck_assert_msg(now_s() - t0 < 2, "the responder never %s", paused ? "paused" : "resumed");
    sleep_ms(2);
  }
}

START_TEST(pause_keeps_delay_fq) {
  if (!ns_own("agents", "pause_keeps_delay_fq", NS_TC | NS_LO_UP)) return;
  /* The delay's fq, or what stands in for it here. */
  const char *kinds[] = {"fq", "htb", "pfifo limit 77"};
  size_t first = system("tc qdisc add dev lo root handle fc7: fq 2>/dev/null") == 0 ? 0 : 1;
  char err[256] = "", t[4096];
  if (!first) tc_ok("qdisc del dev lo root");
  for (size_t k = first; k < (first ? 3 : 1); k++) {
    uv_loop_t loop;
    jct_clock_t clock;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ck_assert_int_eq(jct_clock_init(&clock, &loop), 0);
    /* The lab agent's setup: its shaper, its PFC responder, the delay's
     * fq under the tbf's class 1:1 (agent_host.c). */
    ck_assert_msg(jct__agent_shape("lo", PAUSE_RATE_BPS, 1500, false, err, sizeof err) == 0, "%s",
                  err);
    jct__agent_pfc_t *p;
    ck_assert_msg(jct__agent_pfc_new(&p, &loop, &clock, "lo", PAUSE_PRIO, PAUSE_RATE_BPS, 1500, err,
                                     sizeof err) == 0,
                  "%s", err);
    char child[64];
    tc_ok("qdisc replace dev lo parent 1:1 handle fc7: %s", kinds[k]);
    snprintf(child, sizeof child, "qdisc %.*s fc7:0 parent 1:1 ", (int)strcspn(kinds[k], " "),
             kinds[k]);
    const char *phase[] = {"before", "during", "after"};
    uint32_t rate[3];
    for (int ph = 0; ph < 3; ph++) {
      if (ph == 1) {
        send_pfc(65535);
        until_paused(&loop, p, true);
      } else if (ph == 2) {
        until_paused(&loop, p, false);
      }
      tc_tree("lo", t, sizeof t, &rate[ph]);
      printf("agents: %s under the shaper, %s the pause: tbf at %u B/s\n%s", kinds[k], phase[ph],
             rate[ph], t);
      ck_assert_msg(strstr(t, "qdisc tbf 1:0 parent ffff:ffff "), "%s: %s", phase[ph], t);
      ck_assert_msg(strstr(t, child), "%s the pause, no '%s':\n%s", phase[ph], child, t);
      ck_assert_msg(!strstr(t, "bfifo"), "%s the pause:\n%s", phase[ph], t);
    }
    ck_assert_uint_eq(rate[0], PAUSE_RATE_BPS / 8);
    ck_assert_uint_eq(rate[1], 1000); /* paused: 8 kbit/s (agent_shape.c) */
    ck_assert_uint_eq(rate[2], PAUSE_RATE_BPS / 8);
    double paused_ms = (double)jct__agent_pfc_paused_ns(p) / 1e6;
    printf("agents: paused %.1f ms for 65535 quanta at 100 Mbit/s (335.5)\n", paused_ms);
    ck_assert_msg(paused_ms >= 335 && paused_ms < 600, "paused %.1f ms", paused_ms);
    jct__agent_pfc_free(p);
    jct_clock_close(&clock, NULL);
    uv_run(&loop, UV_RUN_DEFAULT); /* the responder's and the clock's closes */
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    tc_ok("qdisc del dev lo root");
  }
}
END_TEST

/* The shaper's queues (agent_nic.h, jct__agent_shape_per_qp): fq under
 * the tbf's class 1:1, kept through a pause, where the kernel has sch_fq
 * (the lab VM's); where it has not (this machine's), a refusal that names
 * fq, and the tbf over its own FIFO as it was. */
START_TEST(shaper_fq_per_qp) {
  if (!ns_own("agents", "shaper_fq_per_qp", NS_TC | NS_LO_UP)) return;
  char err[256] = "", t[4096], before[4096];
  ck_assert_msg(jct__agent_shape("lo", PAUSE_RATE_BPS, 1500, false, err, sizeof err) == 0, "%s",
                err);
  bool have_fq = system("tc qdisc add dev lo parent 1:1 handle 77: fq 2>/dev/null") == 0;
  if (have_fq) tc_ok("qdisc replace dev lo parent 1:1 handle 78: bfifo limit 3000000");
  tc_tree("lo", before, sizeof before, NULL);
  int rc = jct__agent_shape_per_qp("lo", err, sizeof err);
  tc_tree("lo", t, sizeof t, NULL);
  printf("agents: the shaper's queues, %s sch_fq: %s\n%s", have_fq ? "with" : "without",
         rc ? err : "set", t);
  ck_assert_msg(strstr(t, "qdisc tbf 1:0 parent ffff:ffff "), "%s", t);
  if (!have_fq) {
    ck_assert_int_eq(rc, JCT_EIO);
    ck_assert_msg(strstr(err, "lo: fq under the shaper's tbf"), "%s", err);
    ck_assert_str_eq(t, before);
    return;
  }
  ck_assert_msg(rc == 0, "%s", err);
  for (int paused = 1; paused >= 0; paused--) {
    ck_assert_msg(strstr(t, "qdisc fq fc8:0 parent 1:1 ") && !strstr(t, "bfifo"), "%s", t);
    ck_assert_msg(jct__agent_shape("lo", PAUSE_RATE_BPS, 1500, paused, err, sizeof err) == 0, "%s",
                  err);
    tc_tree("lo", t, sizeof t, NULL);
  }
  ck_assert_msg(strstr(t, "qdisc fq fc8:0 parent 1:1 ") && !strstr(t, "bfifo"), "%s", t);
  ck_assert_msg(jct__agent_shape_per_qp("nosuch0", err, sizeof err) == JCT_EIO &&
                    strstr(err, "nosuch0: no such interface"),
                "%s", err);
}
END_TEST

TCase *agents_qdisc_tcase(void) {
  TCase *t = tcase_create("qdisc");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, classful_root_refused);
  tcase_add_test(t, ets_root_kept);
  return t;
}

TCase *agents_pause_tcase(void) {
  TCase *t = tcase_create("pause");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, pause_keeps_delay_fq);
  tcase_add_test(t, shaper_fq_per_qp);
  return t;
}
#else
TCase *agents_qdisc_tcase(void) {
  return NULL; /* no agent in this build */
}
TCase *agents_pause_tcase(void) {
  return NULL;
}
#endif
