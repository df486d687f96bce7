/* What a killed process's drop program leaves on a host (hostdrop.h):
 * the fallback filter's lease, renewed by a thread of the process that
 * attached it, and the removal of a filter whose process is gone.
 *
 * A thread, not a timer of the agent's loop: the lease must hold while the
 * loop is busy (a long repetition, a slow TCG VM) and end only with the
 * process, which takes its threads with it. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <libmnl/libmnl.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "common/errf.h"
#include "harness/base/netlink.h"
#include "hostdrop.h"
#include "jctlab/error.h"
#include "jctlab/kdrop.h"

struct jct__hostdrop_lease {
  int fd;
  uint64_t lease_ns;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  bool stop;
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns's clock */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int renew(jct__hostdrop_lease_t *l) {
  uint32_t zero = 0;
  struct jct_kdrop_lease v = {.until_ns = mono_ns() + l->lease_ns, .tcx = 0};
  return bpf_map_update_elem(l->fd, &zero, &v, BPF_ANY) < 0 ? -errno : 0;
}

static void *renewer(void *arg) {
  jct__hostdrop_lease_t *l = arg;
  pthread_mutex_lock(&l->mu);
  while (!l->stop) {
    uint64_t at = mono_ns() + l->lease_ns / 3;
    struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
    if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT && !l->stop) (void)renew(l);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

int jct__hostdrop_lease_start(jct__hostdrop_lease_t **out, int lease_fd, char *err, size_t errlen) {
  *out = NULL;
  uint64_t lease_ns = JCT__HOSTDROP_LEASE_NS;
  const char *env = getenv("JCT_HOSTDROP_LEASE_MS");
  if (env) {
    char *end;
    errno = 0;
    unsigned long long ms = strtoull(env, &end, 10);
    if (errno || end == env || *end || ms < 10 || ms > 60000)
      return jct__errf(err, errlen, JCT_EINVAL, "JCT_HOSTDROP_LEASE_MS='%s' is not 10 to 60000",
                       env);
    lease_ns = ms * 1000000ull;
  }
  jct__hostdrop_lease_t *l = calloc(1, sizeof *l);
  if (!l) return JCT_ENOMEM;
  l->fd = lease_fd;
  l->lease_ns = lease_ns;
  char et[96];
  int rc = renew(l);
  if (rc < 0) {
    free(l);
    return jct__errf(err, errlen, JCT_EIO, "the drop program's lease: %s",
                     jct__errno_text(-rc, et, sizeof et));
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&l->mu, NULL);
  if ((rc = pthread_create(&l->thread, NULL, renewer, l)) != 0) {
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
    return jct__errf(err, errlen, JCT_EIO, "the drop program's lease thread: %s",
                     jct__errno_text(rc, et, sizeof et));
  }
  *out = l;
  return 0;
}

void jct__hostdrop_lease_stop(jct__hostdrop_lease_t *l) {
  if (!l) return;
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
  pthread_join(l->thread, NULL);
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
  free(l);
}

/* ---- a dead process's filters -------------------------------------------- */

#define MAX_STALE 64

typedef struct {
  uint32_t prio[MAX_STALE]; /* jctlab's filters found */
  size_t n;
  size_t others; /* any other filter */
} dump_t;

static int on_attr(const struct nlattr *a, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(a, TCA_MAX) >= 0) tb[mnl_attr_get_type(a)] = a;
  return MNL_CB_OK;
}

static int on_filter(const struct nlmsghdr *nlh, void *arg) {
  dump_t *d = arg;
  const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
  const struct nlattr *tb[TCA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof *tcm, on_attr, tb);
  if (!tcm->tcm_handle) return MNL_CB_OK; /* a priority's chain head, not a filter */
  bool ours = tcm->tcm_handle == JCT__HOSTDROP_HANDLE && tb[TCA_KIND] &&
              !strcmp(mnl_attr_get_str(tb[TCA_KIND]), "bpf");
  if (ours && d->n < MAX_STALE)
    d->prio[d->n++] = TC_H_MAJ(tcm->tcm_info) >> 16;
  else
    d->others++;
  return MNL_CB_OK;
}

/* The filters on one clsact hook (RTM_GETTFILTER dump). */
static int dump_hook(int ifindex, uint32_t minor, dump_t *d, char *err, size_t errlen) {
  char et[96];
  struct tcmsg tcm = {
      .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex, .tcm_parent = TC_H_MAKE(TC_H_CLSACT, minor)};
  int rc = jct__nl_dump_tc(RTM_GETTFILTER, &tcm, on_filter, d);
  /* No clsact (or no device): nothing of anyone's is there. */
  if (rc == -EINVAL || rc == -ENOENT) return 0;
  return rc < 0 ? jct__errf(err, errlen, rc == -ENOMEM ? JCT_ENOMEM : JCT_EIO,
                            "list tc filters: %s", jct__errno_text(-rc, et, sizeof et))
                : 0;
}

int jct__hostdrop_clear_stale(int ifindex, char *err, size_t errlen) {
  dump_t d;
  memset(&d, 0, sizeof d);
  int rc = dump_hook(ifindex, TC_H_MIN_EGRESS, &d, err, errlen);
  if (rc < 0) return rc;
  if (d.n == 0) return 0;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
  char et[96];
  for (size_t i = 0; i < d.n; i++) {
    LIBBPF_OPTS(bpf_tc_opts, to, .handle = JCT__HOSTDROP_HANDLE, .priority = d.prio[i]);
    if ((rc = bpf_tc_detach(&hook, &to)) < 0 && rc != -ENOENT)
      return jct__errf(err, errlen, JCT_EIO, "remove a stale jctlab tc filter (priority %u): %s",
                       d.prio[i], jct__errno_text(-rc, et, sizeof et));
  }
  dump_t in;
  memset(&in, 0, sizeof in);
  if (d.others == 0 && dump_hook(ifindex, TC_H_MIN_INGRESS, &in, err, errlen) == 0 &&
      in.n + in.others == 0) {
    hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS; /* the clsact qdisc itself */
    (void)bpf_tc_hook_destroy(&hook);
  }
  return (int)d.n;
}
