/* Ranks in network namespaces, star-wired to the switch namespace by veth
 * pairs (include/jctlab/topo.h): the topology object, its limits, building
 * it and tearing it down.
 *
 * A rank's namespace is made by unshare(CLONE_NEWNET) in the calling
 * thread, held by opening /proc/thread-self/ns/net, and left again with
 * setns() to the switch namespace. While inside, we also open the two
 * sockets that configure it (rtnetlink, and an AF_INET socket for the
 * ethtool ioctls): sockets stay bound to the namespace they were made in,
 * so configuring a rank needs no further setns(). The requests themselves
 * are topo_link.c's, the addresses topo_addr.c's; entering a rank's
 * namespace later, and the process's own isolation, are topo_ns.c's.
 *
 * The rank limit comes from RLIMIT_NOFILE (getrlimit(2), fs.nr_open),
 * user.max_net_namespaces (namespaces(7)) and MemAvailable (proc(5)).
 *
 * Sources: namespaces(7), unshare(2), setns(2), rtnetlink(7), proc(5).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/socket.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "topo_int.h"
#include "topo_link.h"

/* Kernel memory one neighbour entry costs, and one rank without them when
 * jctlab runs (namespace and veth pair, about 130 KiB, plus the switch's
 * and the rank's capture rings and socket buffers); the first two from
 * MemAvailable before and after creating 128 and 256 ranks on Linux 6.18
 * (about 1.2 KiB per entry), rounded up. The limit uses at most half of
 * MemAvailable. */
#define RANK_BASE_BYTES (4u << 20)
#define NEIGH_BYTES 1536u

/* ---- Limits ------------------------------------------------------------- */

static unsigned long long read_ull(const char *path, const char *key) {
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  char line[256];
  unsigned long long v = 0;
  size_t klen = key ? strlen(key) : 0;
  while (fgets(line, sizeof line, f)) {
    if (key && strncmp(line, key, klen) != 0) continue;
    v = strtoull(line + klen, NULL, 10);
    break;
  }
  fclose(f);
  return v;
}

/* Open files the process may have: the hard limit (the soft one is raised). */
static unsigned long long nofile_hard(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_max == RLIM_INFINITY) {
    unsigned long long nr_open = read_ull("/proc/sys/fs/nr_open", NULL);
    return nr_open ? nr_open : 1048576;
  }
  return rl.rlim_max;
}

size_t jct_topo_max_ranks(bool ipv6, const char **why) {
  size_t lim = JCT_TOPO_MAX_RANKS;
  const char *w = "addresses";

  unsigned long long files = nofile_hard();
  unsigned long long by_files =
      files > JCT_TOPO_FD_RESERVE ? (files - JCT_TOPO_FD_RESERVE) / JCT_TOPO_FDS_PER_RANK : 0;
  if (by_files < lim) lim = (size_t)by_files, w = "open files";

  /* The switch namespace counts too (when we made it in this user namespace). */
  unsigned long long ns = read_ull("/proc/sys/user/max_net_namespaces", NULL);
  if (ns > 0 && ns - 1 < lim) lim = (size_t)(ns - 1), w = "network namespaces";

  unsigned long long avail_kib = read_ull("/proc/meminfo", "MemAvailable:");
  if (avail_kib > 0) {
    unsigned long long budget = avail_kib * 1024 / 2;
    unsigned long long per_neigh = (ipv6 ? 2ull : 1ull) * NEIGH_BYTES;
    /* n * base + n * (n - 1) * per_neigh <= budget; n grows slowly, so
     * bisect on it. */
    unsigned long long lo = 0, hi = lim;
    while (lo < hi) {
      unsigned long long mid = lo + (hi - lo + 1) / 2;
      unsigned long long need = mid * RANK_BASE_BYTES + mid * (mid - 1) * per_neigh;
      if (need <= budget)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (lo < lim) lim = (size_t)lo, w = "memory";
  }
  if (why) *why = w;
  return lim;
}

/* ---- Building ----------------------------------------------------------- */

/* Everything inside rank i's namespace, through its own sockets. */
static int configure_rank(jct_topo_t *t, size_t i, jct__nl_t *rnl, int rfd, char *err,
                          size_t errlen) {
  int rc = jct__link_up(rnl, i, 0, "lo", err, errlen);
  if (rc < 0) return rc;
  int idx = jct__link_ready(rfd, rnl, i, JCT_TOPO_RANK_IFNAME, t->kernel_ipv6, err, errlen);
  if (idx < 0) return idx;
  t->rank[i].ifindex = idx;
  rc = jct__link_rank_addrs(rnl, i, idx, t->n, t->ipv6, err, errlen);
  if (rc == 0) rc = jct__nl_flush(rnl, err, errlen);
  return rc;
}

/* The switch end of rank i, after the pair exists. */
static int configure_switch_port(jct_topo_t *t, size_t i, char *err, size_t errlen) {
  struct jct__topo_rank *r = &t->rank[i];
  int idx = jct__link_ready(t->ioctl_fd, t->nl, i, r->sw_ifname, t->kernel_ipv6, err, errlen);
  if (idx < 0) return idx;
  r->sw_ifindex = idx;
  return 0;
}

static int build_rank(jct_topo_t *t, size_t i, char *err, size_t errlen) {
  struct jct__topo_rank *r = &t->rank[i];
  char et[96];
  snprintf(r->sw_ifname, sizeof r->sw_ifname, "sw%u", (unsigned)i); /* i < 65535 */

  if (unshare(CLONE_NEWNET) != 0) {
    int e = errno;
    return jct__errf(err, errlen, JCT_EIO, "rank %zu: cannot create a network namespace: %s%s", i,
                     jct__errno_text(e, et, sizeof et),
                     e == ENOSPC ? " (user.max_net_namespaces reached)" : "");
  }
  /* In the rank's namespace: take hold of it and open its sockets. */
  int rc = 0;
  jct__nl_t *rnl = NULL;
  int rfd = -1;
  r->nsfd = open(JCT__NS_SELF, O_RDONLY | O_CLOEXEC);
  if (r->nsfd < 0) {
    snprintf(err, errlen, "rank %zu: cannot open " JCT__NS_SELF ": %s", i,
             jct__errno_text(errno, et, sizeof et));
    rc = JCT_EIO;
  }
  if (rc == 0) rc = jct__nl_open(&rnl, err, errlen);
  if (rc == 0 && (rfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
    snprintf(err, errlen, "rank %zu: socket: %s", i, jct__errno_text(errno, et, sizeof et));
    rc = JCT_EIO;
  }
  if (setns(t->switch_nsfd, CLONE_NEWNET) != 0) {
    /* Cannot happen with the rights we just used; if it does, the thread
     * is stranded in the rank's namespace and must not build more. */
    snprintf(err, errlen, "rank %zu: cannot return to the switch namespace: %s", i,
             jct__errno_text(errno, et, sizeof et));
    rc = JCT_EIO;
  }
  if (rc == 0) rc = jct__link_veth(t->nl, i, r->sw_ifname, r->nsfd, t->mtu, err, errlen);
  if (rc == 0) rc = jct__nl_flush(t->nl, err, errlen);
  if (rc == 0) t->built = i + 1;
  if (rc == 0) rc = configure_switch_port(t, i, err, errlen);
  if (rc == 0) rc = jct__nl_flush(t->nl, err, errlen);
  if (rc == 0) rc = configure_rank(t, i, rnl, rfd, err, errlen);
  jct__nl_close(rnl);
  if (rfd >= 0) close(rfd);
  return rc;
}

static int validate(size_t nranks, const jct_topo_opts_t *o, char *err, size_t errlen) {
  if (nranks == 0)
    return jct__errf(err, errlen, JCT_EINVAL, "0 ranks: a topology needs at least one rank");
  if (o->mtu < 68 || o->mtu > 65535)
    return jct__errf(err, errlen, JCT_EINVAL, "MTU %" PRIu32 " is outside 68..65535", o->mtu);
  if (o->ipv6 && o->mtu < 1280)
    return jct__errf(err, errlen, JCT_EINVAL, "MTU %" PRIu32 " is below IPv6's minimum of 1280",
                     o->mtu);
  const char *why;
  size_t lim = jct_topo_max_ranks(o->ipv6, &why);
  if (nranks > lim)
    return jct__errf(err, errlen, JCT_EINVAL,
                     "%zu ranks: more than this machine can hold (limit %zu: %s)", nranks, lim,
                     why);
  return 0;
}

/* Let the process open the files the ranks will need, if the hard limit allows. */
static void raise_nofile(size_t nranks) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t need = (rlim_t)nranks * JCT_TOPO_FDS_PER_RANK + JCT_TOPO_FD_RESERVE;
  if (rl.rlim_cur >= need) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &rl);
}

int jct_topo_create(jct_topo_t **out, size_t nranks, const jct_topo_opts_t *opts, char *err,
                    size_t errlen) {
  char et[96];
  *out = NULL;
  jct_topo_opts_t o = opts ? *opts : (jct_topo_opts_t){.mtu = 0, .ipv6 = true};
  if (o.mtu == 0) o.mtu = JCT_TOPO_MTU_DEFAULT;
  int rc = validate(nranks, &o, err, errlen);
  if (rc < 0) return rc;
  if (jct__ns_is_host())
    return jct__errf(err, errlen, JCT_EINVAL,
                     "refusing to build a topology in the host's network namespace: "
                     "call jct_ns_isolate() first");
  bool kernel_ipv6 = access("/proc/sys/net/ipv6", F_OK) == 0;
  if (o.ipv6 && !kernel_ipv6)
    return jct__errf(err, errlen, JCT_EINVAL, "IPv6 asked for, but this kernel has no IPv6");
  raise_nofile(nranks);

  jct_topo_t *t = calloc(1, sizeof *t + nranks * sizeof t->rank[0]);
  if (!t) return jct__errf(err, errlen, JCT_ENOMEM, "%zu ranks: out of memory", nranks);
  t->n = nranks;
  t->mtu = o.mtu;
  t->ipv6 = o.ipv6;
  t->kernel_ipv6 = kernel_ipv6;
  t->ioctl_fd = -1;
  for (size_t i = 0; i < nranks; i++)
    t->rank[i].nsfd = t->rank[i].ifindex = -1;
  t->switch_nsfd = open(JCT__NS_SELF, O_RDONLY | O_CLOEXEC);
  if (t->switch_nsfd < 0) {
    snprintf(err, errlen, "cannot open " JCT__NS_SELF ": %s",
             jct__errno_text(errno, et, sizeof et));
    rc = JCT_EIO;
  }
  if (rc == 0) rc = jct__nl_open(&t->nl, err, errlen);
  if (rc == 0 && (t->ioctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
    snprintf(err, errlen, "socket: %s", jct__errno_text(errno, et, sizeof et));
    rc = JCT_EIO;
  }
  for (size_t i = 0; rc == 0 && i < nranks; i++)
    rc = build_rank(t, i, err, errlen);
  if (t->ioctl_fd >= 0) close(t->ioctl_fd);
  t->ioctl_fd = -1;
  if (rc < 0) {
    jct_topo_destroy(t);
    return rc;
  }
  *out = t;
  return 0;
}

void jct_topo_destroy(jct_topo_t *t) {
  if (!t) return;
  char err[256];
  /* Deleting the switch end deletes the pair: nothing waits for the
   * kernel's asynchronous namespace cleanup, so the same names can be
   * used again at once. All pairs go in one request (by link group); one
   * by one if that fails. Best effort: what is left goes with that cleanup. */
  if (t->nl && t->built > 0 && jct__link_del_group(t->nl, err, sizeof err) < 0) {
    for (size_t i = 0; i < t->built; i++)
      if (jct__link_del(t->nl, i, t->rank[i].sw_ifindex, t->rank[i].sw_ifname, err, sizeof err) < 0)
        break;
    (void)jct__nl_flush(t->nl, err, sizeof err);
  }
  jct__nl_close(t->nl);
  for (size_t i = 0; i < t->n; i++)
    if (t->rank[i].nsfd >= 0) close(t->rank[i].nsfd);
  if (t->switch_nsfd >= 0) close(t->switch_nsfd);
  free(t);
}

/* ---- Accessors ---------------------------------------------------------- */

size_t jct_topo_nranks(const jct_topo_t *t) {
  return t->n;
}

uint32_t jct_topo_mtu(const jct_topo_t *t) {
  return t->mtu;
}

bool jct_topo_ipv6(const jct_topo_t *t) {
  return t->ipv6;
}

int jct_topo_switch_nsfd(const jct_topo_t *t) {
  return t->switch_nsfd;
}

int jct_topo_rank_nsfd(const jct_topo_t *t, size_t i) {
  return i < t->n ? t->rank[i].nsfd : -1;
}

const char *jct_topo_rank_ifname(const jct_topo_t *t, size_t i) {
  return i < t->n ? JCT_TOPO_RANK_IFNAME : NULL;
}

int jct_topo_rank_ifindex(const jct_topo_t *t, size_t i) {
  return i < t->n ? t->rank[i].ifindex : -1;
}

const char *jct_topo_switch_ifname(const jct_topo_t *t, size_t i) {
  return i < t->n ? t->rank[i].sw_ifname : NULL;
}

int jct_topo_switch_ifindex(const jct_topo_t *t, size_t i) {
  return i < t->n ? t->rank[i].sw_ifindex : -1;
}
