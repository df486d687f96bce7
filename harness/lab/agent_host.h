/* An agent's injectors at its own host (internal to the harness: `jctlab
 * agent` runs them, and each task of `jctlab rank --transport verbs` its
 * own rank's, harness/orch/rank_world.h): the
 * drop and delay injectors a run placed at=host:RANK on this rank, run as
 * the tc-eBPF program (include/jctlab/kdrop.h, harness/fabric/hostdrop.h)
 * on the egress of the agent's network device, where rxe's RoCEv2 packets
 * cross the kernel (rxe hands them to the netdev through ip_local_out);
 * and its pause storms, timed on the agent's own clock (a control channel
 * under TCG delivers messages tens of ms late and in bunches, too coarse
 * to carry each frame) and sent from the device on an AF_PACKET socket.
 *
 * The orchestrator names them in setup ("host_drops": [{index, spec,
 * run_seed, seed}]): the agent makes the same injector from the same spec,
 * run seed and index (so the same seed: checked), asks it for the kernel
 * program's configuration and attaches the program. Each run message says
 * whether the repetition is faulted; the program restarts then (same
 * seed, window from now, zero counters), and the done message carries its
 * counters and drops ("host_drops": [{index, attach: "tcx" or "tc" (hostdrop.h), seen, dropped,
 * held, events_lost, drops: [[t_ns, qp, psn, opcode, retransmission, family, "src", "dst"], ...]}],
 * t_ns from the run message; a pause's: {index, generated, dropped: frames this kernel refused,
 * frames: [[t_ns, bytes, sent], ...] each frame it generated, t_ns from the run message on the
 * agent's clock, frames_lost: those past the first 16,384}); a storm runs only in
 * a faulted repetition, from its run message. Under a dilation (the entry's
 * "tdf" F, absent: 1) a storm and a flap run in emulated time, as on the
 * switch: their injector sees the agent's clock from the run message at
 * 1/F of its pace, so each deadline comes F times later in wall time; and
 * every time in the done message (drops', frames', links' t_ns, a flap's
 * link_down_ns) is emulated, wall time / F. Freeing detaches everything (the
 * tcx link; or the filter, and the clsact qdisc when it was made here). A
 * killed agent leaves no link, and a filter only inert (hostdrop.h's lease)
 * until the next agent starts; its storm's socket and timer go with it, and
 * its guard puts back the qdisc a delay's fq replaced (agent_qdisc.h).
 */
#ifndef JCT_AGENT_HOST_H
#define JCT_AGENT_HOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/clock.h"

typedef struct jct__agent_host jct__agent_host_t;

/* A flap (on real hosts, --agents) sets netdev down and up itself over
 * netlink, timed on the agent's clock like a storm, behind a guard that
 * sets it up when the agent dies (agent_link.h); its done entry is {index,
 * link_down_ns, links: [[t_ns, up], ...]}, and it is refused (JCT_EINVAL)
 * when netdev is control_if, the interface the agent's control connection
 * arrives on (NULL: not a network connection, a lab VM's serial port).
 *
 * Attach the programs list names on netdev; with a delay among them, put
 * jctlab's fq qdisc under the agent's shaper (shaped: its tbf 1:, class
 * 1:1) or as the root, the root as it was before kept and put back when
 * freed or, if the agent dies, by its guard (agent_qdisc.h). list NULL or empty: *out
 * NULL, 0. Errors: JCT_EINVAL (a spec that does not parse, another seed, a missing device, no fq
 * for a delay, a root with classes, filters or qdiscs under it that fq would take: agent_qdisc.h),
 * JCT_EIO (the kernel refused the program), JCT_ENOMEM; err says which injector and
 * why; nothing stays attached. */
int jct__agent_host_new(jct__agent_host_t **out, const json_t *list, const char *netdev,
                        const char *control_if, bool shaped, jct_clock_t *clock, char *err,
                        size_t errlen);

/* A repetition starts now (CLOCK_MONOTONIC now_ns, the programs' clock;
 * clock_ns, the agent's clock's, the storms'); faulted false: a baseline,
 * every packet passes uncounted and no storm runs. Returns 0 or JCT_EIO. */
int jct__agent_host_start(jct__agent_host_t *h, bool faulted, uint64_t now_ns, uint64_t clock_ns);

/* The repetition's counters and drops, as the done message's "host_drops"
 * (a new reference; an empty array when h is NULL); a storm stops. */
json_t *jct__agent_host_done(jct__agent_host_t *h);

void jct__agent_host_free(jct__agent_host_t *h);

#endif
