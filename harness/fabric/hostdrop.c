/* The drop injector in a host's kernel (hostdrop.h): libbpf loads the
 * embedded program (hostdrop.bpf.c, compiled by the build) from memory,
 * a tcx link (BPF_LINK_CREATE, BPF_TCX_EGRESS: Linux 6.6 and later) or,
 * where the kernel has none, bpf_tc_hook_create/bpf_tc_attach put it on
 * the interface's egress, and the maps are read and written with
 * bpf_map_lookup_elem/update_elem. The tcx link is made with the raw
 * bpf_link_create: the libbpf this builds against (Debian 12's 1.1) has no
 * bpf_program__attach_tcx, and its linux/bpf.h (6.1) no BPF_TCX_EGRESS.
 * libbpf's own messages are kept quiet unless JCT_BPF_DEBUG is set in the
 * environment (the verifier's log, when a kernel refuses the program). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "common/errf.h"
#include "harness/base/netlink.h"
#include "hostdrop.h"
#include "jctlab/error.h"

extern const unsigned char jct__hostdrop_bpf[];
extern const size_t jct__hostdrop_bpf_len;

/* linux/bpf.h's enum bpf_attach_type from 6.6 on (after BPF_LSM_CGROUP,
 * 43: BPF_STRUCT_OPS, BPF_NETFILTER, BPF_TCX_INGRESS, BPF_TCX_EGRESS). */
#define ATTACH_TCX_EGRESS 47

struct jct__hostdrop {
  struct bpf_object *obj;
  struct ring_buffer *rb;
  int cfg_fd, state_fd, flows_fd, losses_fd, targets_fd, positions_fd, lease_fd, prog_fd;
  int ifindex;
  uint32_t prio;
  int link_fd;     /* the tcx link; -1: a cls_bpf filter (or nothing yet) */
  bool made_qdisc; /* clsact was created here: detach removes it */
  bool attached;
  jct__hostdrop_lease_t *lease; /* the filter's lease, renewed while this process lives */
  jct__hostdrop_event_cb cb; /* while draining */
  void *cb_arg;
};

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
  (void)level;
  if (!getenv("JCT_BPF_DEBUG")) return 0;
  return vfprintf(stderr, fmt, ap);
}

static int on_event(void *ctx, void *data, size_t size) {
  jct__hostdrop_t *h = ctx;
  if (size >= sizeof(struct jct_kdrop_event) && h->cb) h->cb(data, h->cb_arg);
  return 0;
}

static int map_fd(jct__hostdrop_t *h, const char *name) {
  struct bpf_map *m = bpf_object__find_map_by_name(h->obj, name);
  return m ? bpf_map__fd(m) : -1;
}

/* A tcx link on ifindex's egress (appended: the chain's host injectors
 * attach in its order), unless JCT_HOSTDROP_ATTACH=tc asks for the
 * filter. 0, or the kernel's negative errno (EINVAL before 6.6). */
static int attach_tcx(jct__hostdrop_t *h) {
  const char *force = getenv("JCT_HOSTDROP_ATTACH");
  if (force && !strcmp(force, "tc")) return -EOPNOTSUPP;
  uint32_t zero = 0;
  struct jct_kdrop_lease ls = {.until_ns = 0, .tcx = 1};
  if (bpf_map_update_elem(h->lease_fd, &zero, &ls, BPF_ANY) < 0) return -errno;
  int fd = bpf_link_create(h->prog_fd, h->ifindex, (enum bpf_attach_type)ATTACH_TCX_EGRESS, NULL);
  if (fd < 0) {
    int e = errno;
    ls.tcx = 0;
    (void)bpf_map_update_elem(h->lease_fd, &zero, &ls, BPF_ANY);
    return -e;
  }
  h->link_fd = fd;
  return 0;
}

int jct__hostdrop_attach(jct__hostdrop_t **out, int ifindex, uint32_t prio, const char *label,
                         char *err, size_t errlen) {
  *out = NULL;
  libbpf_set_print(quiet_print);
  jct__hostdrop_t *h = calloc(1, sizeof *h);
  if (!h) return JCT_ENOMEM;
  h->ifindex = ifindex;
  h->prio = prio;
  h->link_fd = -1;
  char et[96];
  int rc;
  LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "jct_hostdrop");
  h->obj = bpf_object__open_mem(jct__hostdrop_bpf, jct__hostdrop_bpf_len, &oo);
  if (!h->obj) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: cannot open the tc-eBPF drop program: %s", label,
                   jct__errno_text(errno, et, sizeof et));
    goto fail;
  }
  if ((rc = bpf_object__load(h->obj)) < 0) {
    rc = jct__errf(err, errlen, JCT_EIO,
                   "%s: the kernel refused the tc-eBPF drop program: %s (needs root: CAP_BPF and "
                   "CAP_NET_ADMIN; JCT_BPF_DEBUG=1 prints the verifier's log)",
                   label, jct__errno_text(-rc, et, sizeof et));
    bpf_object__close(h->obj);
    h->obj = NULL;
    goto fail;
  }
  h->cfg_fd = map_fd(h, "jct_cfg");
  h->state_fd = map_fd(h, "jct_state");
  h->flows_fd = map_fd(h, "jct_flows");
  h->losses_fd = map_fd(h, "jct_losses");
  h->targets_fd = map_fd(h, "jct_targets");
  h->positions_fd = map_fd(h, "jct_positions");
  h->lease_fd = map_fd(h, "jct_lease");
  struct bpf_program *prog = bpf_object__find_program_by_name(h->obj, "jct_hostdrop");
  int events_fd = map_fd(h, "jct_events");
  if (!prog || h->cfg_fd < 0 || h->state_fd < 0 || h->flows_fd < 0 || h->losses_fd < 0 ||
      h->targets_fd < 0 || h->positions_fd < 0 || h->lease_fd < 0 || events_fd < 0) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: the tc-eBPF drop program lacks its maps", label);
    goto fail;
  }
  if (!(h->rb = ring_buffer__new(events_fd, on_event, h, NULL))) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: the drop program's ring buffer: %s", label,
                   jct__errno_text(errno, et, sizeof et));
    goto fail;
  }
  h->prog_fd = bpf_program__fd(prog);
  if (attach_tcx(h) == 0) {
    h->attached = true;
    *out = h;
    return 0;
  }
  /* The filter's lease first: a filter never runs without one. */
  if ((rc = jct__hostdrop_lease_start(&h->lease, h->lease_fd, err, errlen)) < 0) goto fail;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  rc = bpf_tc_hook_create(&hook);
  if (rc < 0 && rc != -EEXIST) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: cannot add the clsact qdisc: %s", label,
                   jct__errno_text(-rc, et, sizeof et));
    goto fail;
  }
  h->made_qdisc = rc == 0;
  LIBBPF_OPTS(bpf_tc_opts, to, .handle = JCT__HOSTDROP_HANDLE, .priority = prio, .prog_fd = h->prog_fd);
  if ((rc = bpf_tc_attach(&hook, &to)) < 0) {
    rc = jct__errf(err, errlen, JCT_EIO, "%s: cannot add the cls_bpf filter on egress: %s", label,
                   jct__errno_text(-rc, et, sizeof et));
    goto fail;
  }
  h->attached = true;
  *out = h;
  return 0;
fail:
  jct__hostdrop_detach(h, false);
  return rc;
}

/* Empty a hash map (keys of at most 16 bytes). */
static void clear_map(int fd) {
  uint64_t key[2];
  while (bpf_map_get_next_key(fd, NULL, key) == 0)
    if (bpf_map_delete_elem(fd, key) < 0) break;
}

int jct__hostdrop_configure(jct__hostdrop_t *h, const struct jct_kdrop_cfg *cfg,
                            const uint64_t rng[4]) {
  uint32_t zero = 0;
  struct jct_kdrop_value v;
  memset(&v, 0, sizeof v);
  memcpy(v.s.rng, rng, sizeof v.s.rng);
  v.s.state4 = 1;
  /* Disabled while the state restarts, so no packet sees half of each. */
  struct jct_kdrop_cfg off = *cfg;
  off.enabled = 0;
  if (bpf_map_update_elem(h->cfg_fd, &zero, &off, BPF_ANY) < 0) return JCT_EIO;
  if (bpf_map_update_elem(h->state_fd, &zero, &v, BPF_ANY) < 0) return JCT_EIO;
  clear_map(h->flows_fd);
  clear_map(h->losses_fd);
  clear_map(h->targets_fd);
  clear_map(h->positions_fd);
  /* psn= targets by PSN; pkt= targets by position, which the program
   * makes its PSN's when it meets the position's first transmission. */
  for (uint32_t i = 0; i < cfg->ntargets && i < JCT_KDROP_MAX_TARGETS; i++) {
    uint32_t psn = cfg->psn[i];
    uint64_t pos = JCT_KDROP_POS_KEY(cfg->msg[i], cfg->psn[i]);
    if (cfg->by_msg) {
      struct jct_kdrop_pos at;
      if (bpf_map_lookup_elem(h->positions_fd, &pos, &at) < 0) memset(&at, 0, sizeof at);
      if (at.n == JCT_KDROP_TX_PER_PSN) return JCT_EIO; /* refused at the injector's creation */
      at.tx[at.n++] = cfg->tx[i];
      if (bpf_map_update_elem(h->positions_fd, &pos, &at, BPF_ANY) < 0) return JCT_EIO;
      continue;
    }
    struct jct_kdrop_target t;
    if (bpf_map_lookup_elem(h->targets_fd, &psn, &t) < 0) {
      memset(&t, 0, sizeof t);
      t.first_lost = -1;
    }
    if (t.n == JCT_KDROP_TX_PER_PSN) return JCT_EIO; /* refused at the injector's creation */
    t.tx[t.n++] = cfg->tx[i];
    if (bpf_map_update_elem(h->targets_fd, &psn, &t, BPF_ANY) < 0) return JCT_EIO;
  }
  jct__hostdrop_drain(h, NULL, NULL); /* the last repetition's, unread: not this one's */
  if (cfg->enabled && bpf_map_update_elem(h->cfg_fd, &zero, cfg, BPF_ANY) < 0) return JCT_EIO;
  return 0;
}

int jct__hostdrop_enable(jct__hostdrop_t *h, bool on) {
  uint32_t zero = 0;
  struct jct_kdrop_cfg cfg;
  if (bpf_map_lookup_elem(h->cfg_fd, &zero, &cfg) < 0) return JCT_EIO;
  cfg.enabled = on;
  return bpf_map_update_elem(h->cfg_fd, &zero, &cfg, BPF_ANY) < 0 ? JCT_EIO : 0;
}

int jct__hostdrop_counters(jct__hostdrop_t *h, struct jct_kdrop_counters *out) {
  uint32_t zero = 0;
  struct jct_kdrop_value v;
  if (bpf_map_lookup_elem_flags(h->state_fd, &zero, &v, BPF_F_LOCK) < 0 &&
      bpf_map_lookup_elem(h->state_fd, &zero, &v) < 0)
    return JCT_EIO;
  *out = v.s.c;
  return 0;
}

int jct__hostdrop_drain(jct__hostdrop_t *h, jct__hostdrop_event_cb cb, void *arg) {
  h->cb = cb;
  h->cb_arg = arg;
  int n = ring_buffer__consume(h->rb);
  h->cb = NULL;
  return n < 0 ? JCT_EIO : 0;
}

int jct__hostdrop_test_run(jct__hostdrop_t *h, const uint8_t *frame, size_t len, bool *dropped) {
  LIBBPF_OPTS(bpf_test_run_opts, ro, .data_in = frame, .data_size_in = (uint32_t)len, .repeat = 1);
  if (bpf_prog_test_run_opts(h->prog_fd, &ro) < 0) return JCT_EIO;
  /* TC_ACT_STOLEN loses it; TC_ACT_UNSPEC lets the next filter see it.
   * Anything else (OK would end the hook's filters) is the program's bug. */
  if (ro.retval != 4 && ro.retval != 7 && ro.retval != (uint32_t)-1) return JCT_EIO;
  *dropped = ro.retval == 4 || ro.retval == 7; /* STOLEN; REDIRECT (to nowhere) for tcx */
  return 0;
}

int jct__hostdrop_test_tstamp(jct__hostdrop_t *h, const uint8_t *frame, size_t len,
                              uint64_t *tstamp_ns) {
  struct __sk_buff in, out;
  memset(&in, 0, sizeof in);
  memset(&out, 0, sizeof out);
  LIBBPF_OPTS(bpf_test_run_opts, ro, .data_in = frame, .data_size_in = (uint32_t)len, .ctx_in = &in,
              .ctx_size_in = sizeof in, .ctx_out = &out, .ctx_size_out = sizeof out, .repeat = 1);
  if (bpf_prog_test_run_opts(h->prog_fd, &ro) < 0) return JCT_EIO;
  *tstamp_ns = out.tstamp;
  return 0;
}

void jct__hostdrop_detach(jct__hostdrop_t *h, bool gone_ns) {
  if (!h) return;
  if (h->link_fd >= 0) close(h->link_fd); /* the kernel detaches the link */
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->ifindex, .attach_point = BPF_TC_EGRESS);
  if (h->attached && h->link_fd < 0 && !gone_ns) {
    LIBBPF_OPTS(bpf_tc_opts, to, .handle = JCT__HOSTDROP_HANDLE, .priority = h->prio);
    (void)bpf_tc_detach(&hook, &to);
  }
  if (h->made_qdisc && !gone_ns) {
    /* Both hooks: what destroys the clsact qdisc itself. */
    hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
    (void)bpf_tc_hook_destroy(&hook);
  }
  jct__hostdrop_lease_stop(h->lease); /* after the filter is gone: it never runs unleased */
  ring_buffer__free(h->rb);
  bpf_object__close(h->obj);
  free(h);
}

uint32_t jct__hostdrop_prog_id(const jct__hostdrop_t *h) {
  struct bpf_prog_info info;
  uint32_t len = sizeof info;
  memset(&info, 0, sizeof info);
  return bpf_obj_get_info_by_fd(h->prog_fd, &info, &len) == 0 ? info.id : 0;
}

const char *jct__hostdrop_attach_kind(const jct__hostdrop_t *h) {
  return h->link_fd >= 0 ? "tcx" : "tc";
}

/* ---- a qdisc kind's presence ------------------------------------------- */

static int qdisc_req(jct__nl_t *nl, uint16_t type, uint16_t flags, int ifindex, const char *kind,
                     char *err, size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, type, flags, err, errlen, "%s qdisc %s",
                         type == RTM_NEWQDISC ? "add" : "delete", kind);
  if (rc < 0) return rc;
  struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
  tcm->tcm_family = AF_UNSPEC;
  tcm->tcm_ifindex = ifindex;
  tcm->tcm_parent = TC_H_ROOT;
  if (type == RTM_NEWQDISC) mnl_attr_put_strz(nlh, TCA_KIND, kind);
  return jct__nl_flush(nl, err, errlen);
}

int jct__qdisc_available(int ifindex, const char *kind, char *why, size_t whylen) {
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, why, whylen);
  if (rc) return rc;
  rc = qdisc_req(nl, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, kind, why, whylen);
  if (rc == 0) {
    char ignored[64];
    (void)qdisc_req(nl, RTM_DELQDISC, 0, ifindex, kind, ignored, sizeof ignored);
  }
  jct__nl_close(nl);
  return rc == 0 ? 1 : 0;
}
