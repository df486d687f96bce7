/* What the namespace suites share (test code only): a network namespace of
 * the test's own, tc(8) commands that must succeed, and what the kernel
 * holds on a device there, read back from the kernel (a traffic-control
 * tree over rtnetlink; tcx links and clsact over bpf(2)), never from a
 * tool's output. */
#ifndef JCT_NSKIT_H
#define JCT_NSKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a test needs besides Check's fork mode (CK_FORK not "no": the
 * namespaces are the test process's own, and go with it) and, unless
 * NS_USERNS, root (qdiscs, kernel programs, a real agent). */
enum {
  NS_TC = 1 << 0,     /* tc(8) on PATH */
  NS_LO_UP = 1 << 1,  /* lo up once isolated (rtnetlink) */
  NS_USERNS = 1 << 2, /* not root: a user namespace will do (jct_ns_isolate
                         makes one), skipped where the kernel refuses it */
};

/* Isolate this (forked) test in namespaces of its own (jct_ns_isolate)
 * with what needs asks for. False, after one line on stdout, when the run
 * or the machine cannot give it (the test then returns, passing):
 *   "SUITE: TEST skipped: needs root and Check's fork mode" (", ... and
 *   tc(8)"), or with NS_USERNS "... needs Check's fork mode (CK_FORK=no
 *   given)" or jct_ns_isolate's reason when not root.
 * Otherwise a failure to isolate or to bring lo up fails the test. */
bool ns_own(const char *suite, const char *test, unsigned needs);

/* Whether tc(8) runs here. */
bool tc_present(void);
/* Run `tc ARGS` (printf-style, ARGS at most 511 bytes); fails the test,
 * naming the command, when it does not exit 0. */
void tc_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* dev's qdiscs, classes and filters (those on the root, on every qdisc
 * with a handle and on every class), one line each, into buf:
 *   "qdisc htb 1:0 parent ffff:ffff info 0 opts 32 10"
 * what, kind, handle, parent, a filter's tcm_info, and of a root's
 * options tbf's rate (bytes/s) and limit (bytes) or htb's default class
 * and r2q (0 0 otherwise); counters left out, so that two reads of an
 * unchanged tree are equal. *tbf_rate_Bps (may be NULL): the root tbf's
 * rate in bytes/s, 0 without one. Fails the test on a netlink error or
 * when buf is too small. Returns buf. */
const char *tc_tree(const char *dev, char *buf, size_t len, uint32_t *tbf_rate_Bps);

#ifdef JCT_HAVE_HOSTFAULT
/* The programs attached to ifindex's tcx egress (BPF_TCX_EGRESS, Linux
 * 6.6), at most cap ids into ids; 0 when there are none or the query
 * fails (BPF_PROG_QUERY resolves ifindex in the caller's namespace). */
uint32_t tcx_progs(int ifindex, uint32_t *ids, uint32_t cap);
/* How many of those links are program prog_id's. */
int tcx_links(int ifindex, uint32_t prog_id);
/* Whether ifindex has a clsact qdisc (one made to find out is removed). */
bool has_clsact(int ifindex);
#endif

#endif
