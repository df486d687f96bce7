/* What the namespace suites share (nskit.h). */
#include "nskit.h"

#include <check.h>
#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef JCT_HAVE_HOSTFAULT
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#endif

#include "harness/base/netlink.h"
#include "harness/fabric/topo_link.h"
#include "jctlab/topo.h"

bool tc_present(void) {
  return system("tc -V >/dev/null 2>&1") == 0;
}

bool ns_own(const char *suite, const char *test, unsigned needs) {
  const char *fork_env = getenv("CK_FORK");
  bool no_fork = fork_env && !strcmp(fork_env, "no"), root = geteuid() == 0;
  if (no_fork && (needs & NS_USERNS)) {
    printf("%s: %s skipped: needs Check's fork mode (CK_FORK=no given)\n", suite, test);
    return false;
  }
  if (no_fork || (!root && !(needs & NS_USERNS)) || ((needs & NS_TC) && !tc_present())) {
    printf("%s: %s skipped: needs root%s\n", suite, test,
           needs & NS_TC ? ", Check's fork mode and tc(8)" : " and Check's fork mode");
    return false;
  }
  char err[256] = "";
  int rc = jct_ns_isolate(err, sizeof err);
  if (rc < 0 && !root) {
    printf("%s: %s skipped: %s\n", suite, test, err);
    return false;
  }
  ck_assert_msg(rc == 0, "jct_ns_isolate: %s", err);
  if (needs & NS_LO_UP) {
    jct__nl_t *nl;
    ck_assert_int_eq(jct__nl_open(&nl, err, sizeof err), 0);
    ck_assert_int_ge(jct__link_up(nl, 0, 1, "lo", err, sizeof err), 0);
    ck_assert_msg(jct__nl_flush(nl, err, sizeof err) >= 0, "lo up: %s", err);
    jct__nl_close(nl);
  }
  return true;
}

void tc_ok(const char *fmt, ...) {
  char cmd[516] = "tc ";
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(cmd + 3, sizeof cmd - 3, fmt, ap);
  va_end(ap);
  ck_assert_msg(n >= 0 && (size_t)n < sizeof cmd - 3, "tc %s...: too long", fmt);
  ck_assert_msg(system(cmd) == 0, "%s: failed", cmd);
}

/* ---- a device's traffic-control tree, over rtnetlink -------------------- */

typedef struct {
  int ifindex;
  char *out;
  size_t len, used;
  uint32_t parents[64]; /* qdisc handles and class ids, for the filter dumps */
  size_t nparents;
  uint32_t tbf_rate_Bps; /* the root tbf's rate, bytes/s (0: no tbf root) */
} tree_t;

static int on_attr(const struct nlattr *a, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(a, TCA_MAX) >= 0) tb[mnl_attr_get_type(a)] = a;
  return MNL_CB_OK;
}

/* One attribute of a qdisc's options: TCA_TBF_PARMS, TCA_HTB_INIT. */
typedef struct {
  uint16_t type;
  const struct nlattr *a;
} parms_t;

static int on_parms(const struct nlattr *a, void *data) {
  parms_t *p = data;
  if (mnl_attr_get_type(a) == p->type) p->a = a;
  return MNL_CB_OK;
}

/* One line per qdisc, class and filter: what it is and where (its
 * counters left out; of the root's options, tbf's rate and limit or
 * htb's default class and r2q). */
static int on_tc(const struct nlmsghdr *nlh, void *arg) {
  tree_t *t = arg;
  const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
  if (tcm->tcm_ifindex != t->ifindex) return MNL_CB_OK;
  const struct nlattr *tb[TCA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof *tcm, on_attr, tb);
  const char *kind = tb[TCA_KIND] ? mnl_attr_get_str(tb[TCA_KIND]) : "?";
  const char *what = nlh->nlmsg_type == RTM_NEWQDISC    ? "qdisc"
                     : nlh->nlmsg_type == RTM_NEWTCLASS ? "class"
                                                        : "filter";
  bool qdisc = nlh->nlmsg_type == RTM_NEWQDISC;
  /* A root tbf's rate and limit, a root htb's default class and r2q. */
  parms_t p = {.type = strcmp(kind, "htb") ? TCA_TBF_PARMS : TCA_HTB_INIT};
  uint32_t rate = 0, limit = 0;
  if (qdisc && tcm->tcm_parent == TC_H_ROOT && tb[TCA_OPTIONS])
    mnl_attr_parse_nested(tb[TCA_OPTIONS], on_parms, &p);
  const struct nlattr *parms = p.a;
  size_t plen = parms ? mnl_attr_get_payload_len(parms) : 0;
  if (!strcmp(kind, "tbf") && plen >= sizeof(struct tc_tbf_qopt)) {
    const struct tc_tbf_qopt *q = mnl_attr_get_payload(parms);
    t->tbf_rate_Bps = rate = q->rate.rate;
    limit = q->limit;
  } else if (!strcmp(kind, "htb") && plen >= sizeof(struct tc_htb_glob)) {
    const struct tc_htb_glob *g = mnl_attr_get_payload(parms);
    rate = g->defcls;
    limit = g->rate2quantum;
  }
  int n = snprintf(
      t->out + t->used, t->len - t->used, "%s %s %x:%x parent %x:%x info %x opts %u %u\n", what,
      kind, tcm->tcm_handle >> 16, tcm->tcm_handle & 0xffff, tcm->tcm_parent >> 16,
      tcm->tcm_parent & 0xffff, nlh->nlmsg_type == RTM_NEWTFILTER ? tcm->tcm_info : 0, rate, limit);
  ck_assert(n > 0 && (size_t)n < t->len - t->used);
  t->used += (size_t)n;
  if ((qdisc && tcm->tcm_handle && tcm->tcm_parent != TC_H_INGRESS &&
       tcm->tcm_parent != TC_H_ROOT) || /* the root's: parent 0 */
      nlh->nlmsg_type == RTM_NEWTCLASS) {
    ck_assert_uint_lt(t->nparents, sizeof t->parents / sizeof t->parents[0]);
    t->parents[t->nparents++] = tcm->tcm_handle;
  }
  return MNL_CB_OK;
}

const char *tc_tree(const char *dev, char *buf, size_t len, uint32_t *tbf_rate_Bps) {
  tree_t t = {.ifindex = (int)if_nametoindex(dev), .out = buf, .len = len};
  ck_assert_int_gt(t.ifindex, 0);
  buf[0] = '\0';
  struct tcmsg tcm = {.tcm_family = AF_UNSPEC, .tcm_ifindex = t.ifindex};
  ck_assert_int_eq(jct__nl_dump_tc(RTM_GETQDISC, &tcm, on_tc, &t), 0);
  ck_assert_int_eq(jct__nl_dump_tc(RTM_GETTCLASS, &tcm, on_tc, &t), 0);
  for (size_t i = 0; i <= t.nparents; i++) {
    tcm.tcm_parent = i ? t.parents[i - 1] : 0;
    ck_assert_int_eq(jct__nl_dump_tc(RTM_GETTFILTER, &tcm, on_tc, &t), 0);
  }
  if (tbf_rate_Bps) *tbf_rate_Bps = t.tbf_rate_Bps;
  return buf;
}

/* ---- tc-eBPF attachments ------------------------------------------------ */

#ifdef JCT_HAVE_HOSTFAULT
#define TCX_EGRESS 47 /* linux/bpf.h's BPF_TCX_EGRESS from 6.6 on (hostdrop.c) */

uint32_t tcx_progs(int ifindex, uint32_t *ids, uint32_t cap) {
  uint32_t n = cap;
  if (bpf_prog_query(ifindex, (enum bpf_attach_type)TCX_EGRESS, 0, NULL, ids, &n) < 0) return 0;
  return n;
}

int tcx_links(int ifindex, uint32_t prog_id) {
  uint32_t ids[16];
  uint32_t n = tcx_progs(ifindex, ids, 16);
  int k = 0;
  for (uint32_t i = 0; i < n; i++)
    k += ids[i] == prog_id;
  return k;
}

bool has_clsact(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  int rc = bpf_tc_hook_create(&hook);
  if (rc == -EEXIST) return true;
  ck_assert_int_eq(rc, 0);
  hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
  ck_assert_int_eq(bpf_tc_hook_destroy(&hook), 0);
  return false;
}
#endif
