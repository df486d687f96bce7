/* jctlab's modules (internal to the harness): the parts that need a heavy
 * library of their own -- the verbs transport (rdma-core: libibverbs,
 * librdmacm, libnl) and the MPI world of `jctlab rank` (Open MPI: libmpi,
 * open-rte, open-pal, hwloc, libevent) -- are shared objects that jctlab
 * loads (dlopen) when a command needs them, not libraries the executable
 * links. Every other command starts without them: the dynamic loader's
 * work for those 19 libraries was most of what `jctlab inspect` spent
 * starting (bench/inspect's empty capture).
 *
 * A module is found by absolute path from the running executable's folder
 * (/proc/self/exe, symbolic links resolved), never through the library
 * search path: beside it first (build/jctlab loads build/jctlab-verbs.so),
 * then in the installed modules' folder (layout.h: PREFIX/bin/jctlab loads
 * PREFIX/bin/../lib/jctlab/jctlab-verbs.so). It
 * exports one const ops table (STYLE.md: DPDK's ports) by a known name,
 * and its own calls into jctlab (the executor, the clock) resolve against
 * the executable's exported symbols, so it shares jctlab's state (the
 * clock's idle-time offset) rather than carrying a copy. A module stays
 * loaded until the process ends (RTLD_NODELETE), and its libraries join
 * the global scope (RTLD_GLOBAL), as Open MPI's own plugins need libmpi's
 * symbols there. */
#ifndef JCT_MODULE_H
#define JCT_MODULE_H

#include <stddef.h>

/* Load jctlab-NAME.so (beside the executable, else installed) and put its
 * table `symbol` in *ops; when *ops is set already (loaded before), return
 * 0 at once. Errors (*ops untouched): JCT_EIO, err one line naming the
 * module: "is missing" and both paths tried, or what dlopen or dlsym said
 * (an undefined symbol: the module and the executable come from different
 * builds). */
int jct__module_load(const char *name, const char *symbol, const void **ops, char *err,
                     size_t errlen);

#endif
