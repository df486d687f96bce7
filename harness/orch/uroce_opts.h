/* What uroce's ranks are built with, from a run's options, and their
 * counters in the transport's terms (internal to orch/): shared by the
 * uroce backend (every rank in this process) and `jctlab rank`'s (one
 * rank per MPI task, rank_world.h). */
#ifndef JCT_ORCH_UROCE_OPTS_H
#define JCT_ORCH_UROCE_OPTS_H

#include "harness/transport/uroce/ranks.h"
#include "jctlab/run.h"

/* The ranks' options for o; dcqcn receives the QPs' DCQCN parameters
 * (ro->dcqcn points at it when the run's congestion control is DCQCN). */
void jct__uroce_ranks_opts(const jct_run_opts_t *o, jct_dcqcn_params_t *dcqcn,
                           jct__ranks_opts_t *ro);

/* uroce's counters (summed over QPs) and the NICs' paused time, as a
 * transport's (every figure counted). */
void jct__uroce_tstats(const jct_uroce_stats_t *st, uint64_t nic_paused_ns,
                       jct_transport_stats_t *t);

/* The ranks' per-connection counts (run.h: retransmitted request packets,
 * DCQCN rate cuts and time below the line rate), into out[nconns]: each
 * connection's ends that are among these ranks, zero for the others. */
void jct__uroce_conn_counts(const jct__ranks_t *ranks, uint32_t nconns, jct_conn_counts_t *out);

#endif
