/* Loading jctlab's modules (module.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/errf.h"
#include "jctlab/error.h"
#include "module.h"

/* jctlab-NAME.so in the executable's folder: 0, or JCT_EIO when
 * /proc/self/exe cannot be read or the path does not fit. */
static int module_path(const char *name, char *path, size_t len) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return JCT_EIO;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return JCT_EIO;
  *slash = 0;
  int w = snprintf(path, len, "%s/jctlab-%s.so", exe, name);
  return w < 0 || (size_t)w >= len ? JCT_EIO : 0;
}

int jct__module_load(const char *name, const char *symbol, const void **ops, char *err,
                     size_t errlen) {
  if (*ops) return 0;
  char path[4200];
  if (module_path(name, path, sizeof path))
    return jct__errf(err, errlen, JCT_EIO, "the %s module: cannot tell where jctlab is "
                     "(/proc/self/exe)", name);
  if (access(path, F_OK) != 0)
    return jct__errf(err, errlen, JCT_EIO, "the %s module %s is missing: it is built with "
                     "jctlab and must be installed beside it", name, path);
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
