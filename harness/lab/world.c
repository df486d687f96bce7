/* The MPI world as jctlab calls it (world.h): each function forwards to
 * jctlab-mpi.so's table, loaded by jct__world_load (harness/base/module.h),
 * so that jctlab links no Open MPI library of its own. `jctlab rank` loads
 * it before anything else; before that, or without it, the calls fail
 * (JCT_EIO) and abort ends the process with its status. */
#include <stdlib.h>

#include "harness/base/module.h"
#include "jctlab/error.h"
#include "world.h"

/* Under LeakSanitizer (the sanitizer build): what Open MPI, PMIx and hwloc
 * allocate while starting and ending, and what their plugins (mca_*.so,
 * kept loaded so that a leak's stack names them) never free, is theirs,
 * not jctlab's; the rest stays checked. The runtime asks the executable
 * for these, so they are here, not in the module. */
#if defined(__SANITIZE_ADDRESS__)
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) {
  return "print_suppressions=0"; /* bad input stays one line */
}
const char *__lsan_default_suppressions(void) {
  return "leak:mca_\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libmpi.so\n"
         "leak:libpmix.so\nleak:libhwloc.so\nleak:libevent\n";
}
#endif

static const struct jct__world_ops *ops;

int jct__world_load(char *err, size_t errlen) {
  const void *t = ops;
  int rc = jct__module_load(JCT__WORLD_MODULE, JCT__WORLD_OPS, &t, err, errlen);
  ops = t;
  return rc;
}

int jct__world_init(int *argc, char ***argv, uint32_t *rank, uint32_t *size, char *err,
                    size_t errlen) {
  int rc = jct__world_load(err, errlen);
  return rc ? rc : ops->init(argc, argv, rank, size, err, errlen);
}

const char *jct__world_launcher(void) {
  return ops ? ops->launcher() : "mpi";
}

void jct__world_finalize(void) {
  if (ops) ops->finalize();
}

void jct__world_abort(int status) {
  if (ops) ops->abort(status);
  exit(status);
}

int jct__world_send(uint32_t to, int tag, const void *buf, size_t len) {
  return ops ? ops->send(to, tag, buf, len) : JCT_EIO;
}

int jct__world_poll(uint32_t from, int tag, void **buf, size_t *len, uint32_t *from_out,
                    int *tag_out) {
  return ops ? ops->poll(from, tag, buf, len, from_out, tag_out) : JCT_EIO;
}

int jct__world_recv(uint32_t from, int tag, void **buf, size_t *len) {
  return ops ? ops->recv(from, tag, buf, len) : JCT_EIO;
}

int jct__world_barrier(void) {
  return ops ? ops->barrier() : JCT_EIO;
}

int jct__world_bcast(void *buf, size_t n) {
  return ops ? ops->bcast(buf, n) : JCT_EIO;
}

int jct__world_allgather(const void *mine, void *all, size_t n) {
  return ops ? ops->allgather(mine, all, n) : JCT_EIO;
}

int jct__world_align(uint32_t rank, uint32_t size, const char (*host)[64],
                     jct__world_clock_t *out) {
  return ops ? ops->align(rank, size, host, out) : JCT_EIO;
}
