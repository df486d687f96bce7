/* Internals of the topology shared by harness/fabric/topo.c (limits,
 * building and tearing down, accessors) and harness/fabric/topo_ns.c (the
 * process's isolation, entering a rank's namespace, running a function
 * there). Not a public interface: include/jctlab/topo.h is.
 */
#ifndef JCT_TOPO_INT_H
#define JCT_TOPO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net/if.h>

#include "jctlab/topo.h"
#include "harness/base/netlink.h"

/* The calling thread's network namespace (namespaces(7)): opened, it holds
 * the namespace; stat, it names it (st_dev, st_ino). */
#define JCT__NS_SELF "/proc/thread-self/ns/net"

struct jct__topo_rank {
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
  struct jct__topo_rank rank[];
};

/* topo_ns.c: true when the calling thread is visibly in the host's network
 * namespace (the initial one, or pid 1's). */
bool jct__ns_is_host(void);

#endif
