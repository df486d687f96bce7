/* The fabric's shape (DESIGN.md, decision 11): today's star (one switch,
 * every rank on it) or a two-tier leaf-spine Clos -- L leaf switches of H
 * host ports each, S spine switches, every leaf linked to every spine --
 * and placement, which host each rank lands on.
 *
 * All switches are jctlab's own (switch.h) in one process and loop; only
 * the hosts' links are veths (topo.h). A link between a leaf and a spine is
 * internal: the egress port of one switch whose "wire" hands each frame to
 * the other switch's ingress at its departure time (serialization at the
 * link's rate, plus its propagation delay), with its own buffers, PFC
 * (pause frames between switches stop the upstream egress), ECN and
 * counters. Forwarding is by destination host, as a routed (L3) Clos's /32
 * routes: at a leaf, a local host's port, else any spine (an ECMP group of
 * all the uplinks, hashed per jct_switch_ecmp_hash with ecmp_seed); at a
 * spine, the destination's leaf. Frames keep their MACs (the emulation
 * forwards on them) and TTL; floods never cross a leaf-spine link.
 *
 * Text forms (jctlab run --topology, scenario key topology:):
 *   star
 *   leaf-spine:leaves=L,spines=S,hosts-per-leaf=H[,uplink-rate=RATE][,uplink-delay=TIME]
 * uplink-rate and uplink-delay are the leaf-spine links' (both directions);
 * by default those of the host links. 2:1 oversubscription at a leaf is
 * uplink-rate = H * host rate / (2 * S).
 * Placement (--placement, placement:):
 *   packed        rank i on host i: ranks fill a leaf before the next;
 *   spread        rank i on leaf i mod L (slot i / L): ring neighbours are
 *                 under different leaves, every step crosses the spines;
 *   random:SEED   a seeded shuffle of the hosts;
 *   LIST          host of each rank, comma-separated ("0,2,4,6"), distinct.
 * Host h is port h mod H of leaf h / H.
 */
#ifndef JCTLAB_CLOS_H
#define JCTLAB_CLOS_H

#include <stddef.h>
#include <stdint.h>

#include "jctlab/switch.h"

#define JCT_CLOS_MAX_LEAVES 32
#define JCT_CLOS_MAX_SPINES JCT_SWITCH_MAX_ECMP_WAYS

typedef enum { JCT_PLACE_PACKED = 0, JCT_PLACE_SPREAD, JCT_PLACE_RANDOM, JCT_PLACE_LIST } jct_place_kind_t;

typedef struct {
  jct_place_kind_t kind;
  uint64_t seed;      /* random:SEED */
  const char *list;   /* LIST, as given (not copied) */
} jct_placement_t;

typedef struct {
  uint32_t leaves, spines, hosts_per_leaf; /* 0 leaves: the star */
  uint64_t uplink_rate_bps;                /* 0: the host links' */
  uint64_t uplink_delay_ns;                /* UINT64_MAX: the host links' */
  uint32_t ecmp_seed;                      /* jct_switch_ecmp_hash's seed (default 0) */
  jct_switch_ecmp_mode_t ecmp_mode;        /* hash (default); what-ifs: per-packet, flowlet */
  uint64_t ecmp_flowlet_gap_ns;            /* flowlet: the gap (0: the switch's 500 us) */
  jct_placement_t placement;
  uint64_t reroute_detect_ns; /* jct_clos_reroute_parse: 0 the default, JCT_CLOS_REROUTE_OFF */
} jct_clos_t;

/* Rerouting around a link that is down (fabric.h, "Rerouting"): how long
 * the switches take to notice a leaf-spine cable went down (or came back)
 * before they change their ECMP groups. Default 1 ms: a loss-of-signal
 * link-down interrupt serviced by the switch's software, which then
 * rewrites the ECMP group in the ASIC -- between hardware fast failover
 * (tens of microseconds: pre-programmed alternates, ipspace.net "Fast
 * Failover: Hardware and Software Implementations", 2020) and BFD
 * (RFC 5880: detect multiplier x interval, 3 x 50 ms = 150 ms at the
 * aggressive end, 3 x 300 ms common). */
#define JCT_CLOS_REROUTE_DETECT_DEFAULT_NS 1000000ull
#define JCT_CLOS_REROUTE_DETECT_MAX_NS 10000000000ull /* 10 s */
#define JCT_CLOS_REROUTE_OFF UINT64_MAX

/* Read a detection time: a time above 0 and up to 10 s ("1ms", "50us"),
 * or "off" (no rerouting: the groups keep a dead member, its flows wait
 * for the link). Errors: JCT_EINVAL naming the word ("reroute detection
 * '-1ms': not a time from 1ns to 10s, or off"). */
int jct_clos_reroute_parse(jct_clos_t *c, const char *text, char *err, size_t errlen);

/* The detection time in force: the default for 0; JCT_CLOS_REROUTE_OFF. */
uint64_t jct_clos_reroute_detect_ns(const jct_clos_t *c);

/* Read an ECMP mode: "hash", "per-packet", "flowlet" or "flowlet:GAP"
 * ("flowlet:20ms"). Errors: JCT_EINVAL naming the word. */
int jct_clos_ecmp_parse(jct_clos_t *c, const char *text, char *err, size_t errlen);

/* The star: leaves 0, placement packed, uplink defaults. */
void jct_clos_default(jct_clos_t *c);

/* Read a topology text into c (its placement and ECMP fields untouched).
 * Errors: JCT_EINVAL with err naming the bad word ("leaves=0: a leaf-spine
 * fabric has 2 to 32 leaves"). */
int jct_clos_parse(jct_clos_t *c, const char *text, char *err, size_t errlen);

/* Read a placement text. LIST is checked by jct_clos_place. Errors:
 * JCT_EINVAL ("placement 'tight': not packed, spread, random:SEED or a list
 * of hosts"). */
int jct_placement_parse(jct_placement_t *p, const char *text, char *err, size_t errlen);

/* How many hosts the shape has: leaves * hosts_per_leaf (the star: 0, a
 * host per rank). */
uint32_t jct_clos_hosts(const jct_clos_t *c);

/* Place nranks ranks: host_of[i] for each rank. Errors: JCT_EINVAL (more
 * ranks than hosts, a LIST entry that is no host, repeated, or a LIST of
 * another length). Pure: the same input gives the same placement. */
int jct_clos_place(const jct_clos_t *c, uint32_t nranks, uint32_t *host_of, char *err,
                   size_t errlen);

/* The injectors' port number (injector.h, port=N) of a link's name in a
 * fabric of nranks ranks: "leaf<l>:spine<s>" is nranks + l*S + s,
 * "spine<s>:leaf<l>" nranks + L*S + s*L + l (fabric.h's link order); its
 * dir=out is the sending switch's egress, dir=in what that switch receives
 * on the same cable. Returns -1 for a name the shape does not have. */
int64_t jct_clos_port_number(const jct_clos_t *c, uint32_t nranks, const char *name);

/* Rewrite "port=NAME" in an injector spec to "port=N" (jct_clos_port_number)
 * into out. A spec without a port= word, or with a number, is copied.
 * Errors: JCT_EINVAL ("port=leaf9:spine0: no such link (4 leaves, 2
 * spines)"), JCT_ENOMEM (out too small). */
int jct_clos_spec_ports(const jct_clos_t *c, uint32_t nranks, const char *spec, char *out,
                        size_t outlen, char *err, size_t errlen);

#endif
