/* A Linux bridge over the switch ends of a topology's veths, the peer the
 * benchmarks measure jctlab's forwarding against (bench/fabric, bench/wire):
 * made over rtnetlink (RTM_NEWLINK kind "bridge", STP and multicast
 * snooping off, IFLA_MASTER on every sw<i>, static FDB entries with
 * NTF_MASTER/NUD_NOARP for the rank MACs, so it never floods, as jctlab's
 * switch has static entries), deleted afterwards. */
#ifndef JCT_BENCH_BRIDGE_H
#define JCT_BENCH_BRIDGE_H

#include <stddef.h>

#include "harness/base/netlink.h"
#include "jctlab/topo.h"

#define BRIDGE_IFNAME "jctbr0"

/* Make the bridge over every sw<i> of t and set it up; *br_out its
 * ifindex. Returns 0 or JCT_EIO with err set. */
int jct__bridge_up(jct__nl_t *nl, const jct_topo_t *t, int *br_out, char *err, size_t errlen);

/* Delete it (which frees its ports and their FDB entries). */
int jct__bridge_down(jct__nl_t *nl, int br, char *err, size_t errlen);

#endif
