/* The injector chain of a run (internal to the harness): the injectors
 * given with --inject, in order, sitting on the switch's hooks (switch.h)
 * of every port, ingress and egress; each injector's port=/dir= decide
 * where it acts. A frame meets the injectors in order: the first drop ends
 * its way (the frame is counted against that injector alone), holds add up
 * to the latest (each injector sees the latest so far in hold_until_ns),
 * modifications pass on to the next injector. A duplicate (JCT_DUPLICATE)
 * lets the frame go on and asks the switch for a copy of the frame as it
 * reached this site (jct_switch_frame_t.duplicate): the switch brings the
 * copy back to the same hook, where it meets the site's injectors again
 * from the first with jct_frame_t.copy set (as netem re-enqueues its clone
 * at the root of the qdisc tree), and is then queued behind the frame.
 * Nobody duplicates a copy again.
 *
 * Optionally every action is written to a fault log, one JSON object per
 * line ({"rep", "t_ns", "port", "dir", "injector", "kind", "action", "src",
 * "dst", "qp", "psn", "opcode", "retransmission", "hold_ns", "copy"}, rep the
 * repetition's index from 0, t_ns from its start, retransmission whether a
 * RoCEv2 data packet's PSN was not after the highest its flow had sent
 * through that port and side, copy true on a duplicate's copy, absent
 * otherwise), and every dropped frame to a capture of its own.
 *
 * Injectors that act on time (pause storms, flaps) are ticked by the
 * fabric at jct__chain_next_deadline_ns(); the frames they make enter the
 * switch on their port as if its rank had sent them.
 */
#ifndef JCT_CHAIN_H
#define JCT_CHAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "jctlab/injector.h"
#include "jctlab/switch.h"
#include "jctlab/topo.h"

struct jct_kdrop_counters; /* jctlab/kdrop.h */
struct jct_kdrop_event;

typedef struct jct__chain jct__chain_t;

/* Create the injectors from specs. run_seed feeds their default seeds.
 * Errors: JCT_EINVAL (err names the spec and the bad word), JCT_ENOMEM. */
int jct__chain_new(jct__chain_t **out, const char *const *specs, size_t n, uint64_t run_seed,
                   char *err, size_t errlen);

/* Install the chain on every port of sw (nports); log and drops (a capture,
 * capture.h) may be NULL; realtime_offset_ns converts the clock for the
 * drops capture. */
struct jct__savefile;
/* A port number the injectors name (port=N): a switch and its port. */
typedef struct {
  jct_switch_t *sw;
  uint32_t port;
} jct__chain_port_t;
/* As jct__chain_attach, on several switches: port number p is ports[p]
 * (a leaf-spine fabric's host and link ports, fabric.c). */
int jct__chain_attach_ports(jct__chain_t *c, const jct__chain_port_t *ports, uint32_t nports,
                            FILE *log, struct jct__savefile *drops, int64_t realtime_offset_ns);
int jct__chain_attach(jct__chain_t *c, jct_switch_t *sw, uint32_t nports, FILE *log,
                      struct jct__savefile *drops, int64_t realtime_offset_ns);

/* Take the injectors off the switch's hooks (a baseline repetition: the
 * switch then does no injector work, but for the injectors that act in
 * baselines too, injector.h's baseline: a postmortem's stalls) or put
 * them back; their counters and state are kept. Errors: those of
 * jct_switch_set_hook(). */
int jct__chain_set_enabled(jct__chain_t *c, bool on);

/* The repetition (from 0) the fault log names from now on. */
void jct__chain_set_rep(jct__chain_t *c, uint32_t rep);

/* A repetition starts now: every injector restarts (window, PRNG, state). */
void jct__chain_start(jct__chain_t *c, uint64_t now_ns);

/* The injectors placed at=host:RANK: each one's kernel program loaded and
 * put on rank RANK's interface (hostdrop.h), in the rank's namespace.
 * remote (topo NULL): the hosts are the lab's VMs, whose agents run drop,
 * delay and pause there and hand their counters back
 * (jct__chain_host_result); the chain does not tick them; flap is refused
 * there unless the lab's carrier (jct__chain_set_link_fn) or the agents'
 * own netlink (jct__chain_attach_remote) sets the link. topo NULL and not remote (jctlab wire)
 * refuses them. Errors:
 * JCT_EINVAL (no such rank, no hosts, a kind the host's kernel cannot run:
 * delay without fq), JCT_EIO (the kernel refused the program or filter).
 * What was attached before a failure stays until detach. */
int jct__chain_attach_hosts(jct__chain_t *c, const jct_topo_t *topo, bool remote, char *err,
                            size_t errlen);

/* No switch at all (agents on real hosts, --agents): every injector is at
 * a remote host, whose agent runs it (as remote above); nranks hosts;
 * log (may be NULL) gets their drops and frames (jct__chain_host_event,
 * jct__chain_host_frame). Errors: JCT_EINVAL, err naming the spec, for an
 * injector not at a host (there is no switch for it), or one a remote
 * host does not run. */
int jct__chain_attach_remote(jct__chain_t *c, uint32_t nranks, FILE *log, char *err, size_t errlen);

/* In the lab, a flap at a host is its VM's carrier: fn(arg, rank, up)
 * sets it (lab.h, jct__lab_set_link), returning 0 or a negative JCT_E*.
 * Set before the fabric attaches the hosts: with it, flap at=host:R is
 * accepted on remote hosts and the chain ticks it on the orchestrator's
 * clock, as a namespace's. */
typedef int (*jct__chain_link_fn)(void *arg, uint32_t rank, bool up);
void jct__chain_set_link_fn(jct__chain_t *c, jct__chain_link_fn fn, void *arg);

/* A stall (injector.h, stalls_host) asked that rank's host send nothing
 * for stall_ns (emulated ns) from now_ns: fn(arg, rank, stall_ns, now_ns)
 * stops it and has it go on then (the lab's VM stopped and continued,
 * harness/orch/backend_verbs.c), returning 0 or a negative JCT_E*, which
 * the chain reports on stderr. The rank is the one whose port the frame
 * entered by. Without fn the request is logged and nothing stops: the run
 * refuses the kind where no host can stop (harness/orch/session.c). */
typedef int (*jct__chain_stall_fn)(void *arg, uint32_t rank, uint64_t stall_ns, uint64_t now_ns);
void jct__chain_set_stall_fn(jct__chain_t *c, jct__chain_stall_fn fn, void *arg);

/* A remote host's injector after a repetition (an agent's tc-eBPF program,
 * or its pause storm, timed by the agent's own clock there): st becomes
 * injector i's stats, as jct__chain_collect does for a local one. Then
 * each of a drop's losses, t_ns from the repetition's start on the host's
 * clock, goes to the fault log. */
void jct__chain_host_result(jct__chain_t *c, size_t i, const jct_injector_stats_t *st);
/* A frame a remote host's storm (injector i, pause) generated, t_ns from
 * the repetition's start on the host's clock: its fault-log line, as a
 * storm's from a namespace (sent false: the host's kernel refused it). */
void jct__chain_host_frame(jct__chain_t *c, size_t i, uint64_t t_ns, size_t len, bool sent);
void jct__chain_host_event(jct__chain_t *c, size_t i, const struct jct_kdrop_event *ev,
                           uint64_t t_ns);
/* A remote host's flap (injector i) set its link up or down, t_ns from the
 * repetition's start on the host's clock: its fault-log line (link-up,
 * link-down), as a namespace's flap. */
void jct__chain_host_link(jct__chain_t *c, size_t i, uint64_t t_ns, bool up);

/* Take the kernel programs off the ranks' interfaces (before the topology
 * goes). Idempotent; jct__chain_free does it too. */
void jct__chain_detach_hosts(jct__chain_t *c);

/* The switch is about to send a frame to port: true when a flap at that
 * port's host has the link down, and the frame is then lost on it (the
 * flap's drop, counted in its dropped), not sent. */
bool jct__chain_host_link_drop(jct__chain_t *c, uint32_t port);

/* True when a link-state injector on the switch (a flap: ops->host_link,
 * not at=host) acting on port number port, either side, has the link down
 * at now_ns (its window and its down phase). False while the chain is
 * disabled (a baseline repetition). The fabric reroutes around it. */
bool jct__chain_link_down(jct__chain_t *c, uint32_t port, uint64_t now_ns);

/* Whether any injector could make jct__chain_link_down true. */
bool jct__chain_has_link_state(const jct__chain_t *c);

/* Bring the host injectors' counters into their stats (seen = matched: the
 * RoCEv2 packets offered in the window; dropped) and their drops into the
 * fault log ("at":"host:RANK" instead of "port"). Call before reading a
 * repetition's counters. */
void jct__chain_collect(jct__chain_t *c);

uint64_t jct__chain_next_deadline_ns(const jct__chain_t *c);
/* Tick the injectors due by now; their frames go into the switch. */
void jct__chain_tick(jct__chain_t *c, uint64_t now_ns);

size_t jct__chain_len(const jct__chain_t *c);
/* Whether the injectors act (a faulted repetition): jct__chain_set_enabled's. */
bool jct__chain_enabled(const jct__chain_t *c);
/* How long frames an injector at a host holds back may still leave after
 * a repetition: twice the largest delay of its kernel programs (delay
 * at=host:R; wall ns, the spec's x F as the kernel holds them), 0 when
 * none delays. */
uint64_t jct__chain_host_hold_ns(const jct__chain_t *c);
const jct_injector_t *jct__chain_get(const jct__chain_t *c, size_t i);

void jct__chain_free(jct__chain_t *c);

#endif
