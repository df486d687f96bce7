/* Where jctlab's parts are (internal to the harness). A build tree keeps the
 * modules beside the executable (build/jctlab, build/jctlab-verbs.so) and
 * the scripts in the source tree's scripts/. `cmake --install` (CMake's
 * GNUInstallDirs) puts the executable in BINDIR, the modules in
 * LIBDIR/jctlab and the scripts in DATADIR/jctlab/scripts; jctlab finds
 * those from its own folder, by their paths relative to BINDIR as they were
 * when configuring ("../lib/jctlab", "../share/jctlab/scripts" by default),
 * so that any --prefix and a DESTDIR staging tree work alike. */
#ifndef JCT_LAYOUT_H
#define JCT_LAYOUT_H

#include <stddef.h>

/* The installed modules' folder relative to the executable's:
 * LIBDIR/jctlab seen from BINDIR, "../lib/jctlab" by default. */
extern const char jct__module_reldir[];

/* The folder of the running executable (/proc/self/exe, symbolic links
 * resolved) in dir: 0, or JCT_EIO when it cannot be read or does not fit. */
int jct__exe_dir(char *dir, size_t len);

/* The shipped capture (traces/rxe-write-send-loss1pct.pcap) that inspect,
 * schedule and replay read without a TRACE: an installed jctlab's copy
 * (DATADIR/jctlab/traces), when it is there, else the source tree's
 * (JCT_DEFAULT_TRACE, set when configuring). A static string. */
const char *jct__default_trace(void);

/* How a message names the script NAME ("setup-deps", "lab-kernel"): an
 * installed jctlab's installed script (its absolute path, when it is
 * there), else "scripts/NAME", from the top of the source tree. Returns
 * buf. */
const char *jct__script_name(const char *name, char *buf, size_t len);

#endif
