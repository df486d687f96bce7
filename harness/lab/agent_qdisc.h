/* An agent's netdev's root qdisc as the agent found it, and putting it
 * back (internal to `jctlab agent`): before a delay's fq (agent_host.h)
 * replaces what is there. (The shaper's tbf, agent_nic.h, is a lab VM's
 * agent's only, --control: an agent on a host, --listen, is --no-net.)
 *
 * What is kept is the root's kind, handle and options (TCA_KIND, tcm_handle,
 * TCA_OPTIONS as the kernel dumps them, RTM_GETQDISC). A root of handle 0
 * is the kernel's default for the device (pfifo_fast, mq, noqueue, or
 * net.core.default_qdisc's: attach_default_qdiscs() in
 * net/sched/sch_generic.c): putting it back deletes the root
 * (RTM_DELQDISC, as `tc qdisc del dev IF root`), and the kernel attaches
 * its default again. Any other root is made again with its kind, handle and
 * options (RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, as `tc qdisc
 * replace`; htb's version as tc sends it, not as the kernel dumps it): a
 * new one when the root itself was replaced; the same root, changed,
 * when a child of its was: the child removed first, so that a tbf's change
 * makes a fresh bfifo child as at its start (tbf_change() in sch_tbf.c:
 * with a child there it only sets the child's limit).
 *
 * A root replaced takes its whole tree with it, and only what its kind
 * makes from its options comes back (tbf's bfifo, prio's bands, mq's
 * queues: children of handle 0, classes dumped without options; ets's
 * bands, dumped with a quantum its options hold too). So a root with more
 * under it is refused before anything changes: classes of its own
 * (dumped with options: htb's, hfsc's, drr's), filters on it or
 * under it (RTM_GETTFILTER on the root, its qdiscs and classes), qdiscs a
 * user added under it (a handle of their own). jctlab does not replay the
 * tree (classes, filters, their actions and programs).
 *
 * The request that puts it back is built when the root is read and handed
 * to the agent's guard (agent_guard.h), which sends it if the agent dies;
 * restoring sends it now and has the guard forget it.
 *
 * jctlab's fq has handle JCT__AGENT_FQ_HANDLE ("fc7:" in `tc qdisc show`),
 * so that an agent finds one a dead agent's guard could not remove.
 */
#ifndef JCT_AGENT_QDISC_H
#define JCT_AGENT_QDISC_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_guard.h"

#define JCT__AGENT_FQ_HANDLE (0xfc7u << 16)

typedef struct {
  char netdev[IF_NAMESIZE];
  int ifindex;
  char kind[16];   /* the root's, as found: "noqueue", "tbf", ... */
  uint32_t handle; /* 0: the kernel's default */
  uint32_t parent; /* where jctlab's fq goes: TC_H_ROOT or a class of the root's */
  uint64_t key;    /* the guard's (agent_guard.h); 0: nothing kept */
  size_t req_len;
  char req[JCT__GUARD_REQ_MAX]; /* the request that puts it back */
} jct__agent_qdisc_t;

/* Read netdev's root qdisc into q, before jctlab's fq goes at parent
 * (TC_H_ROOT, or a class of the root's: the shaper's tbf 1:1), and hand
 * the guard the requests that undo it, under what (JCT__GUARD_FQ): at the
 * root, the root as found; under a class, the fq removed and the root made
 * again over it (a tbf: its fresh bfifo child). Errors:
 * JCT_EINVAL (no such device; at the root, a tree the root's options do
 * not make again: err names the device, the root's kind and handle, and
 * its classes, filters and own qdiscs, counted), JCT_EIO (the kernel's
 * dump or the guard failed); err says which, and the guard keeps nothing. */
int jct__agent_qdisc_save(jct__agent_qdisc_t *q, const char *netdev, uint32_t parent,
                          jct__guard_what_t what, char *err, size_t errlen);

/* Undo jctlab's fq as saved, and have the guard forget it. A q never
 * saved (key 0) is fine. Returns 0 or JCT_EIO (err: the kernel's answer). */
int jct__agent_qdisc_restore(jct__agent_qdisc_t *q, char *err, size_t errlen);

/* Remove a jctlab fq (JCT__AGENT_FQ_HANDLE) left on netdev by an agent
 * whose guard died too: at the root, the root deleted (the kernel's
 * default back); under a tbf root (the shaper's), removed and the tbf made
 * again over a fresh bfifo; elsewhere, deleted from its parent. Returns 1 when one was
 * removed, 0 when there was none, or JCT_EIO (err says why). */
int jct__agent_qdisc_clear_stale(const char *netdev, char *err, size_t errlen);

#endif
