/* Links, addresses and neighbours of the topology, over rtnetlink and the
 * ethtool ioctl (harness/fabric/topo_link.c): the requests topo.c batches
 * while it builds the ranks, and the configuration of interfaces made
 * outside a topology (a lab VM's TAP, or its NIC as the VM sees it).
 *
 * Requests are queued in a jct__nl_t batch (harness/base/netlink.h) and go
 * out at jct__nl_flush(); i is the rank a request is for, named in its
 * error label ("rank 3: set sw3 up"). Errors are those of jct__nl_begin()
 * unless said otherwise.
 */
#ifndef JCT_TOPO_LINK_H
#define JCT_TOPO_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/netlink.h"

/* Create rank i's veth pair from the switch side: sw_ifname here, in the
 * link group every switch end shares, and "eth0" born in the namespace of
 * nsfd; both with their MACs (topo.h), MTU mtu, and down. */
int jct__link_veth(jct__nl_t *nl, size_t i, const char *sw_ifname, int nsfd, uint32_t mtu,
                   char *err, size_t errlen);

/* Get ifname (fd: a socket in its namespace) ready for the fabric: its
 * offloads off (ioctls, at once), then, queued, IPv6 address generation off
 * (when no_ll) and the link up. Returns its ifindex (> 0), or JCT_EIO when
 * it did not appear or an offload would not go off. */
int jct__link_ready(int fd, jct__nl_t *nl, size_t i, const char *ifname, bool no_ll, char *err,
                    size_t errlen);

/* Link up, by ifindex, or by name when ifindex is 0. */
int jct__link_up(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                 size_t errlen);

/* Rank i's addresses on its eth0 (ifindex): IPv4, and IPv6 when ipv6;
 * then permanent neighbour entries for every other rank of nranks, IPv4
 * and (when ipv6) IPv6, so that no ARP or neighbour discovery is needed. */
int jct__link_rank_addrs(jct__nl_t *nl, size_t i, int ifindex, size_t nranks, bool ipv6, char *err,
                         size_t errlen);

/* Rank i's permanent neighbour entries again (created or replaced): the
 * kernel flushes them when its interface is set down (a flap at=host). */
int jct__link_rank_neighs(jct__nl_t *nl, size_t i, int ifindex, size_t nranks, bool ipv6, char *err,
                          size_t errlen);

/* Delete every switch end (the pairs go with them) in one request, flushed
 * at once: the kernel then waits for RCU once, not per pair. */
int jct__link_del_group(jct__nl_t *nl, char *err, size_t errlen);

/* Delete rank i's switch end, by ifindex, or by name when ifindex <= 0. */
int jct__link_del(jct__nl_t *nl, size_t i, int ifindex, const char *ifname, char *err,
                  size_t errlen);

/* Interfaces made outside a topology, configured in the calling thread's
 * namespace, each with a netlink socket of its own (errors JCT_EIO with
 * the request and the kernel's reason in err):
 * - a switch port (a lab VM's TAP): MTU, no IPv6 link-local address, up;
 * - rank i's NIC as the rank itself sees it (a lab VM's eth0): the same,
 *   plus lo up, rank i's IPv4 address (topo.h) and permanent IPv4
 *   neighbours for the other ranks of nranks. */
int jct__topo_port_iface(const char *ifname, uint32_t mtu, char *err, size_t errlen);
int jct__topo_configure_iface(size_t i, size_t nranks, const char *ifname, uint32_t mtu, char *err,
                              size_t errlen);

#endif
