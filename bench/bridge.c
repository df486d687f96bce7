/* The Linux bridge the benchmarks compare with (bridge.h). */
#include "bridge.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "jctlab/error.h"

static void put_ifi(struct nlmsghdr *nlh, int ifindex, unsigned flags, unsigned change) {
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = flags;
  ifi->ifi_change = change;
}

int jct__bridge_up(jct__nl_t *nl, const jct_topo_t *t, int *br_out, char *err, size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                         "create bridge " BRIDGE_IFNAME);
  if (rc < 0) return rc;
  put_ifi(nlh, 0, 0, 0);
  mnl_attr_put_strz(nlh, IFLA_IFNAME, BRIDGE_IFNAME);
  struct nlattr *li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
  struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  mnl_attr_put_u32(nlh, IFLA_BR_STP_STATE, 0);
  mnl_attr_put_u8(nlh, IFLA_BR_MCAST_SNOOPING, 0);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, li);
  if ((rc = jct__nl_flush(nl, err, errlen)) < 0) return rc;
  int br = (int)if_nametoindex(BRIDGE_IFNAME);
  if (br <= 0) {
    snprintf(err, errlen, BRIDGE_IFNAME ": created but not found: %s", strerror(errno));
    return JCT_EIO;
  }
  *br_out = br;
  size_t n = jct_topo_nranks(t);
  for (size_t i = 0; i < n; i++) {
    const char *sw = jct_topo_switch_ifname(t, i);
    rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "enslave %s to " BRIDGE_IFNAME, sw);
    if (rc < 0) return rc;
    put_ifi(nlh, jct_topo_switch_ifindex(t, i), 0, 0);
    mnl_attr_put_u32(nlh, IFLA_MASTER, (uint32_t)br);
  }
  for (size_t i = 0; i < n; i++) {
    const char *sw = jct_topo_switch_ifname(t, i);
    rc = jct__nl_begin(nl, &nlh, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL, err, errlen,
                       "static FDB entry for rank %zu on %s", i, sw);
    if (rc < 0) return rc;
    struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof *nd);
    nd->ndm_family = AF_BRIDGE;
    nd->ndm_ifindex = jct_topo_switch_ifindex(t, i);
    nd->ndm_state = NUD_NOARP; /* "static"; NUD_PERMANENT would mean the bridge's own */
    nd->ndm_flags = NTF_MASTER;
    uint8_t mac[6];
    jct_rank_mac(i, mac);
    mnl_attr_put(nlh, NDA_LLADDR, sizeof mac, mac);
  }
  rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "set " BRIDGE_IFNAME " up");
  if (rc < 0) return rc;
  put_ifi(nlh, br, IFF_UP, IFF_UP);
  return jct__nl_flush(nl, err, errlen);
}

/* Deleting the bridge frees its ports (and their FDB entries). */
int jct__bridge_down(jct__nl_t *nl, int br, char *err, size_t errlen) {
  struct nlmsghdr *nlh;
  int rc = jct__nl_begin(nl, &nlh, RTM_DELLINK, 0, err, errlen, "delete bridge " BRIDGE_IFNAME);
  if (rc < 0) return rc;
  put_ifi(nlh, br, 0, 0);
  return jct__nl_flush(nl, err, errlen);
}

