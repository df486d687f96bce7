/* A session's backend (internal to orch/): what runs the ranks of a
 * session on one transport, behind one ops table, as iperf3 puts each
 * protocol behind `struct protocol` and DPDK each port kind behind
 * `struct rte_port_in_ops` (lib/port/rte_port.h).
 *
 * The session (session.c) keeps what every transport shares: the event
 * loop, the injector chain, repetitions, deadlines, the counters'
 * differences and the failure bookkeeping. A backend keeps the rest, in
 * its own file, private: it builds the ranks and the fabric they run over,
 * runs one repetition when asked, and says how its ranks are doing.
 * Each backend file exports only its const ops table:
 *   - jct__backend_uroce (backend_uroce.c): jctlab's userspace RoCE
 *     (include/jctlab/uroce.h), one rank per network namespace of this
 *     process, the emulated switch between them (fabric.h), and the
 *     schedule's executor in this process;
 *   - jct__backend_verbs (backend_verbs.c): rdma-core in rank agents
 *     (harness/lab/agents.h), in the lab's soft-RoCE VMs whose TAPs are the
 *     switch's ports (harness/lab/lab.h, --lab N), or on hosts with RDMA
 *     NICs, over their own fabric (--agents HOST:PORT,...).
 *
 * A backend calls only lower layers, the session's loop (loop.h) and its
 * watch on the switch's wire (loss_watch.h), never the session: every
 * call goes from the session to the backend.
 * All of a backend's work happens on env->loop's thread.
 */
#ifndef JCT_ORCH_BACKEND_H
#define JCT_ORCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jctlab/fabric.h"
#include "jctlab/replay.h"
#include "jctlab/run.h"
#include "loop.h"
#include "loss_watch.h"

/* The lossless priority RoCE traffic travels on, and the DSCP that
 * selects it with the switch's DSCP >> 3 map (26 >> 3 = 3). */
#define JCT__DATA_PRIO 3
#define JCT__DATA_DSCP 26
/* The DSCP CNPs leave with: a ConnectX's default cnp_dscp 48 (priority 6
 * with the same map, cnp_802p_prio 6), ahead of the data and never paused
 * by PFC on priority 3. */
#define JCT__CNP_DSCP 48

/* What the session hands a backend to build on. */
typedef struct {
  jct__loop_t *loop;               /* the session's; outlives the backend */
  const jct_run_opts_t *o;         /* the run's options; outlive the backend */
  /* The run's dilation as the session computed it (jct_run_dilation, and
   * the clear-to-send timer from its injectors, vm_stalls.h), the one its
   * report gives: the backend takes its factor, rates and QP timers from
   * here, never computes its own. Outlives the backend. */
  const jct_run_dilation_t *dilation;
  const jct_fabric_opts_t *fabric; /* the switch the run asks for (its injector chain
                                      included, and tap: the watch below), ports not chosen:
                                      the backend picks them */
  /* With ops->resent_on_wire: the session's watch on the switch's wire,
   * fed by fabric->tap; its re-sent packets (jct__loss_watch_resent) are
   * the ones the devices do not count. It outlives the backend when the
   * backend built a fabric; without one (agents on hosts) the session
   * frees it once up returns, so the backend keeps it only with its
   * fabric. NULL otherwise. */
  const jct__loss_watch_t *watch;
} jct__backend_env_t;

/* Build the ranks and the fabric between them, let the ranks connect, and
 * return the backend's state in *b. Errors: JCT_EINVAL (options this
 * backend refuses), JCT_EIO, JCT_ENOMEM, with err saying which; nothing is
 * left behind then. */
typedef int (*jct__backend_up_t)(void **b, const jct__backend_env_t *env, char *err, size_t errlen);

/* The jctlab fabric the ranks' traffic crosses, owned by the backend until
 * down; NULL when it crosses none (agents on hosts). */
typedef jct_fabric_t *(*jct__backend_fabric_t)(const void *b);

/* One repetition, index from 0, given limit_ns to finish: start the fabric
 * (jct_fabric_start) and the ranks, wait, and fill rep->jct_ns,
 * rep->timing (schedule->nops of them, allocated by the session, from the
 * repetition's start), rep->nbins and rep->retx_bins when rep->bin_ns is
 * set, rep->dev when the devices count. A repetition that failed leaves
 * rep->ok false and rep->why saying how (jct__rep_fail). Returns 0, or
 * JCT_ENOMEM. */
typedef int (*jct__backend_rep_t)(void *b, uint32_t index, uint64_t limit_ns, jct_rep_t *rep);

/* Nonzero once a rank failed (a QP in error, an agent gone, a VM stopped);
 * why (may be NULL) says which. */
typedef int (*jct__backend_failed_t)(void *b, char *why, size_t len);

/* True when no rank has anything in flight (the session drains the fabric
 * until this and the switch are quiet). */
typedef bool (*jct__backend_quiet_t)(const void *b);

/* The transport's counters so far, summed over ranks and repetitions (the
 * session differences them around each repetition). */
typedef void (*jct__backend_stats_t)(const void *b, jct_transport_stats_t *total);

/* Each connection's counts so far (run.h: its retransmitted request
 * packets, both ends of its QP pair; its sending QP's DCQCN rate cuts and
 * time below the line rate), into out[schedule->nconns]; NULL in the ops
 * table when the transport counts per device only (verbs: Linux rxe's
 * hw_counters are per port). The session differences them around each
 * repetition. */
typedef void (*jct__backend_conn_counts_t)(const void *b, jct_conn_counts_t *out);

/* Frames the ranks lost by the harness's own fault (sockets overrun, sends
 * refused): nonzero makes the run invalid. */
typedef uint64_t (*jct__backend_losses_t)(const void *b);

/* Stop the ranks, tear down what up built, free b. */
typedef void (*jct__backend_down_t)(void *b);

/* The JCT_TSTAT_* figures b's stats count when that depends on how b was
 * brought up (verbs: the re-sent packets that no RDMA device counts are
 * the lab switch's wire's, env->watch; agents on hosts have no switch of
 * jctlab's). */
typedef uint32_t (*jct__backend_counted_t)(const void *b);

struct jct__backend_ops {
  const char *name; /* "uroce", "verbs" */
  uint32_t counted; /* the JCT_TSTAT_* figures its stats count (run.h) */
  /* Its devices count no re-sent packets (Linux rxe): the session watches
   * the switch's wire for them, every repetition (env->watch). */
  bool resent_on_wire;
  jct__backend_up_t up;
  jct__backend_fabric_t fabric;
  jct__backend_rep_t rep;
  jct__backend_failed_t failed;
  jct__backend_quiet_t quiet;
  jct__backend_stats_t stats;
  jct__backend_conn_counts_t conn_counts; /* may be NULL (above) */
  jct__backend_counted_t counted_of;      /* may be NULL: `counted` holds */
  jct__backend_losses_t harness_losses;
  jct__backend_down_t down;
};

extern const struct jct__backend_ops jct__backend_uroce;
extern const struct jct__backend_ops jct__backend_verbs;
/* `jctlab rank`'s rank 0 (backend_ranks.c, rank_world.h): built with MPI
 * only (JCT_HAVE_MPI). */
extern const struct jct__backend_ops jct__backend_ranks;
extern const struct jct__backend_ops jct__backend_ranks_verbs; /* its tasks on verbs */

/* The device counters as the transport's: what rxe counts that uroce does
 * too (rxe's names, drivers/infiniband/sw/rxe/rxe_hw_counters.h). rxe's
 * completer counts every restart of the send stream in
 * completer_retry_err, a NAK-sequence-error's (also in rcvd_seq_err) as
 * well as a retransmit timer's: timeouts are the difference. Measured: 14
 * drops of first transmissions gave rcvd_seq_err 13 and
 * completer_retry_err 14, the 14th loss a message's last packet. rxe
 * counts neither the data packets it sends apart from its ACKs nor those
 * it sends again, and has no congestion control (no CNPs); the agents do
 * not add up their NICs' pauses: those figures are absent. */
#define JCT__VERBS_COUNTED                                                                                    \
  (JCT_TSTAT_ALL & ~(uint32_t)(JCT_TSTAT_DATA_PACKETS | JCT_TSTAT_RETX_PACKETS |                   \
                               JCT_TSTAT_RETX_BYTES | JCT_TSTAT_CNPS | JCT_TSTAT_NIC_PAUSED))
void jct__verbs_tstats(const jct_dev_counters_t *d, jct_transport_stats_t *t);

/* Mark rep failed, why (cut to rep->why's size) saying how. */
static inline void jct__rep_fail(jct_rep_t *rep, const char *why) {
  rep->ok = false;
  snprintf(rep->why, sizeof rep->why, "%.*s", (int)sizeof rep->why - 1, why);
}

#endif
