/* Loading jctlab's modules (module.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "layout.h"
#include "module.h"

/* Where jctlab-NAME.so may be, in order: beside the executable (a build
 * tree), then in the installed modules' folder (layout.h). 0, or JCT_EIO
 * when the executable's folder is unknown or a path does not fit. */
static int module_paths(const char *name, char *beside, char *installed, size_t len) {
  char dir[PATH_MAX];
  if (jct__exe_dir(dir, sizeof dir)) return JCT_EIO;
  int w = snprintf(beside, len, "%s/jctlab-%s.so", dir, name);
  int v = snprintf(installed, len, "%s/%s/jctlab-%s.so", dir, jct__module_reldir, name);
  return w < 0 || (size_t)w >= len || v < 0 || (size_t)v >= len ? JCT_EIO : 0;
}

int jct__module_load(const char *name, const char *symbol, const void **ops, char *err,
                     size_t errlen) {
  if (*ops) return 0;
  char beside[PATH_MAX + 64], installed[PATH_MAX + 64];
  if (module_paths(name, beside, installed, sizeof beside))
    return jct__errf(err, errlen, JCT_EIO, "the %s module: cannot tell where jctlab is "
                     "(/proc/self/exe)", name);
  const char *path = access(beside, F_OK) == 0 ? beside : installed;
  if (access(path, F_OK) != 0)
    return jct__errf(err, errlen, JCT_EIO, "the %s module is missing: neither %s (beside "
                     "jctlab) nor %s (installed) exists", name, beside, installed);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  if (!h) return jct__errf(err, errlen, JCT_EIO, "the %s module: %s", name, dlerror());
  void *t = dlsym(h, symbol);
  if (!t) {
    jct__errf(err, errlen, JCT_EIO, "the %s module %s has no %s: %s", name, path, symbol,
              dlerror());
    dlclose(h);
    return JCT_EIO;
  }
  *ops = t;
  return 0;
}
