/* The world of `jctlab rank` (internal to the harness): the tasks of one
 * MPI job, one rank of the schedule each, launched by the cluster's own
 * engine (mpirun, or srun under Slurm through PMIx) -- DESIGN.md decision
 * 10. MPI carries what jctlab's own TCP channel carries for `jctlab agent`
 * (agents.h): the ranks' bootstrap, each repetition's synchronized start,
 * and the op timings and counters gathered at rank 0, which orchestrates.
 *
 * Everything here is MPI_COMM_WORLD, called from the one thread that
 * called jct__world_init (MPI_THREAD_FUNNELED). Messages are bytes with a
 * tag; receiving is by probing (jct__world_poll), so that rank 0's event
 * loop keeps forwarding frames while it waits for the other ranks.
 *
 * Clocks: each rank's clock is placed on rank 0's by ping-pong (as NTP's
 * on-wire protocol, RFC 5905 section 8, with its minimum-delay filter):
 * rank 0 sends t1, the rank answers its own time t2, rank 0 reads t3; the
 * offset is t2 - (t1 + t3) / 2, and its error is at most half the round
 * trip (t3 - t1) / 2 -- the bound reported, for the exchange with the
 * smallest round trip of JCT__WORLD_PINGS.
 */
#ifndef JCT_WORLD_H
#define JCT_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JCT__WORLD_PINGS 32
#define JCT__WORLD_ANY UINT32_MAX

/* Start MPI (MPI_Init_thread, FUNNELED) and say which task this is and how
 * many there are. Errors: JCT_EIO (err says so). */
int jct__world_init(int *argc, char ***argv, uint32_t *rank, uint32_t *size, char *err,
                    size_t errlen);
/* What launched the job, as this task's environment told it before
 * MPI_Init: "mpirun" (Open MPI's OMPI_COMM_WORLD_SIZE, also inside a Slurm
 * allocation), "srun" (SLURM_JOB_ID and SLURM_PROCID), or "mpi" (a
 * singleton). */
const char *jct__world_launcher(void);
/* MPI_Finalize; jct__world_abort: MPI_Abort(status), which ends every
 * task (for a task that cannot reach the others any more). */
void jct__world_finalize(void);
void jct__world_abort(int status);

/* Send len bytes to task `to` with tag (blocking, MPI_Send). Returns 0 or
 * JCT_EIO. */
int jct__world_send(uint32_t to, int tag, const void *buf, size_t len);
/* The next message from `from` (JCT__WORLD_ANY: any task) with tag (-1:
 * any), if one has arrived: returns 1 with *buf (malloc'd, free it), *len,
 * *from_out and *tag_out set; 0 when none has; JCT_EIO, JCT_ENOMEM. */
int jct__world_poll(uint32_t from, int tag, void **buf, size_t *len, uint32_t *from_out,
                    int *tag_out);
/* The same, waiting for it. */
int jct__world_recv(uint32_t from, int tag, void **buf, size_t *len);

int jct__world_barrier(void);
/* Rank 0's n bytes at buf to every task (MPI_Bcast). */
int jct__world_bcast(void *buf, size_t n);
/* Every task's n bytes, in rank order, into all (size * n bytes). */
int jct__world_allgather(const void *mine, void *all, size_t n);

/* One task's clock against rank 0's (jctlab's jct_now_ns() clock): its
 * offset (the task's time minus rank 0's, ns) and the bound on that
 * offset's error, half the smallest round trip (ns). */
typedef struct {
  int64_t offset_ns;
  uint64_t error_ns;
  uint64_t rtt_ns;
} jct__world_clock_t;

/* Collective: rank 0 measures every other task's clock (out[size], out[0]
 * zero) and tells each its own (out[0] on other tasks). Tasks of one host
 * (host[size], the names every task gave: rank 0's only) read one clock,
 * so each gets the same offset and error, the host's best estimate (the
 * smallest round trip of its tasks); on rank 0's host that is rank 0's
 * clock itself, offset and error 0. Apart, two tasks of one host would
 * place the two ends of an op between them on rank 0's clock by two
 * estimates up to the sum of their bounds apart (a 64 KiB op between two
 * tasks in one lab VM came out 106 us long the wrong way). */
int jct__world_align(uint32_t rank, uint32_t size, const char (*host)[64], jct__world_clock_t *out);

/* The module (harness/base/module.h): the functions above live in
 * jctlab-mpi.so, the only part of jctlab that links Open MPI, and reach it
 * through this table; jctlab's own jct__world_* (world.c) forward to it.
 * jct__world_load loads it, once: `jctlab rank` calls it first and stops
 * with its err (one line, exit 2) when the module is missing. Errors:
 * JCT_EIO. */
struct jct__world_ops {
  int (*init)(int *argc, char ***argv, uint32_t *rank, uint32_t *size, char *err, size_t errlen);
  const char *(*launcher)(void);
  void (*finalize)(void);
  void (*abort)(int status);
  int (*send)(uint32_t to, int tag, const void *buf, size_t len);
  int (*poll)(uint32_t from, int tag, void **buf, size_t *len, uint32_t *from_out, int *tag_out);
  int (*recv)(uint32_t from, int tag, void **buf, size_t *len);
  int (*barrier)(void);
  int (*bcast)(void *buf, size_t n);
  int (*allgather)(const void *mine, void *all, size_t n);
  int (*align)(uint32_t rank, uint32_t size, const char (*host)[64], jct__world_clock_t *out);
};
#define JCT__WORLD_MODULE "mpi"
#define JCT__WORLD_OPS "jct__world_mpi_ops"
int jct__world_load(char *err, size_t errlen);

#endif
