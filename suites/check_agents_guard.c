/* agents' "guard" case (issue 14: nothing is left behind when an agent
 * dies): the agent's guard (harness/lab/agent_guard.h) puts back the root
 * qdisc a delay's fq replaced (agent_qdisc.h), here on lo in a namespace
 * of the test's. This machine's kernel has no fq: a pfifo with jctlab's
 * fq handle (fc7:) stands in for it, placed as agent_host.c places fq (at
 * the root, or under a tbf's class 1:1); the VMs' kernel runs the real
 * one (check_lab_rank.c). A forked "agent" saves the root, replaces it and
 * is SIGKILLed; `tc qdisc show dev lo` must read as before it:
 *   - lo's default root (noqueue 0:): deleted back to the default;
 *   - a tbf 1: root (rate, burst, limit) replaced at the root: made again;
 *   - the same tbf with the stand-in under 1:1 (the shaper's case): the
 *     tbf's change puts a fresh bfifo child back.
 * A clean restore has the guard forget: a root changed after it stays. A
 * guard killed itself makes the next hand-over fail, not kill the agent.
 * And an agent finding a stale jctlab fq (its guard dead too) removes it,
 * at the root or under the tbf. Needs root, Check's fork mode and tc(8). */
#include <linux/pkt_sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nskit.h"
#include "suites.h"
#include "testkit.h"

#ifdef JCT_HAVE_VERBS
#include "harness/lab/agent_guard.h"
#include "harness/lab/agent_qdisc.h"

#define TBF "tbf rate 10mbit burst 20kb limit 300kb"
#define STAND_IN "handle fc7: pfifo limit 77" /* jctlab's fq handle, a kind this kernel has */

/* `tc qdisc show dev lo`, into buf. */
static const char *show(char *buf, size_t len) {
  FILE *p = popen("tc qdisc show dev lo", "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(buf, 1, len - 1, p);
  buf[n] = '\0';
  pclose(p);
  return buf;
}

/* A forked agent: the root saved with the guard, then `tc qdisc ARGS`
 * (the stand-in placed), then waiting to be killed. Returns its pid once
 * the stand-in is there. */
static pid_t agent_replacing(const char *args) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    char err[256], cmd[256];
    jct__agent_qdisc_t q;
    snprintf(cmd, sizeof cmd, "tc qdisc %s", args);
    uint32_t parent = strstr(args, "parent 1:1") ? TC_H_MAKE(1u << 16, 1) : TC_H_ROOT;
    if (jct__agent_qdisc_save(&q, "lo", parent, JCT__GUARD_FQ, err, sizeof err) || system(cmd) ||
        write(p[1], "r", 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  close(p[1]);
  char b;
  ck_assert_msg(read(p[0], &b, 1) == 1, "the agent failed to save or replace the root");
  close(p[0]);
  return pid;
}

/* SIGKILL the agent; wait until lo's qdiscs read as want (5 s at most);
 * the time it took, in ms. */
static double kill_and_wait(pid_t pid, const char *want, const char *what) {
  char now[2048];
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  double t0 = now_s();
  while (strcmp(show(now, sizeof now), want) && now_s() - t0 < 5)
    sleep_ms(5);
  ck_assert_msg(!strcmp(now, want), "%s: after the kill lo has\n%sand not as before\n%s", what, now,
                want);
  return (now_s() - t0) * 1e3;
}

START_TEST(guard_restores_root_qdisc) {
  if (!ns_own("agents", "guard_restores_root_qdisc", NS_TC | NS_LO_UP)) return;
  char err[256] = "", before[2048], mid[2048];

  /* The kernel's default root. */
  show(before, sizeof before);
  ck_assert_msg(strstr(before, "noqueue 0: root"), "%s", before);
  pid_t a = agent_replacing("replace dev lo root " STAND_IN);
  ck_assert_msg(strstr(show(mid, sizeof mid), "pfifo fc7: root"), "%s", mid);
  printf("agents: default root back %.1f ms after the kill\n",
         kill_and_wait(a, before, "default root"));

  /* A tbf of the host's own, replaced at the root: made again. */
  tc_ok("qdisc replace dev lo root handle 1: " TBF);
  show(before, sizeof before);
  ck_assert_msg(strstr(before, "tbf 1: root") && strstr(before, "rate 10Mbit"), "%s", before);
  a = agent_replacing("replace dev lo root " STAND_IN);
  ck_assert_msg(!strstr(show(mid, sizeof mid), "tbf"), "%s", mid);
  printf("agents: tbf root back %.1f ms after the kill\n", kill_and_wait(a, before, "tbf root"));

  /* The stand-in under the tbf's class 1:1, as fq under the shaper. */
  a = agent_replacing("replace dev lo parent 1:1 " STAND_IN);
  ck_assert_msg(strstr(show(mid, sizeof mid), "pfifo fc7: parent 1:1"), "%s", mid);
  printf("agents: tbf's child back %.1f ms after the kill\n",
         kill_and_wait(a, before, "under the tbf"));

  /* A clean restore, then the guard has nothing to undo. */
  jct__agent_qdisc_t q;
  ck_assert_msg(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err) == 0,
                "%s", err);
  ck_assert_str_eq(q.kind, "tbf");
  ck_assert_uint_eq(q.handle, 1u << 16);
  pid_t guard = jct__agent_guard_pid();
  ck_assert_int_gt(guard, 0);
  tc_ok("qdisc replace dev lo root " STAND_IN);
  ck_assert_msg(jct__agent_qdisc_restore(&q, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(show(mid, sizeof mid), before);
  tc_ok("qdisc del dev lo root"); /* after the restore: the guard must leave this alone */
  show(before, sizeof before);
  jct__agent_guard_stop();
  ck_assert_int_eq(kill(guard, 0), -1); /* waited for */
  ck_assert_str_eq(show(mid, sizeof mid), before);

  /* A guard killed itself: the agent's next hand-over fails, and the
   * agent lives on (no SIGPIPE). */
  ck_assert_msg(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err) == 0,
                "%s", err);
  guard = jct__agent_guard_pid();
  kill(guard, SIGKILL);
  waitpid(guard, NULL, 0);
  ck_assert_int_eq(jct__agent_qdisc_restore(&q, err, sizeof err), 0); /* nothing changed */
  ck_assert_int_ne(jct__agent_qdisc_save(&q, "lo", TC_H_ROOT, JCT__GUARD_FQ, err, sizeof err), 0);
  ck_assert_msg(strstr(err, "guard: send"), "%s", err);

  /* Stale: a jctlab fq no guard will undo, at the root, then under a tbf. */
  ck_assert_int_eq(jct__agent_qdisc_clear_stale("lo", err, sizeof err), 0);
  tc_ok("qdisc replace dev lo root " STAND_IN);
  ck_assert_int_eq(jct__agent_qdisc_clear_stale("lo", err, sizeof err), 1);
  ck_assert_str_eq(show(mid, sizeof mid), before);
  tc_ok("qdisc replace dev lo root handle 1: " TBF);
  show(before, sizeof before);
  tc_ok("qdisc replace dev lo parent 1:1 " STAND_IN);
  ck_assert_int_eq(jct__agent_qdisc_clear_stale("lo", err, sizeof err), 1);
  ck_assert_str_eq(show(mid, sizeof mid), before);
  ck_assert_int_eq(jct__agent_qdisc_clear_stale("lo", err, sizeof err), 0);
}
END_TEST

TCase *agents_guard_tcase(void) {
  TCase *t = tcase_create("guard");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, guard_restores_root_qdisc);
  return t;
}
#else
TCase *agents_guard_tcase(void) {
  return NULL; /* no agent in this build */
}
#endif
