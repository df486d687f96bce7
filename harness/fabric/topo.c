/* Ranks in network namespaces, star-wired to the switch namespace by veth
 * pairs, configured over rtnetlink (see include/jctlab/topo.h).
 *
 * A rank's namespace is made by unshare(CLONE_NEWNET) in the calling
 * thread, held by opening /proc/thread-self/ns/net, and left again with
 * setns() to the switch namespace. While inside, we also open the two
 * sockets that configure it (rtnetlink, and an AF_INET socket for the
 * ethtool ioctls): sockets stay bound to the namespace they were made in,
 * so configuring a rank needs no further setns().
 *
 * The veth pair is made from the switch side with one RTM_NEWLINK of kind
 * "veth" whose VETH_INFO_PEER carries the peer's own ifinfomsg and
 * attributes, IFLA_NET_NS_FD among them, so "eth0" is born in the rank's
 * namespace (drivers/net/veth.c, veth_newlink). Both ends are created down;
 * IPv6 address generation is switched off (IFLA_INET6_ADDR_GEN_MODE none:
 * no link-local address, no DAD, no router solicitation) before they go up.
 * Offloads go off with the legacy ethtool ioctls (ETHTOOL_STXCSUM, STSO,
 * SGSO, SGRO; linux/ethtool.h).
 *
 * Sources: rtnetlink(7), netdevice(7), namespaces(7), user_namespaces(7)
 * (uid_map/gid_map and setgroups), setns(2), unshare(2); RFC 2544 and
 * RFC 5180 for the address ranges.
 */
#include "jctlab/topo.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "jctlab/error.h"
#include "harness/base/netlink.h"

/* Kernel memory one neighbour entry costs, and one rank without them when
 * jctlab runs (namespace and veth pair, about 130 KiB, plus the switch's
 * and the rank's capture rings and socket buffers); the first two from
 * MemAvailable before and after creating 128 and 256 ranks on Linux 6.18
 * (about 1.2 KiB per entry), rounded up. The limit uses at most half of
 * MemAvailable. */
#define RANK_BASE_BYTES (4u << 20)
#define NEIGH_BYTES 1536u

#define NS_SELF "/proc/thread-self/ns/net"

/* The link group of every sw<i> ("jct"), so that destroy deletes them all
 * with one RTM_DELLINK: the kernel then waits for RCU once, not per pair. */
#define SWITCH_LINK_GROUP 0x6a6374u

struct jct_rank {
  int nsfd;
  int ifindex;    /* eth0, in the rank's namespace */
  int sw_ifindex; /* sw<i>, in the switch namespace */
  char sw_ifname[IFNAMSIZ];
};

struct jct_topo {
  size_t n;
  size_t built; /* ranks whose veth pair exists */
  uint32_t mtu;
  bool ipv6;
  bool kernel_ipv6; /* the kernel has IPv6 (addr_gen_mode can be set) */
  int switch_nsfd;
  jct__nl_t *nl; /* in the switch namespace */
  int ioctl_fd;  /* AF_INET socket in the switch namespace, while building */
  struct jct_rank rank[];
};

/* ---- Addressing ------------------------------------------------------ */

static void mac_with(size_t i, uint8_t b3, uint8_t mac[6]) {
  uint32_t v = (uint32_t)(i + 1);
  mac[0] = 0x02; /* locally administered, unicast */
  mac[1] = 0x00;
  mac[2] = 0xc6;
  mac[3] = b3;
  mac[4] = (uint8_t)(v >> 8);
  mac[5] = (uint8_t)v;
}

void jct_rank_mac(size_t i, uint8_t mac[6]) {
  mac_with(i, 0x12, mac);
}

void jct_switch_port_mac(size_t i, uint8_t mac[6]) {
  mac_with(i, 0x13, mac);
}

jct_addr_t jct_rank_ipv4(size_t i) {
  jct_addr_t a = {.family = 4};
  uint32_t v = 0xc6120000u + (uint32_t)(i + 1); /* 198.18.0.0 + (i + 1) */
  a.bytes[0] = (uint8_t)(v >> 24);
  a.bytes[1] = (uint8_t)(v >> 16);
  a.bytes[2] = (uint8_t)(v >> 8);
  a.bytes[3] = (uint8_t)v;
  return a;
}

jct_addr_t jct_rank_ipv6(size_t i) {
  jct_addr_t a = {.family = 6};
  uint32_t v = (uint32_t)(i + 1); /* 2001:2::(i + 1) */
  a.bytes[0] = 0x20;
  a.bytes[1] = 0x01;
  a.bytes[3] = 0x02;
  a.bytes[12] = (uint8_t)(v >> 24);
  a.bytes[13] = (uint8_t)(v >> 16);
  a.bytes[14] = (uint8_t)(v >> 8);
  a.bytes[15] = (uint8_t)v;
  return a;
}

socklen_t jct_rank_sockaddr(size_t i, int family, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (i >= JCT_TOPO_MAX_RANKS) return 0;
  if (family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)ss;
    jct_addr_t a = jct_rank_ipv4(i);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    memcpy(&sin->sin_addr, a.bytes, 4);
    return sizeof *sin;
  }
  if (family == AF_INET6) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)ss;
    jct_addr_t a = jct_rank_ipv6(i);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    memcpy(&sin6->sin6_addr, a.bytes, 16);
    return sizeof *sin6;
  }
  return 0;
}

/* ---- Isolation --------------------------------------------------------- */

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int e = n < 0 ? errno : (size_t)n == len ? 0 : EIO;
  close(fd);
  return e;
}

static const char *userns_hint(int e) {
  switch (e) {
  case EPERM:
    return " (user namespaces disabled or restricted: kernel.unprivileged_userns_clone=0, "
           "kernel.apparmor_restrict_unprivileged_userns=1, or a seccomp profile?)";
  case ENOSPC:
    return " (user.max_user_namespaces reached, or 0)";
  case EINVAL:
    return " (the process has threads: call jct_ns_isolate before starting any)";
  case EUSERS:
    return " (too deeply nested user namespaces)";
  default:
    return "";
  }
}

int jct_ns_isolate(char *err, size_t errlen) {
  char et[96];
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNET) == 0) return 0;
    if (errno != EPERM) {
      snprintf(err, errlen, "cannot create a network namespace: %s",
               jct__errno_text(errno, et, sizeof et));
      return JCT_EIO;
    }
    /* root without CAP_SYS_ADMIN (a container): a user namespace may do. */
  }
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    int e = errno;
    snprintf(err, errlen, "cannot create a user namespace: %s%s", jct__errno_text(e, et, sizeof et),
             userns_hint(e));
    return JCT_EIO;
  }
  char map[64];
  int e = write_text("/proc/self/setgroups", "deny");
  if (e != 0 && e != ENOENT) { /* ENOENT: kernels before 3.19 have no such file */
    snprintf(err, errlen, "user namespace: cannot write /proc/self/setgroups: %s",
             jct__errno_text(e, et, sizeof et));
    return JCT_EIO;
  }
  snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
  if ((e = write_text("/proc/self/uid_map", map)) != 0) {
    snprintf(err, errlen, "user namespace: cannot write uid_map \"%s\": %s", map,
             jct__errno_text(e, et, sizeof et));
    return JCT_EIO;
  }
  snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
  if ((e = write_text("/proc/self/gid_map", map)) != 0) {
    snprintf(err, errlen, "user namespace: cannot write gid_map \"%s\": %s", map,
             jct__errno_text(e, et, sizeof et));
    return JCT_EIO;
  }
  return 0;
}

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

static int ifindex_of(int fd, const char *ifname) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
  if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) return -errno;
  return ifr.ifr_ifindex;
}

/* Checksum offload, TSO, GSO and GRO off on ifname (fd: a socket in its
 * namespace). Returns 0 or an errno, with the failed command in *what. */
static int offloads_off(int fd, const char *ifname, const char **what) {
  static const struct {
    uint32_t cmd;
    const char *name;
  } cmds[] = {{ETHTOOL_STXCSUM, "tx-checksumming"},
              {ETHTOOL_STSO, "tcp-segmentation-offload"},
              {ETHTOOL_SGSO, "generic-segmentation-offload"},
              {ETHTOOL_SGRO, "generic-receive-offload"}};
  for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
    struct ethtool_value ev = {.cmd = cmds[k].cmd, .data = 0};
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    ifr.ifr_data = (char *)&ev;
    if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) {
      *what = cmds[k].name;
      return errno;
    }
  }
  return 0;
}

/* Attributes of one end of the veth pair. */
static void put_link_attrs(struct nlmsghdr *nlh, const char *ifname, const uint8_t mac[6],
                           uint32_t mtu) {
  mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
  mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
  mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
}

static int req_veth(jct_topo_t *t, size_t i, int nsfd, char *err, size_t errlen) {
  struct jct_rank *r = &t->rank[i];
  uint8_t mac[6], sw_mac[6];
  jct_rank_mac(i, mac);
  jct_switch_port_mac(i, sw_mac);
  struct nlmsghdr *nlh;
  int rc =
      jct__nl_begin(t->nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                    "rank %zu: create veth pair %s <-> " JCT_TOPO_RANK_IFNAME, i, r->sw_ifname);
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  put_link_attrs(nlh, r->sw_ifname, sw_mac, t->mtu);
  mnl_attr_put_u32(nlh, IFLA_GROUP, SWITCH_LINK_GROUP);
  struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  struct ifinfomsg *pifi = mnl_nlmsg_put_extra_header(nlh, sizeof *pifi);
  pifi->ifi_family = AF_UNSPEC;
  put_link_attrs(nlh, JCT_TOPO_RANK_IFNAME, mac, t->mtu);
  mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)nsfd);
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  return 0;
}

/* IPv6 address generation off on ifindex (before it goes up). */
static int req_no_ll(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                     size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen,
                         "rank %zu: set addr_gen_mode none on %s", i, ifname);
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  struct nlattr *spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
  struct nlattr *in6 = mnl_attr_nest_start(nlh, AF_INET6);
  mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
  mnl_attr_nest_end(nlh, in6);
  mnl_attr_nest_end(nlh, spec);
  return 0;
}

/* Link up, by ifindex, or by name when ifindex is 0. */
static int req_up(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                  size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "rank %zu: set %s up", i, ifname);
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  if (ifindex == 0) mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
  return 0;
}

static int req_addr(jct__nl_t *nl, size_t i, int ifindex, const jct_addr_t *a, char *err,
                    size_t errlen) {
  char as[64];
  unsigned plen = a->family == 4 ? 15 : 48;
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                         "rank %zu: add address %s/%u on " JCT_TOPO_RANK_IFNAME, i,
                         jct_addr_str(a, as, sizeof as), plen);
  if (rc < 0) return rc;
  struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
  ifa->ifa_prefixlen = (uint8_t)plen;
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = (uint32_t)ifindex;
  if (a->family == 4) {
    ifa->ifa_family = AF_INET;
    mnl_attr_put(nlh, IFA_LOCAL, 4, a->bytes);
    mnl_attr_put(nlh, IFA_ADDRESS, 4, a->bytes);
    uint8_t bcast[4] = {198, 19, 255, 255};
    mnl_attr_put(nlh, IFA_BROADCAST, 4, bcast);
  } else {
    ifa->ifa_family = AF_INET6;
    ifa->ifa_flags = IFA_F_NODAD;
    mnl_attr_put(nlh, IFA_ADDRESS, 16, a->bytes);
    mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
  }
  return 0;
}

static int req_neigh(jct__nl_t *nl, size_t i, int ifindex, size_t j, const jct_addr_t *a, char *err,
                     size_t errlen) {
  char as[64];
  uint8_t mac[6];
  jct_rank_mac(j, mac);
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                         "rank %zu: add neighbour %s (rank %zu) on " JCT_TOPO_RANK_IFNAME, i,
                         jct_addr_str(a, as, sizeof as), j);
  if (rc < 0) return rc;
  struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof *nd);
  nd->ndm_family = a->family == 4 ? AF_INET : AF_INET6;
  nd->ndm_ifindex = ifindex;
  nd->ndm_state = NUD_PERMANENT;
  mnl_attr_put(nlh, NDA_DST, a->family == 4 ? 4 : 16, a->bytes);
  mnl_attr_put(nlh, NDA_LLADDR, 6, mac);
  return 0;
}

/* Requests for an interface made outside a topology (idx, ifname, in the
 * calling thread's namespace): no IPv6 link-local address first (below an
 * MTU of 1280 the kernel turns IPv6 off on the link and refuses the
 * setting), then the MTU, then up. */
static int req_iface(jct__nl_t *nl, size_t i, int idx, const char *ifname, uint32_t mtu, char *err,
                     size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = access("/proc/sys/net/ipv6", F_OK) == 0 ? req_no_ll(nl, i, idx, ifname, err, errlen) : 0;
  if (rc == 0)
    rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "set MTU %u on %s", mtu, ifname);
  if (rc == 0) {
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = idx;
    mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
  }
  if (rc == 0) rc = req_up(nl, i, idx, ifname, err, errlen);
  return rc;
}

/* Open a socket for ifname's requests; *idx its index. */
static int open_for(const char *ifname, int *idx, jct__nl_t **nl, char *err, size_t errlen) {
  *idx = (int)if_nametoindex(ifname);
  if (*idx <= 0) {
    snprintf(err, errlen, "%s: no such interface", ifname);
    return JCT_EIO;
  }
  return jct__nl_open(nl, err, errlen);
}

/* A switch port made outside a topology (a lab TAP): MTU, no IPv6
 * link-local address, up. */
int jct__topo_port_iface(const char *ifname, uint32_t mtu, char *err, size_t errlen) {
  jct__nl_t *nl;
  int idx, rc = open_for(ifname, &idx, &nl, err, errlen);
  if (rc) return rc;
  rc = req_iface(nl, 0, idx, ifname, mtu, err, errlen);
  if (rc == 0) rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc;
}

/* An interface outside any topology made rank i's (a lab VM's NIC, as the
 * VM's agent sees it: harness/cmd_agent.c): as a port, plus lo up, rank
 * i's IPv4 address and permanent IPv4 neighbours for the other ranks. */
int jct__topo_configure_iface(size_t i, size_t nranks, const char *ifname, uint32_t mtu, char *err,
                              size_t errlen) {
  jct__nl_t *nl;
  int idx, rc = open_for(ifname, &idx, &nl, err, errlen);
  if (rc) return rc;
  rc = req_up(nl, i, 0, "lo", err, errlen);
  if (rc == 0) rc = req_iface(nl, i, idx, ifname, mtu, err, errlen);
  jct_addr_t a4 = jct_rank_ipv4(i);
  if (rc == 0) rc = req_addr(nl, i, idx, &a4, err, errlen);
  for (size_t j = 0; rc == 0 && j < nranks; j++) {
    if (j == i) continue;
    a4 = jct_rank_ipv4(j);
    rc = req_neigh(nl, i, idx, j, &a4, err, errlen);
  }
  if (rc == 0) rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc;
}

/* Everything inside rank i's namespace, through its own sockets. */
static int configure_rank(jct_topo_t *t, size_t i, jct__nl_t *rnl, int rfd, char *err,
                          size_t errlen) {
  struct jct_rank *r = &t->rank[i];
  char et[96];
  int idx = ifindex_of(rfd, JCT_TOPO_RANK_IFNAME);
  if (idx < 0) {
    snprintf(err, errlen, "rank %zu: " JCT_TOPO_RANK_IFNAME " did not appear: %s", i,
             jct__errno_text(-idx, et, sizeof et));
    return JCT_EIO;
  }
  r->ifindex = idx;
  const char *what;
  int e = offloads_off(rfd, JCT_TOPO_RANK_IFNAME, &what);
  if (e != 0) {
    snprintf(err, errlen, "rank %zu: cannot turn %s off on " JCT_TOPO_RANK_IFNAME ": %s", i, what,
             jct__errno_text(e, et, sizeof et));
    return JCT_EIO;
  }
  int rc = req_up(rnl, i, 0, "lo", err, errlen);
  if (rc == 0 && t->kernel_ipv6) rc = req_no_ll(rnl, i, idx, JCT_TOPO_RANK_IFNAME, err, errlen);
  if (rc == 0) rc = req_up(rnl, i, idx, JCT_TOPO_RANK_IFNAME, err, errlen);
  jct_addr_t a4 = jct_rank_ipv4(i), a6 = jct_rank_ipv6(i);
  if (rc == 0) rc = req_addr(rnl, i, idx, &a4, err, errlen);
  if (rc == 0 && t->ipv6) rc = req_addr(rnl, i, idx, &a6, err, errlen);
  for (size_t j = 0; rc == 0 && j < t->n; j++) {
    if (j == i) continue;
    a4 = jct_rank_ipv4(j);
    rc = req_neigh(rnl, i, idx, j, &a4, err, errlen);
    if (rc == 0 && t->ipv6) {
      a6 = jct_rank_ipv6(j);
      rc = req_neigh(rnl, i, idx, j, &a6, err, errlen);
    }
  }
  if (rc == 0) rc = jct__nl_flush(rnl, err, errlen);
  return rc;
}

/* The switch end of rank i, after the pair exists. */
static int configure_switch_port(jct_topo_t *t, size_t i, char *err, size_t errlen) {
  struct jct_rank *r = &t->rank[i];
  char et[96];
  int idx = ifindex_of(t->ioctl_fd, r->sw_ifname);
  if (idx < 0) {
    snprintf(err, errlen, "rank %zu: %s did not appear: %s", i, r->sw_ifname,
             jct__errno_text(-idx, et, sizeof et));
    return JCT_EIO;
  }
  r->sw_ifindex = idx;
  const char *what;
  int e = offloads_off(t->ioctl_fd, r->sw_ifname, &what);
  if (e != 0) {
    snprintf(err, errlen, "rank %zu: cannot turn %s off on %s: %s", i, what, r->sw_ifname,
             jct__errno_text(e, et, sizeof et));
    return JCT_EIO;
  }
  int rc = 0;
  if (t->kernel_ipv6) rc = req_no_ll(t->nl, i, idx, r->sw_ifname, err, errlen);
  if (rc == 0) rc = req_up(t->nl, i, idx, r->sw_ifname, err, errlen);
  return rc;
}

static int build_rank(jct_topo_t *t, size_t i, char *err, size_t errlen) {
  struct jct_rank *r = &t->rank[i];
  char et[96];
  snprintf(r->sw_ifname, sizeof r->sw_ifname, "sw%u", (unsigned)i); /* i < 65535 */

  if (unshare(CLONE_NEWNET) != 0) {
    int e = errno;
    snprintf(err, errlen, "rank %zu: cannot create a network namespace: %s%s", i,
             jct__errno_text(e, et, sizeof et),
             e == ENOSPC ? " (user.max_net_namespaces reached)" : "");
    return JCT_EIO;
  }
  /* In the rank's namespace: take hold of it and open its sockets. */
  int rc = 0;
  jct__nl_t *rnl = NULL;
  int rfd = -1;
  r->nsfd = open(NS_SELF, O_RDONLY | O_CLOEXEC);
  if (r->nsfd < 0) {
    snprintf(err, errlen, "rank %zu: cannot open " NS_SELF ": %s", i,
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
  if (rc == 0) rc = req_veth(t, i, r->nsfd, err, errlen);
  if (rc == 0) rc = jct__nl_flush(t->nl, err, errlen);
  if (rc == 0) t->built = i + 1;
  if (rc == 0) rc = configure_switch_port(t, i, err, errlen);
  if (rc == 0) rc = jct__nl_flush(t->nl, err, errlen);
  if (rc == 0) rc = configure_rank(t, i, rnl, rfd, err, errlen);
  jct__nl_close(rnl);
  if (rfd >= 0) close(rfd);
  return rc;
}

/* The inode number of the initial network namespace's nsfs file: fixed by
 * the kernel (PROC_NET_INIT_INO in include/linux/proc_ns.h). */
#define INIT_NETNS_INO 0xeffffff9u

/* True when the calling thread is visibly in the host's network namespace:
 * the initial one, or pid 1's (a container's). Unprivileged callers cannot
 * look at pid 1's, nor create anything in either. */
static bool in_host_netns(void) {
  struct stat self, host;
  if (stat(NS_SELF, &self) != 0) return false;
  if (self.st_ino == INIT_NETNS_INO) return true;
  if (stat("/proc/1/ns/net", &host) != 0) return false;
  return self.st_dev == host.st_dev && self.st_ino == host.st_ino;
}

static int validate(size_t nranks, const jct_topo_opts_t *o, char *err, size_t errlen) {
  if (nranks == 0) {
    snprintf(err, errlen, "0 ranks: a topology needs at least one rank");
    return JCT_EINVAL;
  }
  if (o->mtu < 68 || o->mtu > 65535) {
    snprintf(err, errlen, "MTU %" PRIu32 " is outside 68..65535", o->mtu);
    return JCT_EINVAL;
  }
  if (o->ipv6 && o->mtu < 1280) {
    snprintf(err, errlen, "MTU %" PRIu32 " is below IPv6's minimum of 1280", o->mtu);
    return JCT_EINVAL;
  }
  const char *why;
  size_t lim = jct_topo_max_ranks(o->ipv6, &why);
  if (nranks > lim) {
    snprintf(err, errlen, "%zu ranks: more than this machine can hold (limit %zu: %s)", nranks, lim,
             why);
    return JCT_EINVAL;
  }
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
  if (in_host_netns()) {
    snprintf(err, errlen,
             "refusing to build a topology in the host's network namespace: "
             "call jct_ns_isolate() first");
    return JCT_EINVAL;
  }
  bool kernel_ipv6 = access("/proc/sys/net/ipv6", F_OK) == 0;
  if (o.ipv6 && !kernel_ipv6) {
    snprintf(err, errlen, "IPv6 asked for, but this kernel has no IPv6");
    return JCT_EINVAL;
  }
  raise_nofile(nranks);

  jct_topo_t *t = calloc(1, sizeof *t + nranks * sizeof t->rank[0]);
  if (!t) {
    snprintf(err, errlen, "%zu ranks: out of memory", nranks);
    return JCT_ENOMEM;
  }
  t->n = nranks;
  t->mtu = o.mtu;
  t->ipv6 = o.ipv6;
  t->kernel_ipv6 = kernel_ipv6;
  t->ioctl_fd = -1;
  for (size_t i = 0; i < nranks; i++)
    t->rank[i].nsfd = t->rank[i].ifindex = -1;
  t->switch_nsfd = open(NS_SELF, O_RDONLY | O_CLOEXEC);
  if (t->switch_nsfd < 0) {
    snprintf(err, errlen, "cannot open " NS_SELF ": %s", jct__errno_text(errno, et, sizeof et));
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

static int delete_group(jct_topo_t *t, char *err, size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(t->nl, &nlh, RTM_DELLINK, 0, err, errlen, "delete link group %#x",
                         SWITCH_LINK_GROUP);
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_u32(nlh, IFLA_GROUP, SWITCH_LINK_GROUP);
  return jct__nl_flush(t->nl, err, errlen);
}

void jct_topo_destroy(jct_topo_t *t) {
  if (!t) return;
  char err[256];
  /* Deleting the switch end deletes the pair: nothing waits for the
   * kernel's asynchronous namespace cleanup, so the same names can be
   * used again at once. All pairs go in one request (by link group); one
   * by one if that fails. Best effort: what is left goes with that cleanup. */
  if (t->nl && t->built > 0 && delete_group(t, err, sizeof err) < 0) {
    for (size_t i = 0; i < t->built; i++) {
      struct nlmsghdr *nlh;
      if (jct__nl_begin(t->nl, &nlh, RTM_DELLINK, 0, err, sizeof err, "rank %zu: delete %s", i,
                        t->rank[i].sw_ifname) < 0)
        break;
      struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
      ifi->ifi_family = AF_UNSPEC;
      if (t->rank[i].sw_ifindex > 0)
        ifi->ifi_index = t->rank[i].sw_ifindex;
      else
        mnl_attr_put_strz(nlh, IFLA_IFNAME, t->rank[i].sw_ifname);
    }
    (void)jct__nl_flush(t->nl, err, sizeof err);
  }
  jct__nl_close(t->nl);
  for (size_t i = 0; i < t->n; i++)
    if (t->rank[i].nsfd >= 0) close(t->rank[i].nsfd);
  if (t->switch_nsfd >= 0) close(t->switch_nsfd);
  free(t);
}

/* ---- Accessors and namespace switching ---------------------------------- */

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

static int enter(int nsfd, const char *what, char *err, size_t errlen) {
  char et[96];
  if (setns(nsfd, CLONE_NEWNET) != 0) {
    snprintf(err, errlen, "cannot enter %s: %s", what, jct__errno_text(errno, et, sizeof et));
    return JCT_EIO;
  }
  return 0;
}

static int check_rank(const jct_topo_t *t, size_t i, char *err, size_t errlen) {
  if (i < t->n) return 0;
  snprintf(err, errlen, "rank %zu: the topology has %zu ranks", i, t->n);
  return JCT_EINVAL;
}

int jct_topo_enter_rank(const jct_topo_t *t, size_t i, char *err, size_t errlen) {
  int rc = check_rank(t, i, err, errlen);
  if (rc < 0) return rc;
  char what[48];
  snprintf(what, sizeof what, "rank %zu's namespace", i);
  return enter(t->rank[i].nsfd, what, err, errlen);
}

int jct_topo_enter_switch(const jct_topo_t *t, char *err, size_t errlen) {
  return enter(t->switch_nsfd, "the switch namespace", err, errlen);
}

int jct_topo_in_rank(const jct_topo_t *t, size_t i, int (*fn)(void *arg), void *arg, char *err,
                     size_t errlen) {
  char et[96];
  int rc = check_rank(t, i, err, errlen);
  if (rc < 0) return rc;
  int back = open(NS_SELF, O_RDONLY | O_CLOEXEC);
  if (back < 0) {
    snprintf(err, errlen, "cannot open " NS_SELF ": %s", jct__errno_text(errno, et, sizeof et));
    return JCT_EIO;
  }
  rc = jct_topo_enter_rank(t, i, err, errlen);
  if (rc == 0) {
    rc = fn(arg);
    if (setns(back, CLONE_NEWNET) != 0) {
      snprintf(err, errlen, "rank %zu: cannot return from its namespace: %s", i,
               jct__errno_text(errno, et, sizeof et));
      rc = JCT_EIO;
    }
  }
  close(back);
  return rc;
}

struct socket_args {
  int domain, type, protocol;
  int fd, err;
};

static int socket_fn(void *arg) {
  struct socket_args *a = arg;
  a->fd = socket(a->domain, a->type, a->protocol);
  a->err = a->fd < 0 ? errno : 0;
  return 0;
}

int jct_topo_socket(const jct_topo_t *t, size_t i, int domain, int type, int protocol, char *err,
                    size_t errlen) {
  char et[96];
  struct socket_args a = {domain, type, protocol, -1, 0};
  int rc = jct_topo_in_rank(t, i, socket_fn, &a, err, errlen);
  if (rc < 0) {
    if (a.fd >= 0) close(a.fd);
    return rc;
  }
  if (a.fd < 0) {
    snprintf(err, errlen, "rank %zu: socket: %s", i, jct__errno_text(a.err, et, sizeof et));
    return JCT_EIO;
  }
  return a.fd;
}
