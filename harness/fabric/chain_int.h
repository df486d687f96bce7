/* The injector chain's insides (internal to chain.c and chain_host.c):
 * its sites and state, and what chain.c calls of the host side. */
#ifndef JCT_CHAIN_INT_H
#define JCT_CHAIN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture.h"
#include "chain.h"
#include "harness/base/netlink.h"
#include "hostdrop.h"

/* What a hook is called with: which port and side it sits on, the
 * injectors that act there (in chain order) and the site's flow history,
 * shared by them so that a frame's packet identity is found once. */
typedef struct {
  jct__chain_t *c;
  uint32_t port;        /* the injectors' port number */
  jct__chain_port_t at; /* the switch and its port it names */
  bool out;
  jct_injector_t **inj;
  size_t n;
  void *flows;
} site_t;

struct jct__chain {
  jct_injector_t **inj;
  size_t n;
  jct__chain_port_t *ports; /* what each port number names */
  site_t *sites;            /* 2 per port: ingress at 2p, egress at 2p + 1 */
  FILE *log;
  jct__savefile_t *drops;
  int64_t realtime_offset_ns;
  uint64_t start_ns;
  uint32_t rep; /* the repetition the fault log names */
  uint32_t nports;
  bool disabled;
  /* at=host: per injector, its kernel program (NULL on the switch), on
   * which topology's ranks, and the repetition's start on the kernel's
   * clock (CLOCK_MONOTONIC, bpf_ktime_get_ns). */
  jct__hostdrop_t **host;
  int *host_fd;        /* per injector: the AF_PACKET socket its frames leave by (pause), or -1 */
  jct__nl_t **host_nl; /* per injector: netlink in its host's namespace (flap), or NULL */
  uint64_t *host_down_ns;     /* per injector: when its host's link went down (flap), 0: up */
  uint64_t *host_noroutes;    /* per injector: its host's OutNoRoutes when the link went down */
  bool remote;                /* the hosts' agents run the at=host injectors, timers and all */
  jct__chain_link_fn link_fn; /* remote: a flap's carrier (its VM's), or NULL */
  void *link_arg;
  jct__chain_stall_fn stall_fn; /* a stall's host (its VM stopped), or NULL */
  void *stall_arg;
  bool started; /* a repetition has started (jct__chain_start) */
  bool agents_link;    /* remote: a flap's link is its agent's own (--agents) */
  uint32_t links_down; /* how many of them are down */
  const jct_topo_t *topo;
  uint64_t start_mono_ns;
  uint64_t last_ns; /* the latest tick's time */
};

/* The per-injector host arrays for n injectors (JCT_ENOMEM), and freed. */
int jct__chain_hosts_alloc(jct__chain_t *c, size_t n);
void jct__chain_hosts_free(jct__chain_t *c);

/* A repetition started (c->disabled says whether faulted): the kernel
 * programs restart from their injectors' seeds and windows. */
void jct__chain_hosts_start(jct__chain_t *c);

/* Kernel programs on or off; off also brings every flapped link up.
 * Returns 0 or JCT_EIO. */
int jct__chain_hosts_enable(jct__chain_t *c, bool on);

/* Every host link a flap left down comes up, its down time counted to
 * now_ns. */
void jct__chain_hosts_links_up(jct__chain_t *c, uint64_t now_ns);

/* After injector i at a host ticked: a flap sets its link to the state
 * due at now_ns. */
void jct__chain_host_tick(jct__chain_t *c, size_t i, uint64_t now_ns);

/* The emit callback of injectors at a host (pause): the frame leaves from
 * the host's interface. */
void jct__chain_emit_from_host(jct_injector_t *inj, uint32_t port, const uint8_t *frame, size_t len,
                               uint64_t now_ns);

#endif
