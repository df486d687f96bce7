/* Shaping an agent's NIC to the emulated link rate (internal; see
 * agent_shape.c for why and how). */
#ifndef JCT_AGENT_SHAPE_H
#define JCT_AGENT_SHAPE_H

#include <stddef.h>
#include <stdint.h>

/* Make a tbf of rate_bps (wire bits per second, preamble to gap counted)
 * the root qdisc of ifname, in the calling thread's network namespace;
 * mtu: the interface's IP MTU. Replaces what was there. Errors: JCT_EIO
 * (no such interface, the kernel refused: err gives its reason, e.g. no
 * sch_tbf), JCT_EINVAL (rate below 8 kbit/s). */
int jct__agent_shape(const char *ifname, uint64_t rate_bps, uint32_t mtu, char *err, size_t errlen);

#endif
