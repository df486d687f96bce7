/* A host's link cut under its network device (internal): every frame
 * lost both ways while the cut is on, the device itself left up, as a
 * pulled cable or a peer's port shut leaves it with its carrier gone.
 *
 * What a flap at a host uses where the host's RoCE device is soft (rxe,
 * siw: its packets cross the device's kernel path). Setting such a device
 * down instead (RTM_NEWLINK without IFF_UP) takes its routes with it, and
 * Linux rxe takes a send it cannot route for a local error: the requester
 * completes the work request with IB_WC_LOC_QP_OP_ERR and moves the QP to
 * the error state (rxe_req.c; measured in the lab: "Work Request Flushed
 * Error" on rank 1 within the first flap). A cable pull keeps the routes
 * and the QPs, whose sends are lost and re-sent by their retransmit
 * timers (IBA vol. 1 9.7.6.1.3), which is what this gives.
 *
 * One small tc program (BPF_PROG_TYPE_SCHED_CLS, four instructions:
 * bpf_redirect to ifindex 0, which the kernel frees as a redirect to no
 * device and reports to the sender as sent, as hostdrop.h's program
 * does), attached by two tcx links (Linux 6.6 and later), on the device's
 * ingress and egress while cut. The links belong to this process's
 * descriptors: the kernel detaches them when it ends however it ends,
 * SIGKILL included, so a killed task never leaves its host cut. Needs
 * CAP_BPF and CAP_NET_ADMIN in the initial user namespace (root). */
#ifndef JCT_HOSTCUT_H
#define JCT_HOSTCUT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct jct__hostcut jct__hostcut_t;

/* Load the program for ifindex (label names the device in errors), not
 * cut yet. Errors: JCT_EIO (the kernel refused the program: err says
 * why), JCT_EINVAL (not in this build), JCT_ENOMEM. */
int jct__hostcut_new(jct__hostcut_t **out, int ifindex, const char *label, char *err,
                     size_t errlen);

/* Cut (both links made) or mend (both closed). Cutting where the kernel
 * has no tcx: JCT_EIO, err naming Linux 6.6. Idempotent. */
int jct__hostcut_set(jct__hostcut_t *c, bool cut, char *err, size_t errlen);

/* Mended, the program closed. NULL is a no-op. */
void jct__hostcut_free(jct__hostcut_t *c);

#endif
