/* Links, addresses and neighbours of the topology (harness/fabric/topo_link.h).
 *
 * The veth pair is made from the switch side with one RTM_NEWLINK of kind
 * "veth" whose VETH_INFO_PEER carries the peer's own ifinfomsg and
 * attributes, IFLA_NET_NS_FD among them, so "eth0" is born in the rank's
 * namespace (drivers/net/veth.c, veth_newlink). Both ends are created down;
 * IPv6 address generation is switched off (IFLA_INET6_ADDR_GEN_MODE none:
 * no link-local address, no DAD, no router solicitation) before they go up.
 * Offloads go off with the legacy ethtool ioctls (ETHTOOL_STXCSUM, STSO,
 * SGSO, SGRO; linux/ethtool.h). Addresses are 198.18.0.0/15 (RFC 2544)
 * with its broadcast, and 2001:2::/48 (RFC 5180) without DAD
 * (IFA_F_NODAD); neighbours are NUD_PERMANENT.
 *
 * Sources: rtnetlink(7) (RTM_NEWLINK, RTM_DELLINK, RTM_NEWADDR,
 * RTM_NEWNEIGH), netdevice(7) (SIOCGIFINDEX, SIOCETHTOOL), linux/if_link.h,
 * linux/veth.h, linux/neighbour.h.
 */
#include "topo_link.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "jctlab/topo.h"

/* The link group of every sw<i> ("jct"), so that destroy deletes them all
 * with one RTM_DELLINK. */
#define SWITCH_LINK_GROUP 0x6a6374u

static void ifreq_for(struct ifreq *ifr, const char *ifname) {
  memset(ifr, 0, sizeof *ifr);
  snprintf(ifr->ifr_name, sizeof ifr->ifr_name, "%s", ifname);
}

static int ifindex_of(int fd, const char *ifname) {
  struct ifreq ifr;
  ifreq_for(&ifr, ifname);
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
    ifreq_for(&ifr, ifname);
    ifr.ifr_data = (char *)&ev;
    if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) {
      *what = cmds[k].name;
      return errno;
    }
  }
  return 0;
}

/* A link request's header: an ifinfomsg for ifindex (0: by name, or none). */
static struct ifinfomsg *put_ifinfo(struct nlmsghdr *nlh, int ifindex) {
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  return ifi;
}

/* Attributes of one end of the veth pair. */
static void put_link_attrs(struct nlmsghdr *nlh, const char *ifname, const uint8_t mac[6],
                           uint32_t mtu) {
  mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
  mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
  mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
}

int jct__link_veth(jct__nl_t *nl, size_t i, const char *sw_ifname, int nsfd, uint32_t mtu,
                   char *err, size_t errlen) {
  uint8_t mac[6], sw_mac[6];
  jct_rank_mac(i, mac);
  jct_switch_port_mac(i, sw_mac);
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                         "rank %zu: create veth pair %s <-> " JCT_TOPO_RANK_IFNAME, i, sw_ifname);
  if (rc < 0) return rc;
  put_ifinfo(nlh, 0);
  put_link_attrs(nlh, sw_ifname, sw_mac, mtu);
  mnl_attr_put_u32(nlh, IFLA_GROUP, SWITCH_LINK_GROUP);
  struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  put_ifinfo(nlh, 0);
  put_link_attrs(nlh, JCT_TOPO_RANK_IFNAME, mac, mtu);
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
  put_ifinfo(nlh, ifindex);
  struct nlattr *spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
  struct nlattr *in6 = mnl_attr_nest_start(nlh, AF_INET6);
  mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
  mnl_attr_nest_end(nlh, in6);
  mnl_attr_nest_end(nlh, spec);
  return 0;
}

int jct__link_up(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                 size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "rank %zu: set %s up", i, ifname);
  if (rc < 0) return rc;
  struct ifinfomsg *ifi = put_ifinfo(nlh, ifindex);
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  if (ifindex == 0) mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
  return 0;
}

int jct__link_ready(int fd, jct__nl_t *nl, size_t i, const char *ifname, bool no_ll, char *err,
                    size_t errlen) {
  char et[96];
  int idx = ifindex_of(fd, ifname);
  if (idx < 0)
    return jct__errf(err, errlen, JCT_EIO, "rank %zu: %s did not appear: %s", i, ifname,
                     jct__errno_text(-idx, et, sizeof et));
  const char *what;
  int e = offloads_off(fd, ifname, &what);
  if (e != 0)
    return jct__errf(err, errlen, JCT_EIO, "rank %zu: cannot turn %s off on %s: %s", i, what,
                     ifname, jct__errno_text(e, et, sizeof et));
  int rc = no_ll ? req_no_ll(nl, i, idx, ifname, err, errlen) : 0;
  if (rc == 0) rc = jct__link_up(nl, i, idx, ifname, err, errlen);
  return rc < 0 ? rc : idx;
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

static int req_neigh(jct__nl_t *nl, size_t i, int ifindex, size_t j, const jct_addr_t *a,
                     uint16_t flags, char *err, size_t errlen) {
  char as[64];
  uint8_t mac[6];
  jct_rank_mac(j, mac);
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWNEIGH, flags, err, errlen,
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

static int rank_neighs(jct__nl_t *nl, size_t i, int ifindex, size_t nranks, bool ipv6,
                       uint16_t flags, char *err, size_t errlen) {
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < nranks; j++) {
    if (j == i) continue;
    jct_addr_t a4 = jct_rank_ipv4(j), a6 = jct_rank_ipv6(j);
    rc = req_neigh(nl, i, ifindex, j, &a4, flags, err, errlen);
    if (rc == 0 && ipv6) rc = req_neigh(nl, i, ifindex, j, &a6, flags, err, errlen);
  }
  return rc;
}

int jct__link_rank_addrs(jct__nl_t *nl, size_t i, int ifindex, size_t nranks, bool ipv6, char *err,
                         size_t errlen) {
  jct_addr_t a4 = jct_rank_ipv4(i), a6 = jct_rank_ipv6(i);
  int rc = req_addr(nl, i, ifindex, &a4, err, errlen);
  if (rc == 0 && ipv6) rc = req_addr(nl, i, ifindex, &a6, err, errlen);
  if (rc == 0)
    rc = rank_neighs(nl, i, ifindex, nranks, ipv6, NLM_F_CREATE | NLM_F_EXCL, err, errlen);
  return rc;
}

int jct__link_rank_neighs(jct__nl_t *nl, size_t i, int ifindex, size_t nranks, bool ipv6, char *err,
                          size_t errlen) {
  return rank_neighs(nl, i, ifindex, nranks, ipv6, NLM_F_CREATE | NLM_F_REPLACE, err, errlen);
}

int jct__link_del_group(jct__nl_t *nl, char *err, size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_DELLINK, 0, err, errlen, "delete link group %#x",
                         SWITCH_LINK_GROUP);
  if (rc < 0) return rc;
  put_ifinfo(nlh, 0);
  mnl_attr_put_u32(nlh, IFLA_GROUP, SWITCH_LINK_GROUP);
  return jct__nl_flush(nl, err, errlen);
}

int jct__link_del(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                  size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_DELLINK, 0, err, errlen, "rank %zu: delete %s", i, ifname);
  if (rc < 0) return rc;
  put_ifinfo(nlh, ifindex > 0 ? ifindex : 0);
  if (ifindex <= 0) mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
  return 0;
}

/* ---- Interfaces made outside a topology ---------------------------------- */

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
    put_ifinfo(nlh, idx);
    mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
  }
  if (rc == 0) rc = jct__link_up(nl, i, idx, ifname, err, errlen);
  return rc;
}

/* Open a socket for ifname's requests; *idx its index. */
static int open_for(const char *ifname, int *idx, jct__nl_t **nl, char *err, size_t errlen) {
  *idx = (int)if_nametoindex(ifname);
  if (*idx <= 0) return jct__errf(err, errlen, JCT_EIO, "%s: no such interface", ifname);
  return jct__nl_open(nl, err, errlen);
}

int jct__topo_port_iface(const char *ifname, uint32_t mtu, char *err, size_t errlen) {
  jct__nl_t *nl;
  int idx, rc = open_for(ifname, &idx, &nl, err, errlen);
  if (rc) return rc;
  rc = req_iface(nl, 0, idx, ifname, mtu, err, errlen);
  if (rc == 0) rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc;
}

/* As the VM's agent sees it: harness/cli/cmd_agent.c. */
int jct__topo_configure_iface(size_t i, size_t nranks, const char *ifname, uint32_t mtu, char *err,
                              size_t errlen) {
  jct__nl_t *nl;
  int idx, rc = open_for(ifname, &idx, &nl, err, errlen);
  if (rc) return rc;
  rc = jct__link_up(nl, i, 0, "lo", err, errlen);
  if (rc == 0) rc = req_iface(nl, i, idx, ifname, mtu, err, errlen);
  if (rc == 0) rc = jct__link_rank_addrs(nl, i, idx, nranks, false, err, errlen);
  if (rc == 0) rc = jct__nl_flush(nl, err, errlen);
  jct__nl_close(nl);
  return rc;
}
