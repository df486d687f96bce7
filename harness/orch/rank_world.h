/* `jctlab rank` (internal to orch/): one MPI task per rank of the
 * schedule (harness/lab/world.h), rank 0 orchestrating. Rank 0's session
 * runs the ranks backend (backend_ranks.c): the switch, rank 0's own QP
 * ends, and the other tasks reached over MPI; every other task runs
 * jct__rank_worker() (rank_worker.c): its rank's QP ends and executor.
 *
 * On one host (the only place this machine can run it: it has no RDMA
 * device) each task's rank lives in the network namespace rank 0 made for
 * it: a worker enters it with setns(2) on rank 0's file descriptor for
 * it, opened as /proc/PID/fd/FD (so the worker must be allowed to: the
 * same user, CAP_SYS_ADMIN over the namespace -- root, as mpirun
 * --allow-run-as-root and srun as root are).
 *
 * The messages, rank 0 to worker unless said (tags, payloads below):
 *   UP {rank 0's pid, the rank's namespace fd, the ranks' options, the
 *       schedule as JSON}; then every task: an allgather of each QP end's
 *       bootstrap (QPN, initial PSN, IPv4 address; jct__rank_end_t), then
 *       worker -> READY {rc, why};
 *   RUN {index, faulted, limit_ns}; then every task: a barrier, and rank
 *       0's start time broadcast (its clock); each task's injectors at its
 *       host (verbs) restart then, acting only when faulted; worker -> DONE
 *       {index, ok, why, counters, its ops' timings on rank 0's clock, what
 *       its host's injectors did}, and ALIVE {} every
 *       JCT__RANK_ALIVE_NS until then, so that rank 0 names a task on
 *       another host that died (no launcher ended the job) or lost its
 *       network within the run's silent_after_ns (run.h), not at the repetition's limit;
 *   DOWN -> worker GONE (its QP ends closed; rank 0 may tear down);
 *   QUIT: the worker returns.
 */
#ifndef JCT_ORCH_RANK_WORLD_H
#define JCT_ORCH_RANK_WORLD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness/lab/world.h"
#include "harness/transport/uroce/ranks.h"
#include "jctlab/dcqcn.h"
#include "jctlab/executor.h"
#include "jctlab/rdma.h"
#include "jctlab/run.h"
#include "jctlab/uroce.h"

enum {
  JCT__TAG_UP = 101,
  JCT__TAG_READY,
  JCT__TAG_RUN,
  JCT__TAG_DONE,
  JCT__TAG_DOWN,
  JCT__TAG_GONE,
  JCT__TAG_QUIT,
  JCT__TAG_ALIVE,
};

#define JCT__RANK_ALIVE_NS 100000000ull   /* a running worker's ALIVE, this often */

/* The world as rank 0 knows it: each task's process and host, and its
 * clock against rank 0's. lost: a task that stopped answering or died
 * (named in lost_why): the world cannot be finalized, only aborted. */
typedef struct {
  uint32_t size;
  int32_t *pid;
  char (*host)[64];
  jct__world_clock_t *clock;
  bool lost;
  char lost_why[256];
} jct__rank_world_t;

/* UP's payload; the schedule's JSON text follows it (sched_len bytes),
 * then (verbs) the rank's injectors at its host (host_len bytes: the list
 * of harness/lab/agent_host.h as JSON text, from host_faults.h; 0: none). */
typedef struct {
  int32_t pid, nsfd;
  int32_t transport; /* JCT_TRANSPORT_UROCE (nsfd, ro, dcqcn) or JCT_TRANSPORT_VERBS (below) */
  /* verbs: the QPs' settings (verbs.h) and the device's (rdma.h) */
  uint8_t timeout, retry_cnt, tos;
  uint32_t max_mtu_bytes;
  jct_rdma_opts_t rdma;
  jct__ranks_opts_t ro; /* its pointers cleared: dcqcn below, sq_psn bootstrapped */
  int32_t has_dcqcn;
  jct_dcqcn_params_t dcqcn;
  uint64_t psn_seed; /* each task draws its QP ends' PSNs from this and its rank */
  uint32_t nconns; /* the schedule's: the allgather's size, whatever happens */
  uint32_t sched_len;
  uint32_t host_len;
} jct__rank_up_t;

/* One QP end's bootstrap, as each task announces its own (0 elsewhere). */
typedef struct {
  uint32_t qpn, psn, addr_be;
} jct__rank_end_t;

typedef struct {
  int32_t rc;
  char why[256];
} jct__rank_ready_t;

typedef struct {
  uint32_t index;
  uint32_t faulted; /* the repetition has the faults (captured timer go-backs, uroce.h) */
  uint64_t limit_ns;
} jct__rank_run_t;

/* DONE's payload; nops jct_op_timing_t (absolute, rank 0's clock; 0 where
 * not this rank's) and nconns jct_conn_counts_t (cumulative) follow, then
 * host_len bytes: what the rank's injectors at its host did in the
 * repetition (agent_host.h's done list as JSON text; 0: none). */
typedef struct {
  uint32_t index;
  int32_t ok;
  char why[256];
  jct_uroce_stats_t stats; /* cumulative over the case */
  uint64_t nic_paused_ns, harness_losses;
  /* The task's loop's lateness over the repetition (clock.h): rank 0 adds
   * it to its own, so a run is loop-bound when any rank's loop set the
   * pace, not only rank 0's. */
  jct_lateness_t lateness;
  /* verbs: what its device's counters moved over the repetition
   * (rdma_sysfs.h: every hw_counter, and the named ones), and which
   * device and port it is (ranks sharing one count it once) */
  jct_dev_counters_t dev;
  char device[64];
  uint32_t port;
  uint32_t nops, nconns;
  uint32_t host_len;
} jct__rank_done_t;

/* Each task's own QP ends' bootstrap, into ends[2 * nconns]: the QPN uroce
 * gives the end (ranks.h), an initial PSN drawn from seed and the end, and
 * the rank's IPv4 address. */
void jct__rank_own_ends(const jct_schedule_t *s, uint32_t rank, uint64_t seed,
                        jct__rank_end_t *ends);
/* Merge every task's announcements (size * 2 * nconns, rank order) into
 * sq_psn[2 * nconns]; JCT_EIO when a rank announced nothing (its setup
 * failed: its READY says why), JCT_EINVAL (err says which end) when an
 * end's QPN or address is not the one uroce's ranks use. */
int jct__rank_merge_ends(const jct_schedule_t *s, const jct__rank_end_t *all, uint32_t *sq_psn,
                         char *err, size_t errlen);

/* verbs (rank_verbs.c; built with rdma-core only): collective, every task
 * calls it after UP, whatever happened before (rc_in nonzero: this task
 * announces no QP ends and fails). Opens u's device and port, picks the
 * GID index (u->rdma.gid_index, else the first RoCE v2 IPv4 one:
 * rdma_sysfs.h), checks the counters named, makes this rank's QPs with
 * the PSNs jct__rank_own_ends draws from seed, allgathers every end
 * (jct__verbs_end_t: QPN, PSN, GID, buffer and rkey, MTU) and moves its
 * QPs to RTR and RTS against their peers'. *mpi_failed: the allgather
 * failed (the world is broken). netdev[netdev_len]: the network device of
 * the GID the QPs use (rdma_sysfs.h), where the rank's injectors at its
 * host act ("" when sysfs names none). Errors: JCT_EINVAL (a setting this host
 * cannot honour: err names it, exit 2), JCT_EIO, JCT_ENOMEM. */
struct jct_verbs;
int jct__rank_verbs_up(struct jct_verbs **out, uv_loop_t *loop, const jct_schedule_t *s,
                       uint32_t rank, uint32_t size, const jct__rank_up_t *u, uint64_t seed,
                       int rc_in, bool *mpi_failed, char *netdev, size_t netdev_len, char *err,
                       size_t errlen);
/* The device's counters now, as rdma_sysfs.h reads them (want: the named
 * ones from counters/ too), and its name (64 bytes) and port. settle:
 * after a repetition, first wait out the port's counter lifespan
 * (rdma_sysfs.h: a read may be that old), so the counts hold all of it. */
void jct__rank_verbs_counters(const struct jct_verbs *v, const jct_rdma_opts_t *want, bool settle,
                              jct_dev_counters_t *out, char *device, uint32_t *port);
/* Free (NULL is fine). */
void jct__rank_verbs_free(struct jct_verbs *v);

/* A worker task (rank of size): serve rank 0 until QUIT. clock: this
 * task's against rank 0's (jct__world_align). Returns the exit status (0;
 * 1 when the world broke). */
int jct__rank_worker(uint32_t rank, uint32_t size, const jct__world_clock_t *clock);

/* ---- One rank's part of a repetition (rank_part.c) --------------------- */

#include "loop.h"

/* A task's rank: its QP ends (ranks, one_rank) and, during a repetition,
 * the executor that drives them, started at t0 on this task's clock. */
typedef struct {
  jct__loop_t *loop;
  const jct_schedule_t *s;
  uint32_t rank;
  jct__ranks_t *ranks;     /* uroce; or */
  struct jct_verbs *verbs; /* verbs (rank_verbs.c) */
  /* verbs: the rank's injectors at its host (harness/lab/agent_host.h),
   * restarted by each begin; NULL: none */
  struct jct__agent_host *host;
  jct_exec_t *exec;
  jct_timer_t start_timer, exec_timer;
  int rc; /* a failed start or timer: the executor's error */
} jct__rank_part_t;

/* Begin a repetition (faulted: with the faults): the executor made, its
 * start armed at t0_ns (this task's clock), the injectors at the host
 * restarted now (acting only when faulted). Errors: JCT_ENOMEM, JCT_EIO
 * (the host's kernel would not restart its program). */
int jct__rank_part_begin(jct__rank_part_t *p, uint64_t t0_ns, bool faulted);
/* After each loop turn: the executor's next deadline armed. */
void jct__rank_part_turn(jct__rank_part_t *p);
/* This rank's part is over: every op it sends started and acknowledged,
 * every op it receives done, nothing in flight (or a QP failed). */
bool jct__rank_part_done(const jct__rank_part_t *p);
/* This rank's ops' timings, minus offset_ns (onto rank 0's clock): its
 * sends' ready and start, its receives' done; the rest left alone. */
void jct__rank_part_timing(const jct__rank_part_t *p, int64_t offset_ns, jct_op_timing_t *out);
/* A QP of the part failed (why: which; may be NULL). */
bool jct__rank_part_failed(const jct__rank_part_t *p, char *why, size_t len);
/* Nothing of the part in flight (uroce: its queues; verbs: its sends'
 * completions). */
bool jct__rank_part_quiet(const jct__rank_part_t *p);
/* End the repetition (the executor freed). */
void jct__rank_part_end(jct__rank_part_t *p);
/* What the injectors at the host did in the repetition (agent_host.h's
 * done list; a storm stops): a new reference, NULL when the part has none. */
json_t *jct__rank_part_host_done(jct__rank_part_t *p);

#endif
