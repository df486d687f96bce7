/* The world of `jctlab rank` over Open MPI (world.h): jctlab-mpi.so,
 * whose one export is the table at the end. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errf.h"
#include "jctlab/clock.h"
#include "jctlab/error.h"
#include "world.h"

/* Under LeakSanitizer (the sanitizer build): what Open MPI, PMIx and hwloc
 * allocate while starting and ending is theirs, not jctlab's (world.c
 * gives the runtime its suppressions: it reads them from the executable). */
#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <sanitizer/lsan_interface.h>
#define LSAN_OFF() __lsan_disable()
#define LSAN_ON() __lsan_enable()
/* PMIx is loaded by an Open MPI plugin and unloaded with it at
 * MPI_Finalize, before LeakSanitizer looks: kept loaded, its leaks' stacks
 * name it (RTLD_NOLOAD: only the copy already there). */
#define KEEP_PLUGINS() dlopen("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)
#else
#define KEEP_PLUGINS() ((void)0)
#define LSAN_OFF() ((void)0)
#define LSAN_ON() ((void)0)
#endif

#define TAG_PING 30001
#define TAG_PONG 30002
#define TAG_OFFSET 30003

/* What launched this task, told before MPI_Init (world_launcher). */
static const char *launcher = "mpi";

static int world_init(int *argc, char ***argv, uint32_t *rank, uint32_t *size, char *err,
                      size_t errlen) {
  int provided = 0, r = 0, n = 0;
  /* mpirun's daemons give every task OMPI_COMM_WORLD_SIZE before it
   * starts; srun's tasks have SLURM_JOB_ID and SLURM_PROCID, and so do
   * mpirun's on the hosts whose daemon the allocation's srun started
   * (mpirun inside salloc: its orted's SLURM_PROCID is inherited), so
   * mpirun's mark is looked at first. */
  if (getenv("OMPI_COMM_WORLD_SIZE")) launcher = "mpirun";
  else if (getenv("SLURM_JOB_ID") && getenv("SLURM_PROCID")) launcher = "srun";
  /* Tasks that wait in MPI yield the CPU (Open MPI spins otherwise): ranks
   * on one host share its cores with the switch. The caller's setting wins. */
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  LSAN_OFF();
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  LSAN_ON();
  KEEP_PLUGINS();
  if (rc != MPI_SUCCESS) return jct__errf(err, errlen, JCT_EIO, "MPI_Init failed");
  /* Errors come back as codes: a task that died is reported, not fatal. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  *rank = (uint32_t)r;
  *size = (uint32_t)n;
  return 0;
}

static const char *world_launcher(void) {
  return launcher;
}

static void world_finalize(void) {
  LSAN_OFF();
  MPI_Finalize();
  LSAN_ON();
}

static void world_abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
}

static int world_send(uint32_t to, int tag, const void *buf, size_t len) {
  if (len > INT32_MAX) return JCT_EINVAL;
  return MPI_Send(buf, (int)len, MPI_BYTE, (int)to, tag, MPI_COMM_WORLD) == MPI_SUCCESS
             ? 0
             : JCT_EIO;
}

static int take(MPI_Status *st, void **buf, size_t *len) {
  int n = 0;
  MPI_Get_count(st, MPI_BYTE, &n);
  char *b = malloc(n > 0 ? (size_t)n : 1);
  if (!b) return JCT_ENOMEM;
  if (MPI_Recv(b, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
      MPI_SUCCESS) {
    free(b);
    return JCT_EIO;
  }
  *buf = b;
  *len = (size_t)n;
  return 1;
}

static int world_poll(uint32_t from, int tag, void **buf, size_t *len, uint32_t *from_out,
                      int *tag_out) {
  int flag = 0;
  MPI_Status st;
  int src = from == JCT__WORLD_ANY ? MPI_ANY_SOURCE : (int)from;
  if (MPI_Iprobe(src, tag < 0 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
    return JCT_EIO;
  if (!flag) return 0;
  if (from_out) *from_out = (uint32_t)st.MPI_SOURCE;
  if (tag_out) *tag_out = st.MPI_TAG;
  return take(&st, buf, len);
}

static int world_recv(uint32_t from, int tag, void **buf, size_t *len) {
  MPI_Status st;
  int src = from == JCT__WORLD_ANY ? MPI_ANY_SOURCE : (int)from;
  if (MPI_Probe(src, tag < 0 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
    return JCT_EIO;
  int rc = take(&st, buf, len);
  return rc == 1 ? 0 : rc;
}

static int world_barrier(void) {
  return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : JCT_EIO;
}

static int world_bcast(void *buf, size_t n) {
  return MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : JCT_EIO;
}

static int world_allgather(const void *mine, void *all, size_t n) {
  return MPI_Allgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD) ==
                 MPI_SUCCESS
             ? 0
             : JCT_EIO;
}

/* Rank 0's side with task i: JCT__WORLD_PINGS exchanges, the one with the
 * smallest round trip kept (NTP's minimum filter). */
static int measure(uint32_t i, jct__world_clock_t *c) {
  c->rtt_ns = UINT64_MAX;
  for (int k = 0; k < JCT__WORLD_PINGS; k++) {
    uint64_t t1 = jct_now_ns(), t2 = 0;
    if (MPI_Send(&t1, 1, MPI_UINT64_T, (int)i, TAG_PING, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Recv(&t2, 1, MPI_UINT64_T, (int)i, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
      return JCT_EIO;
    uint64_t t3 = jct_now_ns();
    if (t3 - t1 < c->rtt_ns) {
      c->rtt_ns = t3 - t1;
      c->offset_ns = (int64_t)t2 - (int64_t)(t1 + (t3 - t1) / 2);
      c->error_ns = (t3 - t1 + 1) / 2;
    }
  }
  return 0;
}

/* Rank 0's side: every task measured, then each given its host's best
 * estimate (the smallest round trip of the tasks on it; rank 0's host:
 * rank 0's own clock, offset and error 0), its own round trip kept. */
static int align_root(uint32_t size, const char (*host)[64], jct__world_clock_t *out) {
  out[0] = (jct__world_clock_t){0};
  for (uint32_t i = 1; i < size; i++)
    if (measure(i, &out[i])) return JCT_EIO;
  for (uint32_t i = 1; i < size; i++) {
    uint32_t best = i;
    for (uint32_t k = 0; k < size; k++) {
      if (strcmp(host[k], host[i])) continue;
      if (k == 0) { /* rank 0's own clock */
        best = 0;
        break;
      }
      if (out[k].rtt_ns < out[best].rtt_ns) best = k;
    }
    out[i].offset_ns = out[best].offset_ns;
    out[i].error_ns = out[best].error_ns;
  }
  for (uint32_t i = 1; i < size; i++)
    if (MPI_Send(&out[i], sizeof out[i], MPI_BYTE, (int)i, TAG_OFFSET, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      return JCT_EIO;
  return 0;
}

static int world_align(uint32_t rank, uint32_t size, const char (*host)[64],
                       jct__world_clock_t *out) {
  if (rank == 0) return align_root(size, host, out);
  /* Until rank 0 comes to this task, wait without spinning (MPI's
   * blocking receive spins): tasks that share cores would otherwise take
   * them from the two that ping-pong, and every round trip would include
   * a scheduler's time slice. */
  for (int flag = 0; !flag;) {
    if (MPI_Iprobe(0, TAG_PING, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return JCT_EIO;
    if (!flag) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  for (int k = 0; k < JCT__WORLD_PINGS; k++) {
    uint64_t t1 = 0;
    if (MPI_Recv(&t1, 1, MPI_UINT64_T, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return JCT_EIO;
    uint64_t t2 = jct_now_ns();
    if (MPI_Send(&t2, 1, MPI_UINT64_T, 0, TAG_PONG, MPI_COMM_WORLD) != MPI_SUCCESS) return JCT_EIO;
  }
  return MPI_Recv(&out[0], sizeof out[0], MPI_BYTE, 0, TAG_OFFSET, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE) == MPI_SUCCESS
             ? 0
             : JCT_EIO;
}

__attribute__((visibility("default"))) extern const struct jct__world_ops jct__world_mpi_ops;
const struct jct__world_ops jct__world_mpi_ops = {
    .init = world_init,
    .launcher = world_launcher,
    .finalize = world_finalize,
    .abort = world_abort,
    .send = world_send,
    .poll = world_poll,
    .recv = world_recv,
    .barrier = world_barrier,
    .bcast = world_bcast,
    .allgather = world_allgather,
    .align = world_align,
};
