/* An agent's netdev's root qdisc, kept and put back (agent_qdisc.h). */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_qdisc.h"
#include "common/errf.h"
#include "harness/base/netlink.h"
#include "jctlab/error.h"

#define OPTS_MAX 400 /* a root's TCA_OPTIONS kept whole (tbf's: 56 bytes) */
#define TREE_MAX 128 /* qdiscs and classes whose filters are counted */

/* The device's root, and where a qdisc of jctlab's fq handle sits. */
typedef struct {
  int ifindex;
  bool root;
  uint32_t root_handle;
  char root_kind[16];
  char root_opts[OPTS_MAX]; /* the TCA_OPTIONS attribute, header and all */
  size_t root_opts_len;
  bool opts_too_large;
  bool fq;
  uint32_t fq_parent;
  /* What replacing the root would take with it that its kind, handle and
   * options do not make again (tree(), at the root only). */
  uint32_t own_qdiscs;  /* under the root, with a handle: a user's, not a kind's default child */
  uint32_t classes;     /* every class of the tree */
  uint32_t own_classes; /* classes the kernel dumps with parameters (htb's, drr's, ...) */
  uint32_t filters;     /* one per chain, priority and protocol, on the root or under it */
  uint32_t parents[TREE_MAX]; /* the own qdiscs' handles and own classes' ids */
  size_t nparents;
  bool tree_too_large;
} dump_t;

static void add_parent(dump_t *d, uint32_t id) {
  if (d->nparents < TREE_MAX)
    d->parents[d->nparents++] = id;
  else
    d->tree_too_large = true;
}

static int on_attr(const struct nlattr *a, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(a, TCA_MAX) >= 0) tb[mnl_attr_get_type(a)] = a;
  return MNL_CB_OK;
}

/* htb dumps its version as the kernel's HTB_VER (0x30011) and takes only
 * its major back, TC_HTB_PROTOVER (htb_init() in net/sched/sch_htb.c:
 * "HTB version mismatch", EINVAL): the kept options say 3, as tc does. */
static void htb_as_tc_sends(dump_t *d) {
  struct nlattr *o = (struct nlattr *)(void *)d->root_opts;
  char *end = (char *)o + o->nla_len;
  for (struct nlattr *a = mnl_attr_get_payload(o); mnl_attr_ok(a, (int)(end - (char *)a));
       a = mnl_attr_next(a)) {
    if (mnl_attr_get_type(a) == TCA_HTB_INIT &&
        mnl_attr_get_payload_len(a) >= sizeof(struct tc_htb_glob)) {
      struct tc_htb_glob g;
      memcpy(&g, mnl_attr_get_payload(a), sizeof g);
      g.version = TC_HTB_PROTOVER;
      g.direct_pkts = 0; /* a counter */
      memcpy(mnl_attr_get_payload(a), &g, sizeof g);
    }
  }
}

static int on_qdisc(const struct nlmsghdr *nlh, void *arg) {
  dump_t *d = arg;
  const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
  if (tcm->tcm_ifindex != d->ifindex) return MNL_CB_OK;
  const struct nlattr *tb[TCA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof *tcm, on_attr, tb);
  if (tcm->tcm_handle == JCT__AGENT_FQ_HANDLE) {
    d->fq = true;
    d->fq_parent = tcm->tcm_parent;
  }
  /* A kind's default child (tbf's bfifo, prio's bands, mq's queues) has
   * handle 0 (qdisc_create_dflt()); one added by `tc qdisc add parent`
   * has its own. ingress and clsact are not under the root. */
  if (tcm->tcm_parent != TC_H_ROOT && tcm->tcm_parent != TC_H_INGRESS && tcm->tcm_handle) {
    d->own_qdiscs++;
    add_parent(d, tcm->tcm_handle);
  }
  if (tcm->tcm_parent != TC_H_ROOT) return MNL_CB_OK;
  d->root = true;
  d->root_handle = tcm->tcm_handle;
  snprintf(d->root_kind, sizeof d->root_kind, "%s",
           tb[TCA_KIND] ? mnl_attr_get_str(tb[TCA_KIND]) : "");
  const struct nlattr *o = tb[TCA_OPTIONS];
  d->root_opts_len = 0;
  if (o && MNL_ALIGN(o->nla_len) <= OPTS_MAX) {
    memcpy(d->root_opts, o, o->nla_len);
    d->root_opts_len = MNL_ALIGN(o->nla_len);
    memset(d->root_opts + o->nla_len, 0, d->root_opts_len - o->nla_len);
  }
  d->opts_too_large = o && MNL_ALIGN(o->nla_len) > OPTS_MAX;
  if (d->root_opts_len && !strcmp(d->root_kind, "htb")) htb_as_tc_sends(d);
  return MNL_CB_OK;
}

/* The qdiscs on d->ifindex (RTM_GETQDISC dump). */
static int dump(dump_t *d, const char *netdev, char *err, size_t errlen) {
  char et[96];
  struct tcmsg tcm = {.tcm_family = AF_UNSPEC, .tcm_ifindex = d->ifindex};
  int rc = jct__nl_dump_tc(RTM_GETQDISC, &tcm, on_qdisc, d);
  return rc < 0 ? jct__errf(err, errlen, rc == -ENOMEM ? JCT_ENOMEM : JCT_EIO,
                            "%s: list qdiscs: %s", netdev, jct__errno_text(-rc, et, sizeof et))
                : 0;
}

/* Whether a qdisc of kind makes every class of its from its own options,
 * though the kernel dumps them with options (so that replacing it and
 * making it again with its options brings them back, as tbf's 1:1 or
 * prio's bands, which dump without): ets, whose bands its nbands, nstrict,
 * quanta and priomap fix (TCA_ETS_*; a band's quantum, the one figure
 * ets_class_dump() puts under TCA_OPTIONS, is in ets_qdisc_dump()'s too),
 * no class is added or removed at will, and no band holds filters of its
 * own (ets_qdisc_tcf_block(): "ETS classid must be zero"), in
 * net/sched/sch_ets.c. */
static bool classes_from_options(const char *kind) {
  return !strcmp(kind, "ets");
}

static int on_class(const struct nlmsghdr *nlh, void *arg) {
  dump_t *d = arg;
  const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
  if (tcm->tcm_ifindex != d->ifindex) return MNL_CB_OK;
  const struct nlattr *tb[TCA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof *tcm, on_attr, tb);
  d->classes++;
  /* A class made one by one (`tc class add`: htb, hfsc, drr, qfq) is
   * dumped with its parameters, and only such a class holds filters of
   * its own; one its qdisc's options make (tbf's 1:1, prio's bands, mq's
   * queues) comes without, or is of a kind that makes them all (ets's
   * bands), and its filters are its qdisc's. */
  if (tb[TCA_OPTIONS] &&
      !classes_from_options(tb[TCA_KIND] ? mnl_attr_get_str(tb[TCA_KIND]) : "")) {
    d->own_classes++;
    add_parent(d, tcm->tcm_handle);
  }
  return MNL_CB_OK;
}

/* A filter dump gives each chain, priority and protocol (a tcf_proto)
 * a message of handle 0, then one per filter in it (tcf_chain_dump() in
 * net/sched/cls_api.c; u32 adds its hash tables). */
static int on_filter(const struct nlmsghdr *nlh, void *arg) {
  dump_t *d = arg;
  const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
  if (tcm->tcm_ifindex == d->ifindex && tcm->tcm_handle == 0) d->filters++;
  return MNL_CB_OK;
}

/* The classes of d's device and the filters on its root (parent 0), on
 * its own qdiscs and on its classes (RTM_GETTCLASS, RTM_GETTFILTER). */
static int tree(dump_t *d, const char *netdev, char *err, size_t errlen) {
  char et[96];
  struct tcmsg tcm = {.tcm_family = AF_UNSPEC, .tcm_ifindex = d->ifindex};
  int rc = jct__nl_dump_tc(RTM_GETTCLASS, &tcm, on_class, d);
  for (size_t i = 0; rc == 0 && i <= d->nparents; i++) {
    tcm.tcm_parent = i ? d->parents[i - 1] : 0;
    rc = jct__nl_dump_tc(RTM_GETTFILTER, &tcm, on_filter, d);
  }
  return rc < 0 ? jct__errf(err, errlen, rc == -ENOMEM ? JCT_ENOMEM : JCT_EIO,
                            "%s: list classes and filters: %s", netdev,
                            jct__errno_text(-rc, et, sizeof et))
                : 0;
}

/* JCT_EINVAL, naming what replacing d's root would lose, when there is
 * any; 0 otherwise. */
static int refuse_tree(const dump_t *d, const char *netdev, char *err, size_t errlen) {
  if (!d->own_classes && !d->filters && !d->own_qdiscs && !d->tree_too_large) return 0;
  char more[96] = "";
  if (d->own_qdiscs)
    snprintf(more, sizeof more, ", %u qdisc%s of its own", d->own_qdiscs,
             d->own_qdiscs == 1 ? "" : "s");
  return jct__errf(err, errlen, JCT_EINVAL,
                   "%s: its root qdisc %s %x: has %u class%s, %u filter%s%s, which a "
                   "host delay's fq would replace and jctlab would not put back (it restores "
                   "the root qdisc alone): remove them, or delay at a device without them",
                   netdev, d->root_kind, d->root_handle >> 16, d->classes,
                   d->classes == 1 ? "" : "es", d->filters, d->filters == 1 ? "" : "s", more);
}

/* Append to buf the request removing jctlab's fq from parent (a class:
 * the class's kind puts what it puts there; a tbf, noop until changed). */
static void put_del_fq(char *buf, const dump_t *d, uint32_t parent) {
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_DELQDISC;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = 1;
  struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
  tcm->tcm_family = AF_UNSPEC;
  tcm->tcm_ifindex = d->ifindex;
  tcm->tcm_parent = parent;
  tcm->tcm_handle = JCT__AGENT_FQ_HANDLE;
}

/* Append to buf the request making d's root what it is now: delete the
 * root for the kernel's default, else replace it with the same kind,
 * handle and options (a tbf whose child was removed makes a fresh bfifo
 * child: tbf_change(); one whose child is there only sets its limit). */
static void put_root(char *buf, const dump_t *d) {
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  bool dflt = !d->root || d->root_handle == 0;
  nlh->nlmsg_type = dflt ? RTM_DELQDISC : RTM_NEWQDISC;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (dflt ? 0 : NLM_F_CREATE | NLM_F_REPLACE);
  nlh->nlmsg_seq = 2;
  struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
  tcm->tcm_family = AF_UNSPEC;
  tcm->tcm_ifindex = d->ifindex;
  tcm->tcm_parent = TC_H_ROOT;
  if (dflt) return;
  tcm->tcm_handle = d->root_handle;
  mnl_attr_put_strz(nlh, TCA_KIND, d->root_kind);
  memcpy(mnl_nlmsg_get_payload_tail(nlh), d->root_opts, d->root_opts_len);
  nlh->nlmsg_len += (uint32_t)d->root_opts_len;
}

/* The requests (one or two rtnetlink messages, JCT__GUARD_REQ_MAX bytes
 * at most) that undo jctlab's fq at parent over the root d found: at the
 * root, the root as found; under a class, the fq removed and the root
 * made again over it. Returns their length. */
static size_t put_back_request(char *buf, const dump_t *d, uint32_t parent) {
  memset(buf, 0, JCT__GUARD_REQ_MAX);
  size_t len = 0;
  if (parent != TC_H_ROOT) {
    put_del_fq(buf, d, parent);
    len = ((struct nlmsghdr *)buf)->nlmsg_len;
    if (!d->root || d->root_handle == 0) return len;
  }
  put_root(buf + len, d);
  return len + ((struct nlmsghdr *)(buf + len))->nlmsg_len;
}

/* Send the requests in req (put_back_request's) and wait for their
 * ACKs; the first refused is in err. */
static int send_request(const char *req, size_t len, const char *label, char *err, size_t errlen) {
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, err, errlen);
  if (rc) return rc;
  for (size_t at = 0; rc == 0 && at + NLMSG_HDRLEN <= len;) {
    const struct nlmsghdr *src = (const struct nlmsghdr *)(req + at);
    struct nlmsghdr *nlh;
    uint16_t flags = src->nlmsg_flags & (NLM_F_CREATE | NLM_F_REPLACE);
    rc = jct__nl_begin(nl, &nlh, src->nlmsg_type, flags, err, errlen, "%s", label);
    if (rc == 0) {
      memcpy((char *)nlh + NLMSG_HDRLEN, (const char *)src + NLMSG_HDRLEN,
             src->nlmsg_len - NLMSG_HDRLEN);
      nlh->nlmsg_len = src->nlmsg_len;
    }
    at += NLMSG_ALIGN(src->nlmsg_len);
  }
  if (rc == 0) rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc < 0 ? JCT_EIO : 0;
}

static int read_dev(dump_t *d, const char *netdev, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  d->ifindex = (int)if_nametoindex(netdev);
  if (!d->ifindex) return jct__errf(err, errlen, JCT_EINVAL, "no network device %s here", netdev);
  return dump(d, netdev, err, errlen);
}

int jct__agent_qdisc_save(jct__agent_qdisc_t *q, const char *netdev, uint32_t parent,
                          jct__guard_what_t what, char *err, size_t errlen) {
  memset(q, 0, sizeof *q);
  dump_t d;
  int rc = read_dev(&d, netdev, err, errlen);
  if (rc) return rc;
  if (d.opts_too_large)
    return jct__errf(err, errlen, JCT_EIO,
                     "%s: the root qdisc's (%s) options are too large to keep for its restore",
                     netdev, d.root_kind);
  /* At the root, the whole tree goes: refused when the root's kind,
   * handle and options would not make it again. */
  if (parent == TC_H_ROOT &&
      ((rc = tree(&d, netdev, err, errlen)) || (rc = refuse_tree(&d, netdev, err, errlen))))
    return rc;
  snprintf(q->netdev, sizeof q->netdev, "%s", netdev);
  q->ifindex = d.ifindex;
  q->handle = d.root ? d.root_handle : 0;
  snprintf(q->kind, sizeof q->kind, "%s", d.root_kind);
  q->parent = parent;
  q->req_len = put_back_request(q->req, &d, parent);
  char label[JCT__GUARD_LABEL_MAX];
  snprintf(label, sizeof label, "put %s's root qdisc back (%s %x:)", netdev, q->kind,
           q->handle >> 16);
  uint64_t key = jct__guard_key(what, d.ifindex);
  if ((rc = jct__agent_guard_keep(key, q->req, q->req_len, label, err, errlen))) return rc;
  q->key = key;
  return 0;
}

int jct__agent_qdisc_restore(jct__agent_qdisc_t *q, char *err, size_t errlen) {
  if (!q->key) return 0;
  dump_t d;
  int rc = read_dev(&d, q->netdev, err, errlen);
  /* What the kernel would refuse to undo: no fq under the class (it was
   * refused), or the kernel's default and nothing else at the root. */
  size_t len = q->req_len;
  bool nothing = false;
  if (rc == 0 && q->parent != TC_H_ROOT && !(d.fq && d.fq_parent == q->parent))
    nothing = true;
  else if (rc == 0 && q->parent == TC_H_ROOT)
    nothing = q->handle == 0 && (!d.root || d.root_handle == 0);
  if (rc == 0 && !nothing) {
    char label[JCT__GUARD_LABEL_MAX];
    snprintf(label, sizeof label, "%s: put the root qdisc back (%s %x:)", q->netdev, q->kind,
             q->handle >> 16);
    rc = send_request(q->req, len, label, err, errlen);
  }
  jct__agent_guard_forget(q->key);
  q->key = 0;
  return rc;
}

int jct__agent_qdisc_clear_stale(const char *netdev, char *err, size_t errlen) {
  dump_t d;
  int rc = read_dev(&d, netdev, err, errlen);
  if (rc || !d.fq) return rc;
  char req[JCT__GUARD_REQ_MAX], label[JCT__GUARD_LABEL_MAX];
  /* At the root: the default back. Under a tbf's class: removed, the tbf
   * made again over a bfifo. Under another's class: removed, and the
   * class's kind puts its own default there. */
  if (d.fq_parent == TC_H_ROOT)
    d.root_handle = 0;
  else if (strcmp(d.root_kind, "tbf"))
    d.root = false;
  size_t len = put_back_request(req, &d, d.fq_parent);
  snprintf(label, sizeof label, "%s: remove a stale jctlab fq", netdev);
  rc = send_request(req, len, label, err, errlen);
  return rc ? rc : 1;
}
