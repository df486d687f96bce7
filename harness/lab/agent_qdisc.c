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
} dump_t;

static int on_attr(const struct nlattr *a, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(a, TCA_MAX) >= 0) tb[mnl_attr_get_type(a)] = a;
  return MNL_CB_OK;
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
