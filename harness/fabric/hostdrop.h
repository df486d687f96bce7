/* The drop injector in a host's kernel (internal): the tc-eBPF program of
 * include/jctlab/kdrop.h loaded with libbpf and attached to one
 * interface's egress, its maps written and read from here.
 *
 * Attaching makes a tcx link on the egress hook (Linux 6.6 and later:
 * kernel/bpf/tcx.c), which this process's descriptor owns: the kernel
 * detaches it when the process ends however it ends, SIGKILL included, so
 * nothing is left on a persistent interface (a real host's NIC, which the
 * agent does not own). Where the kernel has no tcx (or
 * JCT_HOSTDROP_ATTACH=tc, for tests), it creates the interface's clsact
 * qdisc unless it has one already and adds one cls_bpf filter
 * (direct-action, handle JCT__HOSTDROP_HANDLE) on its egress hook
 * (tc-bpf(8), libbpf's bpf_tc_hook_create and bpf_tc_attach). Such a
 * filter outlives a killed process; it holds a lease (kdrop.h's
 * jct_kdrop_lease) that a thread of this process renews, and goes inert
 * (passes every packet) within JCT__HOSTDROP_LEASE_NS of the process's
 * death; jct__hostdrop_clear_stale removes it. Detaching closes the link,
 * or removes the filter and the clsact qdisc when attaching created it, so
 * a persistent interface is left as it was found; the program and its maps
 * go when their last file descriptor closes. A namespace jctlab made takes
 * all of it with it when the process ends, SIGKILL included.
 *
 * Attach and detach work in the calling thread's network namespace (libbpf
 * opens its netlink socket there): call them inside the host's. Needs
 * CAP_BPF and CAP_NET_ADMIN in the initial user namespace (root): the
 * kernel refuses tc programs from a user namespace of its own.
 */
#ifndef JCT_HOSTDROP_H
#define JCT_HOSTDROP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jctlab/kdrop.h"

typedef struct jct__hostdrop jct__hostdrop_t;
struct jct_injector; /* jctlab/injector.h */

#define JCT__HOSTDROP_HANDLE 0x4a43 /* "JC": the fallback filter's handle */
/* The fallback filter's lease, renewed every third of it: 3 s, or
 * JCT_HOSTDROP_LEASE_MS milliseconds from the environment (10 to 60000;
 * for tests). A killed agent's filter passes everything after at most
 * this long. */
#define JCT__HOSTDROP_LEASE_NS 3000000000ull

/* Load the program and put it on ifindex's egress as filter priority prio
 * (1 or more: a chain's host injectors run in its order), passing
 * everything (disabled) until configured. label names the host in errors ("rank 1's
 * eth0"). Errors: JCT_EIO (the kernel refused the program or the filter:
 * err has the reason), JCT_ENOMEM; "not supported in this build" without
 * JCT_HOSTFAULT (JCT_EINVAL). */
int jct__hostdrop_attach(jct__hostdrop_t **out, int ifindex, uint32_t prio, const char *label,
                         char *err, size_t errlen);

/* How h is attached: "tcx" (a link) or "tc" (the leased cls_bpf filter). */
const char *jct__hostdrop_attach_kind(const jct__hostdrop_t *h);
/* The kernel's id of h's program (bpf_prog_info's id), for tests; 0: unknown. */
uint32_t jct__hostdrop_prog_id(const jct__hostdrop_t *h);

/* A delay's times in cfg (delay_ns, nak_hold_ns: the spec's, emulated
 * like every spec time and the switch's delay) in the kernel's wall time,
 * x tdf (DESIGN.md decision 8: under dilation no emulated figure
 * changes); the window, jct__hostdrop_cfg_of. tdf <= 1: unchanged. */
void jct__hostdrop_cfg_wall(struct jct_kdrop_cfg *cfg, double tdf);

/* The configuration of inj (placed at=host) for a repetition, in the
 * kernel's wall time under dilation tdf: the kind's (ops->kernel), its
 * delay's times x tdf (jct__hostdrop_cfg_wall), its window's at=/until=
 * x tdf (saturating; until 0 stays none) and its seed. enabled and
 * start_ns are the caller's (0 here). tdf <= 1: as the spec gives them.
 * Returns 0, or JCT_EINVAL (err says why: the kind's reason, or that it
 * has no kernel program). */
int jct__hostdrop_cfg_of(const struct jct_injector *inj, double tdf, struct jct_kdrop_cfg *cfg,
                         char *err, size_t errlen);

/* A repetition starts: cfg becomes the program's configuration, the state
 * restarts (counters zero, PRNG from rng, loss models in their first
 * state, the per-QP PSN history empty). Returns 0 or JCT_EIO. */
int jct__hostdrop_configure(jct__hostdrop_t *h, const struct jct_kdrop_cfg *cfg,
                            const uint64_t rng[4]);

/* Turn the program on (a faulted repetition) or off (a baseline), keeping
 * its state. Returns 0 or JCT_EIO. */
int jct__hostdrop_enable(jct__hostdrop_t *h, bool on);

/* Counters so far (since the last configure). Returns 0 or JCT_EIO. */
int jct__hostdrop_counters(jct__hostdrop_t *h, struct jct_kdrop_counters *out);

/* Hand every drop the fault log has not seen yet to cb, oldest first. */
typedef void (*jct__hostdrop_event_cb)(const struct jct_kdrop_event *ev, void *arg);
int jct__hostdrop_drain(jct__hostdrop_t *h, jct__hostdrop_event_cb cb, void *arg);

/* Run the loaded program on one Ethernet frame as the kernel would on
 * egress (BPF_PROG_TEST_RUN), for tests: *dropped is whether it returned
 * TC_ACT_STOLEN (its way of losing a packet). Its maps change as on a real packet. Returns 0 or
 * JCT_EIO. */
int jct__hostdrop_test_run(jct__hostdrop_t *h, const uint8_t *frame, size_t len, bool *dropped);

/* The same, returning the departure time the program stamped on the
 * frame (the __sk_buff's tstamp after the run; 0: none), for delay's
 * tests. Returns 0 or JCT_EIO. */
int jct__hostdrop_test_tstamp(jct__hostdrop_t *h, const uint8_t *frame, size_t len,
                              uint64_t *tstamp_ns);

/* Remove the filter (and the clsact qdisc attach created), free the
 * program. Call in the namespace attach was called in; when that namespace
 * is gone already, gone_ns true only frees. NULL is fine. */
void jct__hostdrop_detach(jct__hostdrop_t *h, bool gone_ns);

/* Remove every jctlab filter (handle JCT__HOSTDROP_HANDLE, kind bpf) from
 * ifindex's egress (calling thread's namespace): what a killed process
 * left; then the clsact qdisc, when no filter is left on either of its
 * hooks (an empty clsact does nothing). For the one process that owns the
 * interface (an agent, at its start): another's live filter goes too.
 * Returns how many filters were removed, or JCT_EIO (err says why). */
int jct__hostdrop_clear_stale(int ifindex, char *err, size_t errlen);

/* The fallback filter's lease (hostdrop_lease.c): start writes the lease
 * map (lease_fd) with a deadline JCT__HOSTDROP_LEASE_NS ahead and starts
 * the thread that renews it; stop ends the thread and leaves the deadline
 * to pass. Errors: JCT_EIO, JCT_ENOMEM, JCT_EINVAL (a bad
 * JCT_HOSTDROP_LEASE_MS). NULL is fine for stop. */
typedef struct jct__hostdrop_lease jct__hostdrop_lease_t;
int jct__hostdrop_lease_start(jct__hostdrop_lease_t **out, int lease_fd, char *err, size_t errlen);
void jct__hostdrop_lease_stop(jct__hostdrop_lease_t *l);

/* Whether the kernel has a qdisc of this kind ("fq"): probed by adding it
 * as ifindex's root qdisc and deleting it again (calling thread's
 * namespace). 1 yes, 0 no (*why says the kernel's reason), < 0 error. */
int jct__qdisc_available(int ifindex, const char *kind, char *why, size_t whylen);

#endif
