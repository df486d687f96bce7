/* Where jctlab's parts are (layout.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jctlab/error.h"
#include "layout.h"

/* Set when configuring (harness/CMakeLists.txt); these are the defaults. */
#ifndef JCT_MODULE_RELDIR
#define JCT_MODULE_RELDIR "../lib/jctlab"
#endif
#ifndef JCT_SCRIPT_RELDIR
#define JCT_SCRIPT_RELDIR "../share/jctlab/scripts"
#endif
#ifndef JCT_TRACE_RELDIR
#define JCT_TRACE_RELDIR "../share/jctlab/traces"
#endif
#define JCT_SHIPPED_TRACE "rxe-write-send-loss1pct.pcap"
#ifndef JCT_DEFAULT_TRACE
#define JCT_DEFAULT_TRACE "traces/" JCT_SHIPPED_TRACE
#endif

const char jct__module_reldir[] = JCT_MODULE_RELDIR;

int jct__exe_dir(char *dir, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return JCT_EIO;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return JCT_EIO;
  *slash = 0;
  int w = snprintf(dir, len, "%s", exe);
  return w < 0 || (size_t)w >= len ? JCT_EIO : 0;
}

const char *jct__default_trace(void) {
  static char installed[PATH_MAX];
  char dir[PATH_MAX], path[PATH_MAX + 256];
  if (!jct__exe_dir(dir, sizeof dir)) {
    int w = snprintf(path, sizeof path, "%s/" JCT_TRACE_RELDIR "/" JCT_SHIPPED_TRACE, dir);
    if (w > 0 && (size_t)w < sizeof path && access(path, R_OK) == 0 && realpath(path, installed))
      return installed;
  }
  return JCT_DEFAULT_TRACE;
}

const char *jct__script_name(const char *name, char *buf, size_t len) {
  char dir[PATH_MAX], path[PATH_MAX + 256], real[PATH_MAX];
  if (!jct__exe_dir(dir, sizeof dir)) {
    int w = snprintf(path, sizeof path, "%s/" JCT_SCRIPT_RELDIR "/%s", dir, name);
    if (w > 0 && (size_t)w < sizeof path && access(path, X_OK) == 0 && realpath(path, real)) {
      snprintf(buf, len, "%s", real);
      return buf;
    }
  }
  snprintf(buf, len, "scripts/%s", name);
  return buf;
}
