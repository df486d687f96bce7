/* The emulated fabric's topology: ranks in network namespaces, star-wired
 * to the switch by veth pairs (DESIGN.md, decisions 2 and 3).
 *
 * The process first calls jct_ns_isolate() once, single-threaded: it moves
 * into a private network namespace of its own (the "switch namespace"),
 * inside a new user namespace when not root, so that nothing is ever
 * created in the host's namespace and the kernel removes everything when
 * the process ends, SIGKILL included.
 *
 * jct_topo_create() then makes, for each rank i (0-based):
 *   - a network namespace held only by a file descriptor (never named);
 *   - a veth pair: "eth0" in the rank's namespace, "sw<i>" in the switch
 *     namespace, both up, MTU opts->mtu; the rank's "lo" up;
 *   - on eth0: MAC 02:00:c6:12:HH:LL with HHLL = i + 1 (locally
 *     administered), IPv4 198.18.0.0 + (i + 1) /15 (RFC 2544), IPv6
 *     2001:2::(i + 1) /48 (RFC 5180, no DAD); sw<i> has MAC 02:00:c6:13:HH:LL;
 *   - permanent neighbour entries on eth0 for every other rank (IPv4 and
 *     IPv6), so no ARP or neighbour discovery ever crosses the fabric;
 *   - TX checksum offload, TSO, GSO and GRO off on both ends, so frames
 *     seen by the switch carry real checksums and fit the MTU;
 *   - no IPv6 link-local addresses (addr_gen_mode none), so no DAD or
 *     router solicitations. The kernel still sends an MLDv2 report or two
 *     for each rank's solicited-node group when IPv6 is on: the switch sees
 *     those (multicast destination 33:33:ff:..).
 * Nothing else: the switch namespace has no bridge and no addresses, so
 * frames reach another rank only when a userspace switch forwards them
 * between sw<i> ports.
 *
 * Namespace changes (enter, in_rank, create itself) affect the calling
 * thread only, as setns(2) does.
 */
#ifndef JCTLAB_TOPO_H
#define JCTLAB_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "jctlab/decode.h"

#define JCT_TOPO_MTU_DEFAULT 9000
#define JCT_TOPO_RANK_IFNAME "eth0"
#define JCT_TOPO_MAX_RANKS 65535 /* the MAC scheme's 16 bits (i + 1 <= 0xffff) */

/* File descriptors jctlab needs per rank when it runs, which the rank
 * limit accounts for: the namespace, the switch's port, the rank's socket,
 * the rank's PFC listener. Plus JCT_TOPO_FD_RESERVE for everything else. */
#define JCT_TOPO_FDS_PER_RANK 4
#define JCT_TOPO_FD_RESERVE 64

typedef struct {
  uint32_t mtu; /* bytes, IP MTU of both veth ends; 0: JCT_TOPO_MTU_DEFAULT. 68..65535,
                   at least 1280 with IPv6 */
  bool ipv6;    /* give ranks IPv6 addresses and neighbours too */
} jct_topo_opts_t;

typedef struct jct_topo jct_topo_t;

/* Enter a private network namespace (and, when not root, a new user
 * namespace first, mapping the caller's uid and gid to 0 inside). Call
 * once, before any thread starts. Afterwards the process holds
 * CAP_NET_ADMIN in its own namespace, and jct_topo_create() works there.
 * Errors: JCT_EIO with the reason and a hint ("cannot create a user
 * namespace: Operation not permitted (EPERM) (...)"). */
int jct_ns_isolate(char *err, size_t errlen);

/* The most ranks this machine can hold, and what limits it ("open files",
 * "memory", "network namespaces", "addresses") in *why (why may be NULL).
 * Open files count against the RLIMIT_NOFILE hard limit, as
 * jct_topo_create raises the soft one. ipv6 matters: neighbour entries
 * grow as nranks squared. */
size_t jct_topo_max_ranks(bool ipv6, const char **why);

/* Build the topology for nranks ranks in the calling thread's current
 * network namespace, which becomes the switch namespace (refused when it
 * is visibly the host's: call jct_ns_isolate() first). opts NULL: MTU
 * JCT_TOPO_MTU_DEFAULT, IPv6 on. Raises the RLIMIT_NOFILE soft limit
 * toward the hard limit when the ranks need it.
 * Errors: JCT_EINVAL (nranks 0, beyond jct_topo_max_ranks: "5000 ranks:
 * more than this machine can hold (limit 4984: open files)", bad MTU);
 * JCT_EIO (a namespace or netlink request failed: err names the rank and
 * the request, with the kernel's reason); JCT_ENOMEM. On error nothing is
 * left behind and *topo is NULL. The calling thread ends up back in the
 * switch namespace either way. */
int jct_topo_create(jct_topo_t **topo, size_t nranks, const jct_topo_opts_t *opts, char *err,
                    size_t errlen);

/* Delete every veth pair and close every file descriptor the topology
 * holds. Rank namespaces are gone when the last reference goes: sockets
 * created in a rank's namespace keep it (not its veth) alive until they
 * are closed. NULL is fine. */
void jct_topo_destroy(jct_topo_t *topo);

size_t jct_topo_nranks(const jct_topo_t *t);
uint32_t jct_topo_mtu(const jct_topo_t *t);
bool jct_topo_ipv6(const jct_topo_t *t);

/* The switch namespace's fd, and rank i's namespace fd (for setns(2) or
 * IFLA_NET_NS_FD; owned by the topology: do not close). -1 when i is out
 * of range. */
int jct_topo_switch_nsfd(const jct_topo_t *t);
int jct_topo_rank_nsfd(const jct_topo_t *t, size_t i);

/* Rank i's interface in its namespace: name ("eth0"), ifindex there. */
const char *jct_topo_rank_ifname(const jct_topo_t *t, size_t i);
int jct_topo_rank_ifindex(const jct_topo_t *t, size_t i);

/* The switch end of rank i's link: name ("sw<i>"), ifindex and MAC in the
 * switch namespace. The ifname is NULL and the ifindex -1 when i is out of
 * range. */
const char *jct_topo_switch_ifname(const jct_topo_t *t, size_t i);
int jct_topo_switch_ifindex(const jct_topo_t *t, size_t i);

/* Addressing, a pure function of the rank index (valid for
 * i < JCT_TOPO_MAX_RANKS, with or without a topology): MAC, switch-port
 * MAC, IPv4 and IPv6 addresses as the decoder reports them
 * (jct_addr_t.family 4 or 6). */
void jct_rank_mac(size_t i, uint8_t mac[6]);
void jct_switch_port_mac(size_t i, uint8_t mac[6]);
jct_addr_t jct_rank_ipv4(size_t i);
jct_addr_t jct_rank_ipv6(size_t i);

/* Rank i's address as a socket address (AF_INET or AF_INET6) with port
 * (host order), for bind/sendto. Returns the length, or 0 for a bad family
 * or i out of range. */
socklen_t jct_rank_sockaddr(size_t i, int family, uint16_t port, struct sockaddr_storage *ss);

/* Move the calling thread into rank i's namespace, or back into the
 * switch namespace. Errors: JCT_EINVAL (i out of range), JCT_EIO (setns). */
int jct_topo_enter_rank(const jct_topo_t *t, size_t i, char *err, size_t errlen);
int jct_topo_enter_switch(const jct_topo_t *t, char *err, size_t errlen);

/* What jct_topo_in_rank() runs in a rank's namespace, with the arg given
 * to it (as uv_thread_cb is to uv_thread_create). Returns >= 0 for success
 * or a JCT_E* code. */
typedef int (*jct_topo_in_rank_cb)(void *arg);

/* Run cb(arg) with the calling thread in rank i's namespace, then put the
 * thread back in the namespace it was in. Returns cb's result, or
 * JCT_EINVAL / JCT_EIO when the namespace could not be entered (cb never
 * called) or left (the thread then stays where it was moved: err says
 * so). */
int jct_topo_in_rank(const jct_topo_t *t, size_t i, jct_topo_in_rank_cb cb, void *arg, char *err,
                     size_t errlen);

/* socket(2) in rank i's namespace (a socket stays in the namespace it was
 * created in). Returns the fd, or JCT_EINVAL / JCT_EIO with err set. */
int jct_topo_socket(const jct_topo_t *t, size_t i, int domain, int type, int protocol, char *err,
                    size_t errlen);

#endif
