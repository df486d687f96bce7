/* A host's link cut when jctlab is built without host-side injectors
 * (JCT_HOSTFAULT off, hostcut.h): making one says so. */
#include "common/errf.h"
#include "hostcut.h"
#include "jctlab/error.h"

int jct__hostcut_new(jct__hostcut_t **out, int ifindex, const char *label, char *err,
                     size_t errlen) {
  (void)ifindex;
  *out = NULL;
  return jct__errf(err, errlen, JCT_EINVAL,
                   "%s: a flap at a host on soft-RoCE: not supported in this build (configure "
                   "with -DJCT_HOSTFAULT=ON: libbpf-dev, clang)",
                   label);
}

int jct__hostcut_set(jct__hostcut_t *c, bool cut, char *err, size_t errlen) {
  (void)c, (void)cut, (void)err, (void)errlen;
  return JCT_EINVAL;
}

void jct__hostcut_free(jct__hostcut_t *c) {
  (void)c;
}
