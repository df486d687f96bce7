/* A flap's link at an agent's own host, and its guard (agent_link.h). */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_guard.h"
#include "agent_link.h"
#include "common/errf.h"
#include "harness/base/netlink.h"
#include "harness/fabric/hostcut.h"
#include "harness/transport/rdma_sysfs.h"
#include "jctlab/error.h"

struct jct__agent_link {
  char netdev[IFNAMSIZ];
  int ifindex; /* the agent's guard sets it up if the agent dies (agent_guard.h) */
  jct__hostcut_t *cut; /* a soft RoCE device's netdev: cut under it, never set down */
};

static int set_link(int ifindex, const char *netdev, bool up, char *err, size_t errlen) {
  jct__nl_t *nl;
  int rc = jct__nl_open(&nl, err, errlen);
  if (rc) return rc;
  struct nlmsghdr *nlh;
  rc = jct__nl_begin(nl, &nlh, RTM_NEWLINK, 0, err, errlen, "flap: set %s %s", netdev,
                     up ? "up" : "down");
  if (rc == 0) {
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = ifindex;
    ifi->ifi_flags = up ? IFF_UP : 0;
    ifi->ifi_change = IFF_UP;
    rc = jct__nl_flush(nl, err, errlen);
  }
  jct__nl_close(nl);
  return rc < 0 ? JCT_EIO : 0;
}

/* RTM_NEWLINK setting ifindex up, with an ACK asked, into buf. */
static size_t up_request(char *buf, int ifindex) {
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = 1;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  return nlh->nlmsg_len;
}

int jct__agent_link_new(jct__agent_link_t **out, const char *netdev, char *err, size_t errlen) {
  *out = NULL;
  int ifindex = (int)if_nametoindex(netdev);
  if (!ifindex)
    return jct__errf(err, errlen, JCT_EINVAL, "flap: no network device %s here", netdev);
  jct__agent_link_t *l = calloc(1, sizeof *l);
  if (!l) return JCT_ENOMEM;
  snprintf(l->netdev, sizeof l->netdev, "%s", netdev);
  l->ifindex = ifindex;
  char dev[64], label[JCT__GUARD_LABEL_MAX];
  if (jct__rdma_soft_on(NULL, netdev, dev, sizeof dev)) { /* no guard: the links die with us */
    snprintf(label, sizeof label, "flap: %s (%s's netdev)", netdev, dev);
    int rc = jct__hostcut_new(&l->cut, ifindex, label, err, errlen);
    if (rc) {
      free(l);
      return rc;
    }
    fprintf(stderr,
            "jctlab agent: flap on %s: %s is soft-RoCE there, so its link is cut (every frame "
            "lost both ways by tcx links, gone with this process) and %s stays up: set down, "
            "its routes would go and %s would put its QPs in error\n",
            netdev, dev, netdev, dev);
    *out = l;
    return 0;
  }
  char msg[JCT__GUARD_REQ_MAX];
  size_t len = up_request(msg, ifindex);
  snprintf(label, sizeof label, "set the flapped link %s up again", netdev);
  int rc =
      jct__agent_guard_keep(jct__guard_key(JCT__GUARD_LINK, ifindex), msg, len, label, err, errlen);
  if (rc) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int jct__agent_link_set(jct__agent_link_t *l, bool up, char *err, size_t errlen) {
  if (l->cut) return jct__hostcut_set(l->cut, !up, err, errlen);
  return set_link(l->ifindex, l->netdev, up, err, errlen);
}

bool jct__agent_link_is_up(const char *netdev) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", netdev);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  bool up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP);
  if (s >= 0) close(s);
  return up;
}

void jct__agent_link_free(jct__agent_link_t *l) {
  if (!l) return;
  char err[200];
  if (l->cut) {
    jct__hostcut_free(l->cut); /* mended */
    free(l);
    return;
  }
  if (jct__agent_link_set(l, true, err, sizeof err)) fprintf(stderr, "jctlab agent: %s\n", err);
  jct__agent_guard_forget(jct__guard_key(JCT__GUARD_LINK, l->ifindex));
  free(l);
}

bool jct__agent_link_socket_if(int fd, char *ifname, size_t len) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  struct ifaddrs *all, *a;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) || getifaddrs(&all)) return false;
  bool found = false;
  for (a = all; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != ss.ss_family) continue;
    if (ss.ss_family == AF_INET)
      found = ((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr ==
              ((struct sockaddr_in *)&ss)->sin_addr.s_addr;
    else if (ss.ss_family == AF_INET6)
      found = !memcmp(&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr,
                      &((struct sockaddr_in6 *)&ss)->sin6_addr, sizeof(struct in6_addr));
    if (found) snprintf(ifname, len, "%s", a->ifa_name);
  }
  freeifaddrs(all);
  return found;
}
